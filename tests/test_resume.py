"""Resume from Python: a ``run_sync`` process killed mid-run (cache off), then
``run_sync(task, resume=RUN)``, which makes only the calls the dead run had not made
(counted at the FakeServer)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

import swarmkit
from swarmkit.errors import ConfigError
from swarmkit.store import History
from swarmkit.testing import FakeServer

KEY_ENV = "SWARMKIT_TEST_KEY"
ROOT = Path(__file__).resolve().parents[1]
WORKERS = 40


def options(server: FakeServer, history: Path, **extra: Any) -> dict[str, Any]:
    return {"model": "gpt-4.1-mini", "base_url": server.base_url, "api_key_env": KEY_ENV,
            "workers": WORKERS, "concurrency": 4, "history_path": str(history), **extra}


def killed_midway(server: FakeServer, history: Path, task: str) -> str:
    """Start ``run_sync`` in a child process and SIGKILL it once 12 workers answered;
    return the dead run's id (from the history, where its plan was written)."""
    script = textwrap.dedent(f"""
        import swarmkit
        swarmkit.run_sync({task!r}, **{options(server, history)!r})
    """)
    env = {**os.environ, KEY_ENV: "sk-test-resume-0000",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    child = subprocess.Popen([sys.executable, "-c", script], env=env)
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


def test_a_killed_run_sync_resumes_with_only_the_missing_calls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-test-resume-0000")
    history = tmp_path / "history.db"
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


def test_resume_refuses_another_task_and_a_run_with_no_plan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-test-resume-0000")
    history = tmp_path / "history.db"
    with FakeServer(plan_tasks=2) as server:
        done = swarmkit.run_sync("Two rivers", **options(server, history, workers=2))
        with pytest.raises(ConfigError, match="was another task"):
            swarmkit.run_sync("Two lakes", resume=done.run_id,
                              **options(server, history, workers=2))
        server.clear()
        again = swarmkit.run_sync("Two rivers", resume=done, **options(server, history,
                                                                       workers=2))
        # A finished run resumes to the same answer with no call at all.
        assert server.count() == 0 and again.answer == done.answer
