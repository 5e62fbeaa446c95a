"""The package's lazy re-exports: every public name resolves, and importing stays cheap."""

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


def test_run_stays_the_function_when_the_run_module_loads_first() -> None:
    out = python(
        "import swarmkit.run, swarmkit, json\n"
        "from swarmkit.run import Run\n"
        "print(json.dumps([callable(swarmkit.run), swarmkit.run.__module__,"
        " swarmkit.Run is Run]))"
    )
    assert json.loads(out) == [True, "swarmkit.api", True]


def test_import_swarmkit_loads_no_submodule() -> None:
    out = python(
        "import json, sys, swarmkit\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('swarmkit'))))"
    )
    assert json.loads(out) == ["swarmkit"]
