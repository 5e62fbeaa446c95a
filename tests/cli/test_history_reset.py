"""A damaged history in a terminal: ``jswarm run`` goes ahead with the history off and
one warning line naming ``jswarm history --reset``, which renames the file (never
deletes it), and the next run starts a new history."""

from __future__ import annotations

from pathlib import Path

import pytest

import swarmkit
from swarmkit.store import History
from swarmkit.testing import FakeServer
from tests.cli.test_cli import common, swarmkit_cli
from tests.support.histories import GARBAGE, damaged_history


@pytest.fixture
def damaged(tmp_path: Path) -> Path:
    return damaged_history(tmp_path)


def test_jswarm_runs_with_the_history_off_then_history_reset_moves_it_aside(
    damaged: Path,
) -> None:
    where = ["--history-path", str(damaged)]
    with FakeServer(plan_tasks=2) as server:
        ran = swarmkit_cli("run", "task", *common(server), *where)
        listed = swarmkit_cli("history", *where)
        reset = swarmkit_cli("history", "--reset", *where)
        again = swarmkit_cli("run", "task", *common(server), *where, "--json")
    assert ran.returncode == 0, ran.stderr
    fix = f"jswarm history --reset --history-path {damaged}"
    assert ran.stderr.splitlines()[0] == (
        f"swarmkit: the history is off for this run: history database {damaged} is corrupt "
        f"(file is not a database); move it aside with {fix} and a new one will be created")
    assert listed.returncode == 1 and listed.stderr.splitlines() == [
        f"jswarm: StoreError: history database {damaged} is corrupt (file is not a database); "
        f"move it aside with {fix} and a new one will be created"]
    moved = damaged.with_name("history.db.corrupt-1")
    assert reset.returncode == 0 and reset.stdout == (
        f"moved {damaged} aside to {moved}; the next run starts a new history\n")
    assert moved.read_bytes() == GARBAGE  # renamed, not deleted
    assert again.returncode == 0 and "history is off" not in again.stderr
    run_id = swarmkit.Run.from_json(again.stdout).run_id
    with History(damaged) as history:
        assert history.load_run(run_id).status == "completed"


def test_history_reset_with_no_file_says_so(tmp_path: Path) -> None:
    done = swarmkit_cli("history", "--reset", "--history-path", str(tmp_path / "none.db"))
    assert done.returncode == 0
    assert done.stdout == f"no history at {tmp_path / 'none.db'}; nothing to move\n"
