"""Running notebooks the way CI checks them: ``pytest --nbval``, offline and with no key.

``offline_env()`` is the environment for a replaying kernel: no key variables, no
``SWARMKIT_*`` defaults, and the default endpoint on a closed local port, so a notebook
that tried to reach a model would fail rather than pass by luck. ``run_nbval`` runs
nbval on notebooks in a subprocess with that environment.

Test-only (not shipped in swarmkit): the tests, ``notebooks/conftest.py`` and
``notebooks/record.py`` use it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

import swarmkit
from swarmkit.export.notebookfile import CLOSED_BASE_URL

__all__ = ["CLOSED_BASE_URL", "offline_env", "package_root", "run_nbval"]


def package_root() -> Path:
    """The folder that holds the ``swarmkit`` package this process imported."""
    return Path(swarmkit.__file__).resolve().parent.parent


def _is_key_variable(name: str) -> bool:
    upper = name.upper()
    return upper.endswith(("_API_KEY", "_KEY", "_TOKEN")) or upper.startswith("SWARMKIT_")


def offline_env(
    base: Mapping[str, str] | None = None, *, pythonpath: Iterable[str | os.PathLike[str]] = ()
) -> dict[str, str]:
    """``base`` (default os.environ) without keys or ``SWARMKIT_*``, endpoint closed."""
    env = {k: v for k, v in (os.environ if base is None else base).items()
           if not _is_key_variable(k)}
    env["OPENAI_BASE_URL"] = CLOSED_BASE_URL
    paths = [str(p) for p in pythonpath]
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    if paths:
        env["PYTHONPATH"] = os.pathsep.join(paths)
    return env


def run_nbval(
    *notebooks: str | os.PathLike[str],
    cwd: str | os.PathLike[str],
    env: Mapping[str, str] | None = None,
    timeout: float = 600.0,
    python: str | os.PathLike[str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """``python -m pytest --nbval --nbval-current-env NOTEBOOKS`` in ``cwd``, captured.

    ``env`` defaults to :func:`offline_env` with this swarmkit importable. Warnings are
    errors, as in the project's own test run.
    """
    command = [
        str(python or sys.executable), "-m", "pytest", "--nbval", "--nbval-current-env",
        "-p", "no:cacheprovider", "-W", "error", "-q", "--rootdir", str(cwd),
        *[str(n) for n in notebooks],
    ]
    if env is None:
        env = offline_env(pythonpath=[package_root()])
    return subprocess.run(command, cwd=cwd, env=dict(env), capture_output=True, text=True,
                          timeout=timeout, check=False)
