"""Resume from Python and the terminal: a ``run_sync`` process killed mid-run (cache off),
then ``run_sync(task, resume=RUN)``, which makes only the calls the dead run had not made
(counted at the FakeServer); and what a resume refuses with no request at all: another
task than the run's, and a dry-run (stored ``planned``)."""

from __future__ import annotations

import asyncio
import os
import shlex
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

import swarmkit
from swarmkit.api.result import Run
from swarmkit.errors import ConfigError
from swarmkit.store import History
from swarmkit.testing import FakeServer
from tests.support.fakekey import run_options, swarm_line

pytestmark = pytest.mark.usefixtures("fake_key")

ROOT = Path(__file__).resolve().parents[2]
WORKERS = 40


@pytest.fixture
def history(tmp_path: Path) -> Path:
    return tmp_path / "history.db"


def options(server: FakeServer, history: Path, **extra: Any) -> dict[str, Any]:
    return run_options(server, **{"workers": WORKERS, "concurrency": 4,
                                  "history_path": str(history), **extra})



def child_env() -> dict[str, str]:
    """This environment (the fake key with it) and the checkout on PYTHONPATH."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join(
        filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}


def finished(server: FakeServer, history: Path, task: str) -> Run:
    """A completed two-worker run of ``task``, kept in ``history``; the server's log is
    cleared after it, so a test counts only what comes next."""
    done = swarmkit.run_sync(task, **options(server, history, workers=2))
    server.clear()
    return done


def killed_midway(server: FakeServer, history: Path, task: str) -> str:
    """Start ``run_sync`` in a child process and SIGKILL it once 12 workers answered;
    return the dead run's id (from the history, where its plan was written)."""
    script = textwrap.dedent(f"""
        import swarmkit
        swarmkit.run_sync({task!r}, **{options(server, history)!r})
    """)
    child = subprocess.Popen([sys.executable, "-c", script], env=child_env())
    try:
        deadline = time.monotonic() + 60
        while server.count("worker-*") < 12 + 4:  # 12 answered, 4 more in flight
            assert child.poll() is None, "the run ended before it could be killed"
            assert time.monotonic() < deadline, "the run made no progress"
            time.sleep(0.01)
        time.sleep(0.3)  # let the answers already received reach the writer thread
    finally:
        child.kill()
        child.wait()
    with History(history) as stored:
        [summary] = stored.recent(5)
    assert summary.status == "running"  # the plan was saved; the end never came
    return summary.run_id


def test_a_killed_run_sync_resumes_with_only_the_missing_calls(history: Path) -> None:
    task = "List forty rivers"
    with FakeServer(latency=0.05, plan_tasks=WORKERS) as server:
        run_id = killed_midway(server, history, task)
        answered_before = server.count("worker-*")
        server.clear()
        run = swarmkit.run_sync(task, resume=run_id, **options(server, history))
        asked = server.counts_by_step()
    from_history = sum(1 for c in run.calls if c.source == "cache")
    live_workers = sum(n for step, n in asked.items() if step.startswith("worker"))
    assert run.status == "completed" and len(run.workers) == WORKERS
    assert asked["planner"] == 0  # the plan came from the dead run
    # Every worker was answered once: from the history, or now; none twice.
    assert from_history + live_workers == WORKERS
    assert from_history >= 12
    assert live_workers <= WORKERS - 12 and answered_before >= 12
    assert run.config["resume"] == run_id
    assert f"resumed: {from_history} from history, run {run_id}" in str(run)


def test_resume_with_another_task_refuses_naming_both_and_makes_no_request(
    history: Path,
) -> None:
    with FakeServer(plan_tasks=2) as server:
        done = finished(server, history, "Two rivers")
        with pytest.raises(ConfigError) as caught:
            swarmkit.run_sync("Two lakes", resume=done.run_id,
                              **options(server, history, workers=2))
        assert server.requests == []
        assert str(caught.value) == (
            f'resume: run {done.run_id} was for "Two rivers", not "Two lakes"; resume it '
            "without a task, or start a new run")
        again = swarmkit.run_sync("Two rivers", resume=done, **options(server, history,
                                                                       workers=2))
        # A finished run resumes to the same answer with no call at all.
        assert server.count() == 0 and again.answer == done.answer


