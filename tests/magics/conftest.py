"""The shell and its swarm magics, shared by the magics tests (a module may define its own)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from IPython.core.interactiveshell import InteractiveShell

from swarmkit.magics import SwarmMagics, swarm_magics
from swarmkit.testing import FakeServer, swarm_shell


@pytest.fixture(scope="module")
def shell() -> InteractiveShell:
    """A real IPython shell with ``%load_ext swarmkit`` done (in-memory history)."""
    return swarm_shell()


@pytest.fixture
def magics(shell: InteractiveShell) -> Iterator[SwarmMagics]:
    """The shell's swarm magics: no session defaults and no last run before the test,
    no session defaults after it."""
    instance = swarm_magics(shell)
    assert isinstance(instance, SwarmMagics)
    instance.session_options = {}
    instance.last_run = None
    yield instance
    instance.session_options = {}


@pytest.fixture
def server() -> Iterator[FakeServer]:
    """A FakeServer of the test's own (its requests are the test's alone)."""
    with FakeServer(lifetime=120) as fake:
        yield fake
