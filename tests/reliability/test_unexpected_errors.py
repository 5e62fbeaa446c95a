"""A bug (an exception swarmkit did not expect) is contained and still leaves a finished Run.

The bugs are planted through the engine's public seams: a ``worker_loop`` (what the tool
loop plugs into) and a ``ModelCaller`` (what the call store plugs into).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from swarmkit.api.entry import LiveCaller
from swarmkit.api.result import Run
from swarmkit.config.swarmconfig import SwarmConfig
from swarmkit.engine.engine import Engine, WorkerContext
from swarmkit.provider import OpenAIProvider
from swarmkit.record.events import Event, RunFinished
from swarmkit.record.modelcall import CallOutcome, ChatRequest
from swarmkit.testing import FakeServer, run_problems
from tests.support.fakekey import run_options


def _config(server: FakeServer) -> SwarmConfig:
    return SwarmConfig.from_options(**run_options(server, history=False))


class Finished:
    def __init__(self) -> None:
        self.events: list[RunFinished] = []

    def on_event(self, event: Event) -> None:
        if isinstance(event, RunFinished):
            self.events.append(event)


def test_a_worker_that_raises_unexpectedly_fails_alone_and_the_rest_reduce(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def buggy_loop(context: WorkerContext, messages: list[dict[str, Any]]) -> str:
        if context.index == 2:
            raise KeyError("missing 'choices'")
        request = context.request(messages)
        return (await context.call(request)).response.content or ""

    async def go(server: FakeServer) -> Run:
        config = _config(server)
        engine = Engine(config, caller=LiveCaller(OpenAIProvider(config)),
                        worker_loop=buggy_loop)
        try:
            return await engine.execute("four things")
        finally:
            await engine.caller.aclose()

    with FakeServer(plan_tasks=4, latency=0.02) as server:
        run = asyncio.run(go(server))
    assert run_problems(run) == []
    assert run.status == "partial"  # before: the whole swarm was cancelled and never ended
    assert [w.status_label for w in run.workers] == [
        "completed", "failed (error)", "completed", "completed"]
    error = run.worker(2).error
    assert error is not None and error.startswith("unexpected KeyError: \"missing 'choices'\"")
    assert run.reduced == [1, 3, 4] and run.answer
    assert "worker 2 raised unexpectedly" in caplog.text  # with its traceback, for a report


class BrokenReducer:
    """A ModelCaller whose reducer call hits a bug."""

    def __init__(self, inner: LiveCaller) -> None:
        self.inner = inner

    async def complete(self, request: ChatRequest, **context: Any) -> CallOutcome:
        if context["step"] == "reducer":
            raise ZeroDivisionError("division by zero")
        return await self.inner.complete(request, **context)

    async def tool(self, key: Any, execute: Any) -> Any:
        return await execute()

    async def aclose(self) -> None:
        await self.inner.aclose()


def test_an_unexpected_error_outside_the_workers_still_ends_the_run_then_propagates() -> None:
    finished = Finished()

    async def go(server: FakeServer) -> Engine:
        config = _config(server)
        caller = BrokenReducer(LiveCaller(OpenAIProvider(config)))
        engine = Engine(config, caller=caller, sinks=[finished])
        try:
            with pytest.raises(ZeroDivisionError):  # a bug is not hidden from the caller...
                await engine.execute("three things")
        finally:
            await engine.caller.aclose()
        return engine

    with FakeServer(plan_tasks=3) as server:
        engine = asyncio.run(go(server))
    run = engine.run
    assert run is not None
    # ...but the Run, the dashboard and the history still see a finished, failed run.
    assert [e.status for e in finished.events] == ["failed"]
    assert run.status == "failed"
    assert run.error is not None and run.error.startswith("unexpected ZeroDivisionError")
    assert [w.status for w in run.workers] == ["completed"] * 3
    assert run_problems(run) == []
