"""Batch mode (``batch=True``): the workers go to the Batch API, through the real openai
client against FakeServer's batch endpoints; the planner and the reducer run live."""

from __future__ import annotations

import asyncio
import time
from decimal import Decimal
from functools import partial
from pathlib import Path

import pytest

import swarmkit
from swarmkit.api.entry import create_engine
from swarmkit.display.tables import RunTables
from swarmkit.errors import ConfigError
from swarmkit.record.events import BatchSubmitted, BatchUpdated, Event
from swarmkit.store import History
from swarmkit.testing import FakeReply, FakeRequest, FakeServer, Fault, run_problems
from tests.support.batches import killed_after_submitting
from tests.support.events import Events
from tests.support.fakekey import FAKE_KEY, KEY_ENV, run_options

pytestmark = pytest.mark.usefixtures("fake_key")

options = partial(run_options, history=False, batch=True, batch_poll=0.02)


def test_every_worker_is_one_batch_line_and_costs_half_the_live_price() -> None:
    seen = Events()
    with FakeServer(plan_tasks=3) as server:
        run = swarmkit.run_sync("Name three rivers", sinks=[seen], **options(server))
        live = swarmkit.run_sync("Name three rivers", **options(server, batch=False))
        lines = server.batches.requests
        live_bodies = {r.step: r.body for r in server.requests if r.step.startswith("worker")}
    assert run.status == "completed" and run.answer == "Final answer merging 3 results"
    assert [w.status for w in run.workers] == ["completed"] * 3 and run_problems(run) == []
    assert server.batches.created == 1 and len(lines) == 3
    [batch] = run.batches
    assert (batch.first, batch.last) == (1, 3)
    # Each line is exactly the request the worker sends live, under run/worker ids.
    assert {line.step: line.body for line in lines} == live_bodies
    assert {line.run_id for line in lines} == {run.run_id}
    for batched, direct in zip(run.workers, live.workers, strict=True):
        assert batched.output == direct.output
        assert batched.cost_usd is not None and batched.cost_usd > 0
        assert batched.cost_usd * 2 == direct.cost_usd  # OpenAI bills a batch at 50%
    worker_calls = [c for c in run.calls if c.role == "worker"]
    assert len(worker_calls) == 3 and all(c.error is None for c in worker_calls)
    submitted = [e for e in seen.events if isinstance(e, BatchSubmitted)]
    updates = [e for e in seen.events if isinstance(e, BatchUpdated)]
    assert [e.batch.batch_id for e in submitted] == [batch.batch_id]
    last = updates[-1]
    assert (last.status, last.total, last.completed, last.failed) == ("completed", 3, 3, 0)
    # The static output says where the workers went; a live run's says nothing of it.
    assert RunTables(run).totals().startswith(
        f"run {run.run_id} · completed · 3 workers (3 completed) · by Batch API "
        f"{batch.batch_id} · 5 calls · ")
    assert "Batch API" not in RunTables(live).totals()


def test_an_error_file_line_fails_its_worker_and_the_reducer_merges_the_rest() -> None:
    def handler(request: FakeRequest) -> Fault | None:
        if request.step == "worker-2":
            return Fault.status(400, body='{"error": {"message": "prompt too long"}}')
        return None

    with FakeServer(handler, plan_tasks=3) as server:
        run = swarmkit.run_sync("Name three lakes", **options(server))
    labels = [w.status_label for w in run.workers]
    assert labels == ["completed", "failed (provider)", "completed"]
    failed = run.worker(2)
    assert failed.error == "HTTP 400: prompt too long"
    assert failed.cost_usd == 0  # a failed line is unbilled
    assert run.reduced == [1, 3] and run.answer == "Final answer merging 2 results"
    assert run_problems(run) == []


def test_an_expired_batch_keeps_what_finished_and_fails_the_rest_expired() -> None:
    def handler(request: FakeRequest) -> FakeReply | None:
        return FakeReply(content="slow but done", latency=0.4) if request.step == "worker-1" \
            else None

    with FakeServer(handler, plan_tasks=3, batch_expire_after=0.2) as server:
        run = swarmkit.run_sync("Name three seas", **options(server))
    assert run.worker(1).status == "completed" and run.worker(1).output == "slow but done"
    for index in (2, 3):
        worker = run.worker(index)
        assert worker.status_label == "failed (expired)"
        assert worker.error is not None and worker.error.startswith("expired: ")
        assert worker.calls == 0  # never run, never billed
    assert run.reduced == [1]


