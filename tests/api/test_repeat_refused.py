"""``repeat=`` belongs to comparisons: a single run refuses it in one line, before any
call, and ``repeat=1`` is the single run it always was."""

from __future__ import annotations

import pytest

import swarmkit
from swarmkit.errors import ConfigError
from swarmkit.testing import FakeServer
from tests.support.fakekey import run_options

pytestmark = pytest.mark.usefixtures("fake_key")


def test_a_single_run_refuses_repeat_before_any_call() -> None:
    with FakeServer() as server:
        with pytest.raises(ConfigError, match=r"^run: repeat=3 repeats the variants of a "
                                              r"comparison; use swarmkit.compare") as caught:
            swarmkit.run_sync("Summarise", repeat=3, **run_options(server, history=False))
        assert server.requests == []
    assert "\n" not in str(caught.value)


def test_repeat_one_is_a_plain_run() -> None:
    with FakeServer() as server:
        run = swarmkit.run_sync("Summarise", repeat=1, **run_options(server, history=False))
    assert run.status == "completed" and "repeat" not in run.config
