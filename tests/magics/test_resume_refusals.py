"""What ``%swarm resume`` refuses, in a real IPython shell against the FakeServer: a dry-run
(stored ``planned``, never turned into a paid run) and a cell whose task is not the run's.
Each refusal is shown to make no request at all (the FakeServer's request log)."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

from swarmkit.display import RunListing
from swarmkit.magics import SwarmMagics
from swarmkit.store import History, default_history_path
from swarmkit.testing import FakeServer, FaultRule
from swarmkit.testing.faults import Fault
from tests.support.fakekey import swarm_line

pytestmark = pytest.mark.usefixtures("fake_key")

line_for = partial(swarm_line, flags="--workers 3")



def history_path() -> Path:
    return default_history_path()  # the test's own ($SWARMKIT_HISTORY, see tests/conftest.py)


def dry_run(shell: InteractiveShell, server: FakeServer, task: str, extra: str = "") -> str:
    """A ``--dry-run`` cell; the id of the run it stored."""
    with capture_output():
        shell.run_cell_magic("swarm", line_for(server, f"--dry-run {extra}"), task)
    with History(history_path()) as history:
        return history.recent(1)[0].run_id


def test_a_dry_run_is_stored_as_planned_and_shown_so(
    shell: InteractiveShell, magics: SwarmMagics, server: FakeServer
) -> None:
    run_id = dry_run(shell, server, "Name three capitals")
    with History(history_path()) as history:
        [summary] = history.recent(5)
        stored = history.load_run(run_id)
    assert summary.status == "planned" and stored.status == "planned"
    assert len(stored.plan) == 3 and stored.workers == []
    assert [c.role for c in stored.calls] == ["planner"]  # its one call, kept
    listing = shell.run_line_magic("swarm", "history 5")
    assert isinstance(listing, RunListing)
    assert [(r.run_id, r.status) for r in listing.runs] == [(run_id, "planned")]
    assert " planned " in listing.text()
    with capture_output() as captured:
        shell.run_line_magic("swarm", f"show {run_id}")
    assert f"run {run_id} · planned · 0 workers" in captured.outputs[0].data["text/plain"]


def test_a_dry_run_leaves_no_cassette_to_replay_or_export(
    shell: InteractiveShell, magics: SwarmMagics, server: FakeServer, tmp_path: Path
) -> None:
    cassette = tmp_path / "plan.swarm.json"
    run_id = dry_run(shell, server, "Name three capitals", f"--record {cassette}")
    assert not cassette.exists()  # a plan holds nothing a replay could show
    with History(history_path()) as history:
        assert history.cassette(run_id) is None


def test_resume_of_a_dry_run_refuses_in_one_line_and_makes_no_request(
    shell: InteractiveShell, magics: SwarmMagics, server: FakeServer
) -> None:
    run_id = dry_run(shell, server, "Name three capitals")
    server.clear()
    with pytest.raises(UsageError) as caught:
        shell.run_line_magic("swarm", f"resume {run_id[:6]} --base-url {server.base_url}")
    assert str(caught.value) == (
        f"%swarm resume: run {run_id} is a dry-run (planned, not run); to make its calls: "
        f"%%swarm --plan-from {run_id}")
    assert server.requests == []
    with History(history_path()) as history:
        assert [s.status for s in history.recent(5)] == ["planned"]  # nothing new was run


def test_bare_resume_skips_a_dry_run_and_refuses_when_only_dry_runs_are_left(
    shell: InteractiveShell, magics: SwarmMagics, server: FakeServer
) -> None:
    dry_run(shell, server, "Name three capitals")
    server.clear()
    with pytest.raises(UsageError, match=r"^%swarm resume: every recent run in .* completed "
                       r"\(or was a dry-run\); name the run to continue"):
        shell.run_line_magic("swarm", f"resume --base-url {server.base_url}")
    assert server.requests == []


def test_bare_resume_continues_the_unfinished_run_before_a_later_dry_run(
    shell: InteractiveShell, magics: SwarmMagics, server: FakeServer
) -> None:
    server.add_fault(FaultRule(Fault.status(400), step="worker-2"))
    with capture_output():
        shell.run_cell_magic("swarm", line_for(server),
                             "Name three rivers")
    partial = shell.user_ns["_swarm"]
    assert partial.status == "partial"
    server.clear_faults()
    dry_run(shell, server, "Name three capitals")
    server.clear()
    with capture_output() as captured:
        shell.run_line_magic("swarm", f"resume --base-url {server.base_url}")
    assert captured.stdout.startswith(
        f"%swarm resume: run {partial.run_id} (partial, 3 sub-tasks)")
    resumed = shell.user_ns["_swarm"]
    assert resumed.status == "completed" and resumed.task == "Name three rivers"
    # Only the failed worker and the reducer were asked: nothing of the dry-run.
    assert server.counts_by_step() == {"worker-2": 1, "reducer": 1}


def test_dry_run_compare_variants_are_stored_planned_not_running(
    shell: InteractiveShell, magics: SwarmMagics, server: FakeServer
) -> None:
    with capture_output():
        shell.run_cell_magic("swarm", line_for(
            server, "--dry-run --compare planner_model=gpt-4.1-mini,gpt-4.1"), "Name two ports")
    assert server.counts_by_step() == {"planner": 2}
    with History(history_path()) as history:
        assert [s.status for s in history.recent(5)] == ["planned", "planned"]
    server.clear()
    with pytest.raises(UsageError, match=r"every recent run in .* \(or was a dry-run\)"):
        shell.run_line_magic("swarm", f"resume --base-url {server.base_url}")
    assert server.requests == []


def test_plan_from_a_dry_run_is_the_explicit_step_that_makes_its_calls(
    shell: InteractiveShell, magics: SwarmMagics, server: FakeServer
) -> None:
    run_id = dry_run(shell, server, "Name three capitals")
    server.clear()
    with capture_output():
        shell.run_cell_magic("swarm", line_for(server, f"--plan-from {run_id}"),
                             "Name three capitals")
    run = shell.user_ns["_swarm"]
    assert run.status == "completed" and len(run.workers) == 3
    assert server.counts_by_step() == {"worker-1": 1, "worker-2": 1, "worker-3": 1,
                                       "reducer": 1}
    with History(history_path()) as history:
        assert history.load_run(run_id).status == "planned"  # the dry-run stays one


def test_a_resume_flag_on_a_cell_points_at_resume_and_makes_no_request(
    shell: InteractiveShell, magics: SwarmMagics, server: FakeServer
) -> None:
    with capture_output():
        shell.run_cell_magic("swarm", line_for(server), "Name three rivers")
    done = shell.user_ns["_swarm"]
    server.clear()
    with pytest.raises(UsageError) as caught:
        shell.run_cell_magic("swarm", line_for(server, f"--resume {done.run_id}"),
                             "Name three lakes")
    assert str(caught.value) == (
        "%%swarm: no option --resume in a cell; to continue a run: %swarm resume RUN (it "
        "runs the run's own task); see %%swarm? for the options")
    assert server.requests == []
