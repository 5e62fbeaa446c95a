"""Binder: ``binder/requirements.txt`` alone installs a working swarmkit that replays the
quickstart. A fresh virtual environment gets exactly what repo2docker would install
(pip may use its cache), then nbval runs the quickstart in it, offline, with no key.

The environment is made with the Python running the tests, which is the one
``binder/runtime.txt`` pins when the suite runs there, and another supported Python
elsewhere: the pins must install and work on every Python the project supports, so a
change of Binder's Python is a one-line edit.
"""

from __future__ import annotations

import shutil
import subprocess
import tomllib
import venv
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet

from tests.support.notebooks import offline_env, run_nbval

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
QUICKSTART = "notebooks/01-quickstart.ipynb"
INSTALL_TIMEOUT = 900


def _checkout_copy(target: Path) -> Path:
    """What a clone holds of the project (the build writes into its source folder)."""
    target.mkdir(parents=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, target / name)
    for folder in ("swarmkit", "binder"):
        shutil.copytree(ROOT / folder, target / folder, ignore=ignore)
    (target / "notebooks").mkdir()
    for path in (ROOT / "notebooks").iterdir():
        if path.suffix == ".ipynb" or path.name.endswith(".swarm.json"):
            shutil.copy2(path, target / "notebooks" / path.name)
    return target


def test_binder_requirements_install_a_swarmkit_that_replays_the_quickstart(
    tmp_path: Path,
) -> None:
    runtime = (ROOT / "binder" / "runtime.txt").read_text().strip()
    assert runtime.startswith("python-"), "repo2docker reads python-X.Y"
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    supported = SpecifierSet(pyproject["project"]["requires-python"])
    assert runtime.removeprefix("python-") in supported, "Binder runs a supported Python"
    requirements = (ROOT / "binder" / "requirements.txt").read_text().splitlines()
    wanted = [line.split("#")[0].strip() for line in requirements]
    wanted = [line for line in wanted if line]
    assert "." in wanted
    assert all(line == "." or "==" in line for line in wanted), "every requirement is pinned"
    assert not any(line.lower().startswith("llama") for line in wanted)

    project = _checkout_copy(tmp_path / "project")
    environment = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(environment)
    python = environment / "bin" / "python"
    env = offline_env()
    env.pop("PYTHONPATH", None)  # only what the requirements installed
    install = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check",
         "-r", "binder/requirements.txt"],
        cwd=project, env=env, capture_output=True, text=True, timeout=INSTALL_TIMEOUT,
        check=False,
    )
    assert install.returncode == 0, install.stderr[-3000:]

    where = subprocess.run(
        [str(python), "-c", "import swarmkit; print(swarmkit.__file__)"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=True,
    )
    assert str(environment) in where.stdout  # installed, not found in the checkout
    assert subprocess.run([str(python), "-m", "pip", "show", "-q", "llama-cpp-python"],
                          env=env, capture_output=True, timeout=120,
                          check=False).returncode != 0

    checked = run_nbval(QUICKSTART, cwd=project, env=env, python=python)
    assert checked.returncode == 0, checked.stdout[-3000:] + checked.stderr[-2000:]
    assert " passed" in checked.stdout and "failed" not in checked.stdout
