"""Cancelling a run at any point leaves nothing behind and a consistent partial Run.

The engine runs in a task on this test's loop; FakeServer's handler (on the server's own
thread) asks the engine's loop to ``engine.cancel("interrupt")`` when the chosen request
arrives, so the cancel lands at a known phase: planning, fan-out, a retry's backoff or
the reducer's stream. Seeded random delays add arbitrary points in between.
"""

from __future__ import annotations

import asyncio
import random
import threading
from collections.abc import Callable

import pytest

from swarmkit.api.entry import create_engine
from swarmkit.api.result import Run
from swarmkit.engine.engine import Engine
from swarmkit.record.events import CallRetried, Event
from swarmkit.testing import (
    FakeReply,
    FakeRequest,
    FakeServer,
    Fault,
    default_reply,
    run_problems,
)
from tests.support.fakekey import QUICK_RETRIES, run_options

WORKERS = 8
HANG = 30.0  # the reply a cancel must cut short; far longer than any test
BACKOFF = 1.0  # a Retry-After the cancel must cut short


class Interrupter:
    """A FakeServer handler that cancels the engine when ``when(request, n)`` first holds.

    The request that triggers it is answered only after HANG seconds, so it is surely in
    flight when the cancel lands.
    """

    def __init__(self, when: Callable[[FakeRequest, int], bool] | None = None) -> None:
        self.when = when
        self.engine: Engine | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.fired = threading.Event()
        self._seen = 0
        self._lock = threading.Lock()

    def __call__(self, request: FakeRequest) -> FakeReply | Fault:
        with self._lock:
            self._seen += 1
            fire = (self.when is not None and not self.fired.is_set()
                    and self.when(request, self._seen))
            if fire:
                self.fired.set()
        if fire:
            assert self.loop is not None and self.engine is not None
            self.loop.call_soon_threadsafe(self.engine.cancel, "interrupt")
            return FakeReply(content="never delivered", latency=HANG)
        return default_reply(request, plan_tasks=WORKERS)


async def _settle(server: FakeServer) -> None:
    """Give the server's side a moment to see the hang-ups (bounded, never asserted on)."""
    for _ in range(500):
        if server.in_flight == 0:
            return
        await asyncio.sleep(0.01)


class CancelOnRetry:
    """A sink that asks for a cancel as soon as ``step`` is about to back off."""

    def __init__(self, step: str) -> None:
        self.step = step
        self.engine: Engine | None = None

    def on_event(self, event: Event) -> None:
        if isinstance(event, CallRetried) and event.step == self.step and self.engine:
            # Scheduled, not called: a sink never calls back into the engine directly.
            asyncio.get_running_loop().call_soon(self.engine.cancel, "interrupt")


async def _execute(
    server: FakeServer, interrupter: Interrupter | None = None,
    cancel_after: float | None = None, canceller: CancelOnRetry | None = None,
    **options: object,
) -> Run:
    """Run one swarm in its own task; check that it left no task and no connection behind."""
    before = asyncio.all_tasks()
    settings = run_options(server, workers=WORKERS, concurrency=3, **QUICK_RETRIES, budget=1.0)
    sinks = [canceller] if canceller is not None else []
    engine = await create_engine(sinks=sinks, **{**settings, **options})
    if canceller is not None:
        canceller.engine = engine
    if interrupter is not None:
        interrupter.engine, interrupter.loop = engine, asyncio.get_running_loop()
    task = asyncio.create_task(engine.execute("Write eight short notes"))
    timer = None
    if cancel_after is not None:
        timer = asyncio.get_running_loop().call_later(cancel_after, engine.cancel, "interrupt")
    try:
        run = await task
    finally:
        if timer is not None:
            timer.cancel()
        await engine.caller.aclose()
    await _settle(server)
    assert asyncio.all_tasks() - before == set()  # every task the engine started is gone
    budget = engine.budget.snapshot()
    assert budget.reserved_usd == 0 and budget.spent_usd == run.cost_usd  # nothing held open
    assert server.in_flight == 0  # every connection was hung up
    # Every request the server saw is recorded; a cancelled call's last attempt may have
    # been stopped before its request left.
    sent = len([r for r in server.requests if r.run_id == run.run_id])
    cut = sum(1 for c in run.calls if c.error is not None)
    assert sum(c.attempts for c in run.calls) - cut <= sent <= sum(c.attempts for c in run.calls)
    return run


