"""A swarm sharded over a real local Ray: where workers and tools run, one budget, one
rate limit, a killed shard, an interrupt, and the replay of a sharded run with no Ray."""

from __future__ import annotations

import asyncio
import json
import os
import threading
from decimal import Decimal
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import swarmkit
from swarmkit.api import create_engine
from swarmkit.cluster.dispatch import POOL
from swarmkit.record.events import Event, WorkerFinished
from swarmkit.testing import FakeServer, run_problems, wait_until
from tests.support.fakekey import QUICK_RETRIES, run_options
from tests.support.toolreplies import tool_then_answer

pytestmark = [pytest.mark.ray, pytest.mark.usefixtures("fake_key", "local_ray")]

options = partial(run_options, **QUICK_RETRIES, history=False, cluster="ray")


@swarmkit.tool
def whereami() -> int:
    """The id of the process this tool runs in."""
    return os.getpid()


def test_shards_run_the_workers_and_their_tools_in_processes_of_their_own(
        tmp_path: Path) -> None:
    cassette = tmp_path / "sharded.swarm.json"
    tasks = [f"item {i}" for i in range(6)]
    with FakeServer(tool_then_answer("whereami")) as server:
        run = swarmkit.run_sync("Look at six items", **options(
            server, tasks=tasks, shards=2, tools=[whereami], record=str(cassette)))
    assert not server.handler_errors
    assert run.status == "completed" and run_problems(run) == []
    assert [w.shard for w in run.workers] == [0, 1, 0, 1, 0, 1]
    pids = {json.loads(call.result or "0") for call in run.tool_calls}
    assert len(run.tool_calls) == 6 and len(pids) == 2 and os.getpid() not in pids
    # One cassette: every call and tool call of every shard, replayed with no Ray at all.
    replayed = swarmkit.run_sync("Look at six items", replay=str(cassette), history=False)
    assert replayed.answer == run.answer == "merged"
    assert [w.output for w in replayed.workers] == [w.output for w in run.workers]
    assert replayed.tables().text() == run.tables().text()
    assert [w.shard for w in replayed.workers] == [None] * 6
    # The shard is kept in the Run's JSON; a run in one process writes no such key.
    assert json.loads(json.dumps(run.workers[1].to_dict()))["shard"] == 1
    assert "shard" not in replayed.workers[1].to_dict()


def test_one_budget_holds_across_the_shards() -> None:
    cap = Decimal("0.004")
    with FakeServer(latency=0.01) as server:
        run = swarmkit.run_sync("many small things", **options(
            server, tasks=[f"thing {i}" for i in range(60)], concurrency=20, shards=2,
            budget=cap, max_tokens=64))
    assert run.cost_usd is not None and run.cost_usd <= cap
    statuses = {w.status_label for w in run.workers}
    assert "skipped (budget)" in statuses and "completed" in statuses
    assert {w.shard for w in run.workers if w.status == "completed"} == {0, 1}
    assert len(run.workers) == 60 and run.answer is not None


def test_one_rate_limit_holds_across_the_shards() -> None:
    # The server refuses a 7th request in any second; each shard pacing itself to 5 a
    # second would send 10. The driver's one limit keeps the two shards to 5 together.
    with FakeServer(rpm_limit=6, window=1.0) as server:
        run = swarmkit.run_sync("paced", **options(
            server, tasks=[f"t{i}" for i in range(12)], shards=2, rpm=5, rate_window=1.0,
            max_attempts=1))
    assert run.status == "completed" and server.rejected_429 == 0
    assert {w.shard for w in run.workers} == {0, 1}


def run_killing_shard_0(ray: ModuleType, workers: int, shards: int
                        ) -> tuple[Any, set[int]]:
    """A run of ``workers`` slow workers, one at a time per shard; shard 0 is killed once
    one of its workers has finished. The Run, and the workers shard 0 finished before."""
    finished: list[WorkerFinished] = []

    class Seen:
        def on_event(self, event: Event) -> None:
            if isinstance(event, WorkerFinished):
                finished.append(event)

    result: list[Any] = []
    with FakeServer(latency=0.3) as server:
        runner = threading.Thread(target=lambda: result.append(swarmkit.run_sync(
            "slow things", sinks=[Seen()], **options(
                server, tasks=[f"slow {i}" for i in range(workers)], concurrency=shards,
                shards=shards))))
        runner.start()
        assert wait_until(lambda: any(e.worker.shard == 0 for e in finished))
        before = {e.worker.index for e in finished if e.worker.shard == 0}
        ray.kill(POOL.handles[0])
        runner.join(60)
    [run] = result
    assert run_problems(run) == [] and len(run.workers) == workers
    return run, before


def test_a_killed_shard_loses_no_finished_worker_and_its_others_run_again(
        local_ray: ModuleType) -> None:
    run, before = run_killing_shard_0(local_ray, 8, 2)
    assert run.status == "completed" and all(w.status == "completed" for w in run.workers)
    on_zero = {w.index for w in run.workers if w.shard == 0}
    assert before <= on_zero  # nothing finished before the kill ran again
    rerun = {w.index for w in run.workers if w.index % 2 == 1 and w.shard == 1}
    assert rerun and not rerun & before  # shard 0's unfinished ones ran on shard 1


def test_the_workers_of_a_killed_shard_fail_with_the_reason_when_none_is_left(
        local_ray: ModuleType) -> None:
    run, before = run_killing_shard_0(local_ray, 4, 1)
    assert before <= {w.index for w in run.workers if w.status == "completed"}
    assert all(w.shard == 0 for w in run.workers)
    failed = [w for w in run.workers if w.status == "failed"]
    assert failed and all(w.status_label == "failed (shard)" for w in failed)
    assert all(w.error is not None and w.error.startswith("shard 0 died (")
               and w.error.endswith("no shard is left to run it again") for w in failed)
    assert run.status == "partial" and run.answer is not None  # what finished is merged


def test_an_interrupt_stops_every_shard_and_leaves_none_busy(
        local_ray: ModuleType) -> None:
    async def interrupted(server: FakeServer) -> Any:
        engine = await create_engine(**options(
            server, tasks=[f"long {i}" for i in range(6)], shards=2))
        running = asyncio.ensure_future(engine.execute("long things"))
        await asyncio.to_thread(wait_until, lambda: server.in_flight >= 2)
        engine.cancel("interrupt")
        try:
            return await running
        finally:
            await engine.caller.aclose()

    with FakeServer(latency=30) as server:
        run = asyncio.run(interrupted(server))
        assert wait_until(lambda: server.in_flight == 0)  # every request was let go
    assert run.status == "cancelled" and run.error == "run interrupted"
    assert {w.status_label for w in run.workers} == {"cancelled (interrupt)"}
    assert len(run.workers) == 6
    live = [handle for handle in POOL.handles if handle is not None]
    assert live and all(local_ray.get(handle.busy.remote()) == 0 for handle in live)
