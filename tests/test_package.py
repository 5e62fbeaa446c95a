"""The public surface: every name resolves, the list is pinned, importing stays light."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

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
    assert swarmkit.run.__module__ == "swarmkit.api"


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
    "CallStarted", "CassetteError", "ChatRequest", "ChatResponse", "Comparison",
    "ConcurrencyChanged",
    "ConfigError", "Event", "ExportError", "LocalModelError", "MCPError", "ModelPrice",
    "PlanError", "PlanReady", "PriceTable", "ProviderError", "RateLimitWait", "RecordError",
    "ReducerDelta", "ReducerStarted", "ReplayMiss", "RoleConfig", "Run", "RunCancelled",
    "RunFinished", "RunRecord", "RunStarted", "Sink", "StoreError", "SwarmConfig", "SwarmError",
    "Tool", "ToolCallFinished", "ToolCallRecord", "ToolError", "Usage", "WorkerFinished",
    "WorkerRecord", "WorkerStarted", "__version__", "compare", "compare_sync",
    "load_ipython_extension", "load_run", "run",
    "run_sync", "tool",
]


def test_the_public_names_are_pinned() -> None:
    assert swarmkit.__all__ == PUBLIC


def test_the_version_is_the_packages() -> None:
    from importlib.metadata import version

    assert swarmkit.__version__ == version("swarmkit")