def _check_cancelled(run: Run) -> None:
    assert run_problems(run) == []
    assert run.status == "cancelled"
    assert run.error == "run interrupted"
    assert run.answer is None
    for worker in run.workers:
        assert worker.status in ("completed", "cancelled")
        if worker.status == "cancelled":
            assert worker.reason == "interrupt" and worker.output is None
    for call in run.calls:  # a call cut short is kept, unbilled, and says why
        assert call.error in (None, "cancelled (interrupt)")
        if call.error is not None:
            assert call.cost_usd == 0 and call.usage.total_tokens == 0
    done = {f"worker-{w.index}" for w in run.workers if w.status == "completed"}
    workers_ok = {c.step for c in run.calls if c.error is None and c.role == "worker"}
    assert workers_ok == done
    assert not {c.step for c in run.calls if c.error is not None} & done


async def _next_run_works(server: FakeServer) -> None:
    run = await _execute(server)
    assert run.status == "completed" and len(run.workers) == WORKERS
    assert run_problems(run) == []


def _scenario(when: Callable[[FakeRequest, int], bool], **options: object) -> Run:
    interrupter = Interrupter(when)

    async def go() -> Run:
        with FakeServer(interrupter, latency=0.01) as server:
            run = await _execute(server, interrupter, **options)
            assert interrupter.fired.is_set()
            await _next_run_works(server)
            return run

    return asyncio.run(go())


def test_cancel_while_planning_leaves_an_empty_cancelled_run() -> None:
    run = _scenario(lambda request, n: request.step == "planner")
    _check_cancelled(run)
    assert run.plan == [] and run.workers == []
    [planner] = run.calls
    assert (planner.step, planner.attempts, planner.error) == (
        "planner", 1, "cancelled (interrupt)")


@pytest.mark.parametrize("seed", range(4))
def test_cancel_during_fan_out_keeps_finished_workers_and_cancels_the_rest(seed: int) -> None:
    nth = random.Random(seed).randint(2, 1 + WORKERS)  # the 2nd request is the first worker's
    run = _scenario(lambda request, n: request.role == "worker" and n == nth)
    _check_cancelled(run)
    assert len(run.plan) == WORKERS and len(run.workers) == WORKERS
    cancelled = [w for w in run.workers if w.status == "cancelled"]
    assert cancelled  # at least the worker whose request triggered the cancel
    completed = [w for w in run.workers if w.status == "completed"]
    assert all(w.output and w.calls == 1 for w in completed)
    assert all(w.calls <= 1 for w in cancelled)  # the ones in flight recorded their request


def test_cancel_during_the_reducer_stream_keeps_every_worker() -> None:
    run = _scenario(lambda request, n: request.step == "reducer")
    _check_cancelled(run)
    assert [w.status for w in run.workers] == ["completed"] * WORKERS
    assert run.reduced == list(range(1, WORKERS + 1))
    reducer = next(c for c in run.calls if c.step == "reducer")
    assert reducer.error == "cancelled (interrupt)" and reducer.attempts == 1


def test_cancel_during_a_retry_backoff_stops_the_wait() -> None:
    runs: list[str | None] = []

    def handler(request: FakeRequest) -> FakeReply | Fault:
        if not runs:
            runs.append(request.run_id)
        if request.step == "worker-1" and request.run_id == runs[0]:  # the first run only
            # The endpoint stays paused this long for later runs too (swarmkit.provider.ratelimits).
            return Fault.rate_limit(retry_after=BACKOFF)
        return default_reply(request, plan_tasks=WORKERS)

    async def go() -> Run:
        with FakeServer(handler) as server:
            # backoff_max is raised so the engine really sleeps on the long Retry-After.
            canceller = CancelOnRetry("worker-1")
            run = await _execute(server, canceller=canceller, backoff_max=HANG)
            assert server.count("worker-1") == 1  # cancelled while waiting to retry
            await _next_run_works(server)
            return run

    run = asyncio.run(go())
    _check_cancelled(run)
    worker = run.worker(1)
    assert worker.status == "cancelled" and worker.calls == 1 and worker.attempts == 1
    assert any(r.step == "worker-1" and r.status == 429 for r in run.retries)


@pytest.mark.parametrize("seed", range(6))
def test_cancel_at_a_random_moment_leaves_a_consistent_run(seed: int) -> None:
    delay = random.Random(seed).uniform(0.0, 0.25)

    async def go() -> Run:
        with FakeServer(plan_tasks=WORKERS, latency=0.03) as server:
            run = await _execute(server, cancel_after=delay)
            await _next_run_works(server)
            return run

    run = asyncio.run(go())
    if run.status == "cancelled":
        _check_cancelled(run)
        assert len(run.workers) in (0, WORKERS)
    else:  # the cancel came after the run had finished: nothing to undo
        assert run.status == "completed" and run_problems(run) == []
