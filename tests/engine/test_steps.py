"""The steps run on a StepContext alone: planner, worker and reducer without an Engine.

Real parts: the openai client in OpenAIProvider, behind a CallStore, against FakeServer.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from decimal import Decimal
from typing import Any

import pytest

from swarmkit.config.swarmconfig import SwarmConfig
from swarmkit.engine.context import StepContext
from swarmkit.engine.estimate import estimate
from swarmkit.engine.halt import Halt
from swarmkit.engine.planner import make_plan
from swarmkit.engine.reducer import reduce
from swarmkit.engine.worker import run_worker
from swarmkit.provider import OpenAIProvider
from swarmkit.record.events import CallFinished, CallStarted, Event, PlanReady, WorkerFinished
from swarmkit.record.rows import WorkerRecord
from swarmkit.store.callstore import CallStore
from swarmkit.testing import FakeServer
from tests.support.fakekey import FAKE_KEY, KEY_ENV, QUICK_RETRIES, run_options


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer(plan_tasks=3, lifetime=60) as fake:
        yield fake


def config_for(server: FakeServer, **options: Any) -> SwarmConfig:
    return SwarmConfig.from_options(env={}, **run_options(server, **{**QUICK_RETRIES,
                                                                     **options}))


def context_for(config: SwarmConfig, emit: Callable[[Event], None],
                halt: Halt | None = None) -> StepContext:
    store = CallStore(OpenAIProvider(config, env={KEY_ENV: FAKE_KEY}))

    clock = iter(range(1_000_000))
    return StepContext.create(config, store, run_id="steps-1", emit=emit,
                              now=lambda: float(next(clock)), halt=halt)


def test_plan_workers_and_reduce_on_a_context_alone(server: FakeServer) -> None:
    config = config_for(server)
    events: list[Event] = []

    async def go() -> tuple[tuple[str, ...], dict[int, WorkerRecord], Any]:
        context = context_for(config, events.append)
        try:
            plan = await make_plan(context, "Compare three rivers")
            records: dict[int, WorkerRecord] = {}
            slots = asyncio.Semaphore(2)
            await asyncio.gather(*(
                run_worker(context, None, "Compare three rivers", index, subtask, len(plan),
                           slots, records)
                for index, subtask in enumerate(plan, start=1)
            ))
            ended = await reduce(context, "Compare three rivers", plan,
                                 [records[i] for i in sorted(records)])
            return plan, records, ended
        finally:
            await context.caller.aclose()

    plan, records, (status, answer, error) = asyncio.run(go())
    assert len(plan) == 3
    assert status == "completed" and answer and error is None
    assert sorted(records) == [1, 2, 3]
    assert all(r.status == "completed" and r.calls == 1 for r in records.values())
    calls = [e.call for e in events if isinstance(e, CallFinished)]
    assert [c.step for c in calls].count("reducer") == 1
    assert {r.run_id for r in server.requests} == {"steps-1"}
    # Each worker's record is the sum of its calls, cost included.
    for index, record in records.items():
        mine = [c for c in calls if c.step == f"worker-{index}"]
        assert record.usage.to_dict() == mine[0].usage.to_dict()
        assert record.cost_usd == mine[0].cost_usd and record.cost_usd is not None
        assert record.cost_usd > 0
    assert sum(isinstance(e, PlanReady) for e in events) == 1
    assert sum(isinstance(e, WorkerFinished) for e in events) == 3


def test_a_cancelled_worker_is_recorded_with_the_halt_reason(server: FakeServer) -> None:
    server.handler = lambda request: "slow"
    server.latency = 30.0
    config = config_for(server)
    events: list[Event] = []
    halt = Halt()

    async def go() -> dict[int, WorkerRecord]:
        sent = asyncio.Event()

        def emit(event: Event) -> None:
            events.append(event)
            if isinstance(event, CallStarted):
                sent.set()

        context = context_for(config, emit, halt)
        records: dict[int, WorkerRecord] = {}
        try:
            task = asyncio.ensure_future(
                run_worker(context, None, "t", 1, "sub", 1, asyncio.Semaphore(1), records)
            )
            await sent.wait()
            halt.stop = "stopped"
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
        finally:
            await context.caller.aclose()
        return records

    records = asyncio.run(go())
    assert records[1].status_label == "cancelled (stopped)"
    call = next(e.call for e in events if isinstance(e, CallFinished))
    assert call.error == "cancelled (stopped)" and call.cost_usd == Decimal(0)


def test_the_estimate_is_a_pure_function_of_config_prices_and_plan(server: FakeServer) -> None:
    config = config_for(server)
    context = context_for(config, lambda event: None)
    plan = ("a", "b")
    bound = estimate(config, context.prices, [], "task", plan)
    planner, workers, reducer = bound.roles
    assert (planner.calls, planner.tokens, planner.cost_usd) == (0, 0, Decimal(0))
    assert workers.calls == 2 and reducer.calls == 1
    assert bound.cost_usd == workers.cost_usd + reducer.cost_usd  # type: ignore[operator]
    unpriced = config_for(server, model="no-such-model")
    assert estimate(unpriced, context.prices, [], "task", plan).cost_usd is None
