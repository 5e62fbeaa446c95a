"""A damaged history blocks no cell: ``%%swarm`` goes ahead with the history off and
one warning line, and never touches the file."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

from swarmkit.magics import SwarmMagics
from swarmkit.testing import FakeServer
from tests.support.fakekey import swarm_line
from tests.support.histories import GARBAGE, damaged_history

pytestmark = pytest.mark.usefixtures("fake_key")

@pytest.fixture
def damaged(tmp_path: Path) -> Path:
    return damaged_history(tmp_path)


def test_a_cell_goes_ahead_with_the_history_off(
    shell: InteractiveShell, magics: SwarmMagics, damaged: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    shell.run_line_magic("swarm", f"config history_path={damaged}")
    with (FakeServer(plan_tasks=2) as server, capture_output(),
          caplog.at_level(logging.WARNING, "swarmkit")):
        shell.run_cell_magic("swarm", swarm_line(server), "task")
    run = shell.user_ns["_swarm"]
    assert run.status == "completed" and run.config["history"] is False
    # One line (in a kernel, on the cell's stderr): the run is not kept, and the fix.
    (warning,) = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert warning.startswith("swarmkit: the history is off for this run: history "
                              f"database {damaged} is corrupt")
    assert damaged.read_bytes() == GARBAGE
