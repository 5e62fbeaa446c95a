"""``%swarm resume`` after a real kernel is killed mid-run: a new kernel continues the
run and makes only the calls the dead one had not (counted at the FakeServer)."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from swarmkit.store import History
from swarmkit.testing import FakeServer
from tests.support.kernel import KernelSession, kernel_env

pytestmark = pytest.mark.kernel

TIMEOUT = 90
WORKERS = 40


class _Killed(Exception):
    pass


def test_resume_in_a_new_kernel_makes_only_the_missing_calls(tmp_path: Path) -> None:
    history = tmp_path / "history.db"
    env = kernel_env(history)
    with FakeServer(lifetime=180, latency=0.1, plan_tasks=WORKERS) as server:
        cell = (f"%%swarm --model gpt-4.1-mini --base-url {server.base_url} "
                f"--workers {WORKERS} --concurrency 4\nList forty rivers")
        with KernelSession(env=env, cwd=tmp_path, timeout=TIMEOUT) as kernel:
            reply, printed = kernel.execute("%load_ext swarmkit")
            assert reply["status"] == "ok", printed

            def kill_when_half_done() -> None:
                if server.count("worker-*") >= WORKERS // 2:
                    kernel.manager.signal_kernel(signal.SIGKILL)
                    raise _Killed

            with pytest.raises(_Killed):
                kernel.execute(cell, on_busy=kill_when_half_done)
        with History(history) as stored:
            [dead] = stored.recent(5)
        assert dead.status == "running"
        sent_before = server.count("worker-*")
        server.clear()

        with KernelSession(env=env, cwd=tmp_path, timeout=TIMEOUT) as kernel:
            kernel.execute("%load_ext swarmkit")
            reply, printed = kernel.execute(f"%swarm resume --base-url {server.base_url}")
            assert reply["status"] == "ok", printed
            assert printed.startswith(f"%swarm resume: run {dead.run_id} (running, 40 "
                                      "sub-tasks)")
            reply, printed = kernel.execute(
                "import json\nprint(json.dumps({'status': _swarm.status, 'workers': "
                "len(_swarm.workers), 'cached': sum(c.source == 'cache' for c in _swarm.calls),"
                " 'text': str(_swarm)}))")
            assert reply["status"] == "ok", printed
        state = json.loads(printed)
        asked = server.counts_by_step()
    live_workers = sum(n for step, n in asked.items() if step.startswith("worker"))
    assert state["status"] == "completed" and state["workers"] == WORKERS
    assert asked["planner"] == 0
    # Each worker answered once overall: the ones the dead kernel saw come from history
    # (a hard kill may lose the answers still queued for the writer: those are asked again).
    assert state["cached"] + live_workers == WORKERS
    assert state["cached"] >= WORKERS // 2 - 4 - 4  # at most the in-flight and queued lost
    assert live_workers < WORKERS and sent_before >= WORKERS // 2
    assert f"resumed: {state['cached']} from history, run {dead.run_id}" in state["text"]