def test_resume_without_a_task_runs_the_stored_one(history: Path) -> None:
    with FakeServer(plan_tasks=2) as server:
        done = finished(server, history, "Two rivers")
        omitted = swarmkit.run_sync(resume=done.run_id, **options(server, history, workers=2))
        empty = swarmkit.run_sync("  ", resume=done.run_id, **options(server, history,
                                                                      workers=2))
        # Spacing aside the same task: the stored text is run, so its answers match.
        spaced = swarmkit.run_sync(" Two rivers\n", resume=done.run_id,
                                   **options(server, history, workers=2))
        assert server.count() == 0
        with pytest.raises(ConfigError, match=r"^run: the task is empty; give one \(or "
                           r"resume=RUN to continue an earlier run\)$"):
            swarmkit.run_sync(**options(server, history, workers=2))
    for run in (omitted, empty, spaced):
        assert run.task == "Two rivers" and run.answer == done.answer
        assert run.config["resume"] == done.run_id


def planned(server: FakeServer, history: Path, task: str) -> str:
    """A dry-run (the planner alone, as ``%%swarm --dry-run`` runs it); its run id."""
    from swarmkit.api.entry import create_engine

    async def plan() -> str:
        engine = await create_engine(**options(server, history, workers=2))
        try:
            await engine.plan_only(task)
        finally:
            await engine.caller.aclose()
        return engine.run_id

    return asyncio.run(plan())


def test_a_dry_run_is_stored_as_planned_and_resume_refuses_it_with_no_request(
    history: Path,
) -> None:
    with FakeServer(plan_tasks=2) as server:
        run_id = planned(server, history, "Two rivers")
        assert server.counts_by_step() == {"planner": 1}
        with History(history) as stored:
            [summary] = stored.recent(5)
            record = stored.load_run(run_id)
        assert summary.status == record.status == "planned" and len(record.plan) == 2
        server.clear()
        for task in ("Two rivers", ""):
            with pytest.raises(ConfigError) as caught:
                swarmkit.run_sync(task, resume=run_id[:6], **options(server, history,
                                                                    workers=2))
            assert str(caught.value) == (
                f"resume: run {run_id} is a dry-run (planned, not run); to make its calls: "
                f'run with plan_from="{run_id}" (or %%swarm --plan-from {run_id})')
        assert server.requests == []
        # The explicit step: its plan, and the workers and the reducer, paid now.
        run = swarmkit.run_sync("Two rivers", plan_from=run_id, **options(server, history,
                                                                          workers=2))
    assert run.status == "completed"
    assert server.counts_by_step() == {"worker-1": 1, "worker-2": 1, "reducer": 1}
    with History(history) as stored:
        assert stored.load_run(run_id).status == "planned"


# -- the terminal: swarmkit run TASK --resume RUN -------------------------------------------


def cli_resume(server: FakeServer, history: Path, task: str, run_id: str,
               *flags: str) -> subprocess.CompletedProcess[str]:
    """``swarmkit run TASK --resume RUN`` against ``server``, in a child process; it made
    no request (a refusal, or every call answered from the history)."""
    command = [*shlex.split(swarm_line(server, "--workers 2")), "--history-path", str(history)]
    done = subprocess.run(
        [sys.executable, "-m", "swarmkit", "run", task, "--resume", run_id, *flags, *command],
        capture_output=True, text=True, timeout=120, env=child_env(), check=False)
    assert server.requests == []
    return done


def test_cli_resume_with_another_task_refuses_naming_both_and_makes_no_request(
    history: Path,
) -> None:
    with FakeServer(plan_tasks=2) as server:
        done = finished(server, history, "Slow task")
        refused = cli_resume(server, history, "Other task", done.run_id)
        same = cli_resume(server, history, "Slow task", done.run_id, "--json")
    assert refused.returncode == 2 and refused.stdout == ""
    assert refused.stderr == (
        f'jswarm: ConfigError: resume: run {done.run_id} was for "Slow task", not '
        '"Other task"; resume it without a task, or start a new run\n')
    assert same.returncode == 0, same.stderr
    resumed = swarmkit.Run.from_json(same.stdout)
    assert resumed.task == "Slow task" and resumed.answer == done.answer
    with History(history) as stored:  # the refused one left no run behind
        assert len(stored.recent(10)) == 2


def test_cli_resume_of_a_dry_run_refuses_and_makes_no_request(history: Path) -> None:
    with FakeServer(plan_tasks=2) as server:
        run_id = planned(server, history, "Slow task")
        server.clear()
        refused = cli_resume(server, history, "Slow task", run_id)
    assert refused.returncode == 2
    assert refused.stderr == (
        f"jswarm: ConfigError: resume: run {run_id} is a dry-run (planned, not run); to "
        f'make its calls: run with plan_from="{run_id}" (or %%swarm --plan-from {run_id})\n')
