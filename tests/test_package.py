"""The public surface: every name resolves, the list is pinned, importing stays light."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from importlib.metadata import packages_distributions, version
from pathlib import Path
from typing import Any

import pytest

import swarmkit

ROOT = Path(__file__).resolve().parent.parent


def python(code: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, check=True, cwd=ROOT, timeout=60)
    return done.stdout.strip()


def test_every_public_name_resolves() -> None:
    for name in swarmkit.__all__:
        assert getattr(swarmkit, name) is not None, name
    assert set(swarmkit.__all__) <= set(dir(swarmkit))


def test_unknown_names_raise_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        swarmkit.nope  # noqa: B018


def test_no_module_is_named_like_a_public_function() -> None:
    import pkgutil

    modules = {m.name.rsplit(".", 1)[-1] for m in pkgutil.walk_packages(swarmkit.__path__)}
    functions = {name for name in swarmkit.__all__ if callable(getattr(swarmkit, name))
                 and not isinstance(getattr(swarmkit, name), type)}
    assert not modules & functions
    assert swarmkit.run.__module__ == "swarmkit.api.entry"


def test_import_swarmkit_leaves_the_heavy_and_the_notebook_parts_unloaded() -> None:
    # A script that runs swarms must not pay for IPython, ipywidgets or the magics; openai
    # loads with the first call (swarmkit.provider imports it there).
    out = python(
        "import json, sys, swarmkit\n"
        "names = ('IPython', 'ipywidgets', 'openai', 'nbformat', 'swarmkit.magics',"
        " 'swarmkit.display.widget')\n"
        "print(json.dumps([n for n in names if n in sys.modules]))"
    )
    assert json.loads(out) == []


# The public surface, pinned: adding or removing a name is a decision, made here too.
PUBLIC = [
    "BudgetExceeded", "BudgetUpdated", "CallFinished", "CallRecord", "CallRetried",
    "CallStarted", "CassetteError", "ChatRequest", "ChatResponse", "Check", "Comparison",
    "ConcurrencyChanged",
    "ConfigError", "Event", "ExportError", "LocalModelError", "MCPError", "ModelPrice",
    "PlanError", "PlanReady", "PriceTable", "ProviderError", "RateLimitWait", "RecordError",
    "ReducerDelta", "ReducerStarted", "ReplayMiss", "RoleConfig", "Run", "RunCancelled",
    "RunFinished", "RunRecord", "RunStarted", "Sink", "StoreError", "SwarmConfig", "SwarmError",
    "Tool", "ToolCallFinished", "ToolCallRecord", "ToolError", "Usage", "WorkerFinished",
    "WorkerRecord", "WorkerSplit", "WorkerStarted", "__version__", "compare", "compare_sync",
    "load_ipython_extension", "load_run", "run",
    "run_sync", "tool",
]


def test_the_public_names_are_pinned() -> None:
    assert swarmkit.__all__ == PUBLIC


def test_the_version_is_the_packages() -> None:
    # The distribution that installed the import package (``jupyter-swarmkit``; an older
    # editable install of this checkout may still carry the earlier name).
    names = set(packages_distributions()["swarmkit"])
    distribution = "jupyter-swarmkit" if "jupyter-swarmkit" in names else names.pop()
    assert swarmkit.__version__ == version(distribution)


def _pyproject() -> dict[str, Any]:
    import tomllib

    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_the_distribution_is_jupyter_swarmkit_and_the_command_jswarm() -> None:
    # "swarmkit" on PyPI is another project, and swarmkit-runtime / swarmkit-webui ship
    # a `swarmkit` command: neither name may be ours.
    project = _pyproject()["project"]
    assert project["name"] == "jupyter-swarmkit"
    assert project["scripts"] == {"jswarm": "swarmkit.cli:main"}
    for extra, requirements in project["optional-dependencies"].items():
        for requirement in requirements:
            assert not requirement.startswith("swarmkit["), (extra, requirement)


def test_python_m_swarmkit_is_the_jswarm_command() -> None:
    done = subprocess.run([sys.executable, "-m", "swarmkit", "--help"], capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, check=False,
                          cwd=ROOT, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: jswarm ")


# The other project's name after "pip install", bare or with extras, in any quotes.
_WRONG_INSTALL = re.compile(r"""pip install(?: -[-\w]+)*\s+["']?swarmkit(?:\[|["'\s]|$)""")


def test_no_file_tells_users_to_install_the_other_projects_swarmkit() -> None:
    tracked = subprocess.run(["git", "ls-files"], capture_output=True, text=True, cwd=ROOT,
                             check=False, timeout=60)
    if tracked.returncode != 0:
        pytest.skip("not a git checkout")
    wrong = []
    for name in tracked.stdout.splitlines():
        path = ROOT / name
        if path.suffix not in {".py", ".md", ".txt", ".toml", ".ipynb",
                                                    ".cfg", ".yml", ".yaml", ""}:
            continue
        try:
            text = path.read_text(encoding="utf-8").replace('\\"', '"')
        except (OSError, UnicodeDecodeError):
            continue
        wrong += [f"{name}: {match.group(0)}" for match in _WRONG_INSTALL.finditer(text)]
    assert wrong == []
