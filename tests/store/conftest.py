"""The store tests' FakeServer: one of each test's own, so its request log (what reached
the server, and so what the cache or a replay saved) is that test's alone."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from swarmkit.testing import FakeServer


@pytest.fixture
def server() -> Iterator[FakeServer]:
    """A FakeServer for this test (it stops after a minute at the latest)."""
    with FakeServer(lifetime=60) as fake:
        yield fake
