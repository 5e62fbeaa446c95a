"""``swarmkit.testing``'s public surface: what it exports, and what stays in tests/support."""

from __future__ import annotations

import importlib
import importlib.util

import pytest

import swarmkit.testing

PUBLIC = [
    "FakeReply", "FakeRequest", "FakeServer", "Fault", "FaultKind", "FaultRule", "Handler",
    "RecordedRequest", "ToolCallSpec", "default_reply", "estimate_tokens", "role_of_step",
    "run_problems", "swarm_shell", "synthetic_events", "synthetic_run", "wait_until",
    "offers_split", "split_everywhere", "split_reply", "split_script",
]


def test_all_is_pinned_and_every_name_resolves() -> None:
    assert sorted(swarmkit.testing.__all__) == sorted(PUBLIC)
    for name in PUBLIC:
        assert getattr(swarmkit.testing, name) is not None, name


def test_every_public_name_is_documented_in_the_package_docstring() -> None:
    doc = swarmkit.testing.__doc__ or ""
    for name in ("FakeServer", "swarm_shell", "run_problems", "synthetic_events",
                 "synthetic_run", "wait_until", "Fault", "FaultRule", "FakeReply",
                 "split_script", "split_everywhere", "split_reply", "offers_split"):
        assert f"``{name}" in doc, name


@pytest.mark.parametrize("module", ["kernel", "notebooks", "limits", "responses"])
def test_test_only_drivers_are_not_shipped(module: str) -> None:
    assert importlib.util.find_spec(f"swarmkit.testing.{module}") is None


def test_test_only_drivers_live_in_tests_support() -> None:
    kernel = importlib.import_module("tests.support.kernel")
    notebooks = importlib.import_module("tests.support.notebooks")
    assert callable(kernel.KernelSession) and callable(notebooks.run_nbval)
    env = notebooks.offline_env({"OPENAI_API_KEY": "sk-x", "SWARMKIT_MODEL": "m", "HOME": "/h"})
    assert env == {"HOME": "/h", "OPENAI_BASE_URL": notebooks.CLOSED_BASE_URL}
