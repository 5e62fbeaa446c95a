"""Shared options for the reliability suite: a fake key and fast retries against FakeServer."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from IPython.core.interactiveshell import InteractiveShell

from swarmkit.magics import SwarmMagics
from swarmkit.testing import FakeServer, swarm_shell

KEY_ENV = "SWARMKIT_RELIABILITY_KEY"
KEY = "sk-swarmkit-CANARY-reliability-7f3a9c"


@pytest.fixture(autouse=True)
def _fake_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, KEY)


Options = Callable[..., dict[str, Any]]


@pytest.fixture
def options() -> Options:
    """``options(server, **extra)``: run options pointing at ``server`` with quick retries."""

    def build(server: FakeServer, **extra: Any) -> dict[str, Any]:
        base: dict[str, Any] = {
            "model": "gpt-4.1-mini",
            "base_url": server.base_url,
            "api_key_env": KEY_ENV,
            "backoff_base": 0.001,
            "backoff_max": 0.05,
            "call_timeout": 5.0,
        }
        base.update(extra)
        return base

    return build


@pytest.fixture(scope="module")
def shell() -> InteractiveShell:
    """A real IPython shell with ``%load_ext swarmkit`` done (in-memory history)."""
    return swarm_shell()


@pytest.fixture
def magics(shell: InteractiveShell) -> Iterator[SwarmMagics]:
    """The shell's swarm magics, with no session defaults before or after the test."""
    instance = shell.magics_manager.registry["SwarmMagics"]
    assert isinstance(instance, SwarmMagics)
    instance.session_options = {}
    yield instance
    instance.session_options = {}


@pytest.fixture(scope="module")
def server() -> Iterator[FakeServer]:
    """One plain FakeServer for a test module (faults are added and cleared per test)."""
    with FakeServer(lifetime=600) as fake:
        yield fake


@pytest.fixture
def fresh(server: FakeServer) -> FakeServer:
    """``server`` with no requests recorded and no faults yet."""
    server.clear()
    return server


OneLine = Callable[[str], None]


@pytest.fixture
def one_line() -> OneLine:
    """``one_line(message)`` asserts what a user sees: one short line, no traceback."""

    def check(message: str) -> None:
        assert message and "\n" not in message.strip() and len(message) < 400
        assert "Traceback" not in message

    return check