def test_a_cancelled_run_cancels_its_batch_at_the_server() -> None:
    def handler(request: FakeRequest) -> FakeReply | None:
        return FakeReply(content="late", latency=30) if request.role == "worker" else None

    with FakeServer(handler, plan_tasks=2) as server:
        run = swarmkit.run_sync("Name two hills", **options(server, run_timeout=1.0))
        [batch] = run.batches
        deadline = time.monotonic() + 10
        while server.batches.batches[batch.batch_id].status != "cancelled":
            assert time.monotonic() < deadline, "the batch was not cancelled"
            time.sleep(0.02)
    assert server.batches.cancelled == [batch.batch_id]
    assert run.status == "cancelled" and run_problems(run) == []
    assert [w.status_label for w in run.workers] == ["cancelled (timeout)"] * 2


def test_stop_cancels_the_batch_and_the_run_ends_stopped() -> None:
    def handler(request: FakeRequest) -> FakeReply | None:
        return FakeReply(content="late", latency=30) if request.role == "worker" else None

    async def stopped_run(server: FakeServer) -> swarmkit.Run:
        class StopOnSubmit:
            def on_event(self, event: Event) -> None:
                if isinstance(event, BatchSubmitted):
                    asyncio.get_running_loop().call_later(0.1, engine.stop)

        engine = await create_engine(sinks=[StopOnSubmit()], **options(server))
        try:
            return await engine.execute("Name two bays")
        finally:
            await engine.caller.aclose()

    with FakeServer(handler, plan_tasks=2) as server:
        run = asyncio.run(stopped_run(server))
        cancelled = list(server.batches.cancelled)
    assert cancelled == [run.batches[0].batch_id]
    assert run.status == "stopped" and run_problems(run) == []
    assert [w.status_label for w in run.workers] == ["cancelled (stopped)"] * 2


def test_what_cannot_be_batched_is_one_line_config_error() -> None:
    @swarmkit.tool
    def lookup(word: str) -> str:
        """Look a word up."""
        return word

    with FakeServer() as server:
        with pytest.raises(ConfigError, match="tool loop needs turns") as error:
            swarmkit.run_sync("x", tools=[lookup], **options(server))
        assert "\n" not in str(error.value)
        with pytest.raises(ConfigError, match="no Batch API price known"):
            swarmkit.run_sync("x", budget=1, **options(server, model="fake-model",
                                                        prices=[("fake-model", 1, 1)]))
        assert server.count() == 0 and server.batches.created == 0


def test_a_budget_reserves_the_batch_worst_case_and_spends_the_batch_cost() -> None:
    with FakeServer(plan_tasks=3) as server:
        run = swarmkit.run_sync("Name three ports", **options(server, budget=Decimal("0.5")))
    assert run.status == "completed"
    worker_cost = sum((w.cost_usd for w in run.workers), Decimal(0))
    assert worker_cost > 0 and run.cost_usd is not None and run.cost_usd <= Decimal("0.5")


def test_a_batch_run_killed_after_submitting_resumes_in_another_process(
        tmp_path: Path) -> None:
    history = tmp_path / "history.db"
    task = "Name four capes"
    with FakeServer(plan_tasks=4) as server:
        child = options(server, history=True, history_path=str(history), batch_poll=60)
        run_id = killed_after_submitting(server.batches, task, child,
                                         (KEY_ENV, FAKE_KEY))

        with History(history) as stored:
            dead = stored.load_run(run_id)
        assert dead.status == "running" and not dead.workers
        run = swarmkit.run_sync(task, resume=run_id, **options(
            server, history=True, history_path=str(history)))
        created = server.batches.created
        planner_calls = server.count("planner")
    assert created == 1  # polled the stored batch; nothing submitted again
    assert planner_calls == 1  # the dead run's; the resumed one took its plan
    assert run.status == "completed" and run.answer == "Final answer merging 4 results"
    assert [w.status for w in run.workers] == ["completed"] * 4
    assert [b.batch_id for b in run.batches] == [b.batch_id for b in dead.batches]
    with History(history) as stored:
        assert stored.load_run(run.run_id).batches == run.batches


def test_the_first_looks_at_a_batch_come_before_batch_poll() -> None:
    # A batch that ends in a fraction of a second (a self-hosted stack) is seen ended at
    # the look after one second, not after batch_poll's ten minutes.
    with FakeServer(plan_tasks=2, batch_delay=0.3) as server:
        run = swarmkit.run_sync("Name two lakes", **options(server, batch_poll=600))
    assert run.status == "completed" and [w.status for w in run.workers] == ["completed"] * 2
    assert run.duration < 60
