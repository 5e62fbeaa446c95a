"""A damaged history blocks no run: ``run_sync`` goes ahead with the history off and
one warning line that says how to move the file aside, and never touches the file.
(The magic: ``tests/magics/test_damaged_history.py``; ``jswarm history --reset``:
``tests/cli/test_history_reset.py``.)"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

import swarmkit
from swarmkit.testing import FakeServer
from tests.support.fakekey import run_options
from tests.support.histories import GARBAGE, damaged_history

pytestmark = pytest.mark.usefixtures("fake_key")

@pytest.fixture
def damaged(tmp_path: Path) -> Path:
    return damaged_history(tmp_path)


def test_run_sync_goes_ahead_with_the_history_off_and_one_warning(
    damaged: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    with FakeServer(plan_tasks=2) as server, caplog.at_level(logging.WARNING, "swarmkit"):
        run = swarmkit.run_sync("task", **run_options(server, history_path=str(damaged),
                                                      cache=True))
    assert run.status == "completed" and run.config["history"] is False
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert warnings == [
        f"swarmkit: the history is off for this run: history database {damaged} is corrupt "
        "(file is not a database); move it aside with swarmkit.store.History.reset("
        f"{str(damaged)!r}) and a new one will be created"]
    assert damaged.read_bytes() == GARBAGE  # never touched
