"""Shared options for the reliability suite: the fake key (``tests.support.fakekey``, set
for every test here) and fast retries against FakeServer."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial

import pytest
from IPython.core.interactiveshell import InteractiveShell

from swarmkit.magics import SwarmMagics, swarm_magics
from swarmkit.testing import FakeServer, swarm_shell
from tests.support.fakekey import QUICK_RETRIES, Options, run_options


@pytest.fixture(autouse=True)
def _fake_key(fake_key: str) -> None:
    """Every reliability test runs with ``$SWARMKIT_TEST_KEY`` set to the fake key."""


@pytest.fixture
def options() -> Options:
    """``options(server, **extra)``: run options pointing at ``server`` with quick retries
    and a 5-second call timeout."""
    return partial(run_options, **QUICK_RETRIES, call_timeout=5.0)


@pytest.fixture(scope="module")
def shell() -> InteractiveShell:
    """A real IPython shell with ``%load_ext swarmkit`` done (in-memory history)."""
    return swarm_shell()


@pytest.fixture
def magics(shell: InteractiveShell) -> Iterator[SwarmMagics]:
    """The shell's swarm magics, with no session defaults before or after the test."""
    instance = swarm_magics(shell)
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
