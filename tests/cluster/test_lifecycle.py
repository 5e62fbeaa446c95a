"""Stop-and-merge and OpenTelemetry traces on a cluster run, as in one process: a stop
keeps the finished workers and the reducer merges them; a sharded run's spans are the
one-process run's spans (names, kinds, parents, attributes), each within its parent."""

from __future__ import annotations

import asyncio
from functools import partial
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import swarmkit
from swarmkit.api import create_engine
from swarmkit.cluster.dispatch import POOL
from swarmkit.record.events import Event, WorkerFinished
from swarmkit.testing import (
    FakeReply,
    FakeRequest,
    FakeServer,
    Fault,
    FaultRule,
    default_reply,
    run_problems,
    wait_until,
)
from tests.support.fakekey import QUICK_RETRIES, run_options

pytestmark = [pytest.mark.ray, pytest.mark.usefixtures("fake_key", "local_ray")]

options = partial(run_options, **QUICK_RETRIES, history=False)


def slow_but_two(request: FakeRequest) -> FakeReply:
    """Workers 1 and 2 answer at once; the others take 30 s."""
    reply = default_reply(request, plan_tasks=6)
    if request.step.startswith("worker-") and request.step not in ("worker-1", "worker-2"):
        return FakeReply(content=reply.content, latency=30.0)
    return reply


def test_stop_and_merge_keeps_the_finished_workers_and_merges_them(
        local_ray: Any) -> None:
    finished: list[int] = []

    class Seen:
        def on_event(self, event: Event) -> None:
            if isinstance(event, WorkerFinished):
                finished.append(event.worker.index)

    async def stopped(server: FakeServer) -> Any:
        engine = await create_engine(sinks=[Seen()], **options(
            server, tasks=[f"lake {i}" for i in range(6)], cluster="ray", shards=2))
        running = asyncio.ensure_future(engine.execute("Name six lakes"))
        await asyncio.to_thread(wait_until, lambda: sorted(finished) == [1, 2]
                                and server.in_flight >= 4)
        engine.stop()
        try:
            return await running
        finally:
            await engine.caller.aclose()

    with FakeServer(slow_but_two) as server:
        run = asyncio.run(stopped(server))
        assert wait_until(lambda: server.in_flight == 0)  # every request was let go
        [reducer] = [r for r in server.requests if r.step == "reducer"]
    prompt = str(reducer.body["messages"][-1]["content"])
    assert run.status == "stopped" and run.answer and run.error is None
    assert {w.index: w.status_label for w in run.workers} == {
        1: "completed", 2: "completed", **{i: "cancelled (stopped)" for i in range(3, 7)}}
    assert [w.shard for w in run.workers] == [0, 1, 0, 1, 0, 1]
    assert "Worker 1 " in prompt and "Worker 2 " in prompt and "Worker 3 " not in prompt
    assert run_problems(run) == []
    live = [handle for handle in POOL.handles if handle is not None]
    assert live and all(local_ray.get(handle.busy.remote()) == 0 for handle in live)


# -- traces ---------------------------------------------------------------------------------

# What differs between any two runs, sharded or not: the run id, the server's port.
PER_RUN = {"swarmkit.run_id", "server.port"}


def handler(request: FakeRequest) -> FakeReply:
    """Four workers; worker-1 calls ``lookup`` once, then answers."""
    if request.role == "reducer":
        return FakeReply(content="merged")
    if request.step == "worker-1" and not any(m.get("role") == "tool" for m in request.messages):
        return FakeReply(tool_calls=[("lookup", {"order_id": "A-17"})])
    return FakeReply(content=f"{request.step} done")


@swarmkit.tool
def lookup(order_id: str) -> dict[str, str]:
    """Look up an order.

    Args:
        order_id: The order's id.
    """
    return {"order_id": order_id, "status": "shipped"}


def traced(**extra: Any) -> tuple[ReadableSpan, ...]:
    """The spans of a four-worker run whose worker-2 meets a 429 once."""
    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    try:
        with FakeServer(handler, faults=[
            FaultRule(Fault.rate_limit(retry_after=0), step="worker-2", attempts=1),
        ]) as server:
            run = swarmkit.run_sync("Check four orders", **options(
                server, tasks=[f"order {i}" for i in range(4)], tools=[lookup],
                tracer_provider=provider, otel_content=True, **extra))
        assert run.status == "completed" and len(run.retries) == 1
        return spans.get_finished_spans()
    finally:
        provider.shutdown()


def shape(spans: tuple[ReadableSpan, ...]) -> list[tuple[Any, ...]]:
    """What a reader of the traces sees, without the times and ids."""
    names = {s.context.span_id: s.name for s in spans}
    return sorted((
        span.name, span.kind.name, names.get(span.parent.span_id) if span.parent else None,
        span.status.status_code.name,
        tuple(sorted((k, repr(v)) for k, v in (span.attributes or {}).items()
                     if k not in PER_RUN)),
    ) for span in spans)


def test_a_sharded_run_has_the_spans_of_one_process() -> None:
    alone = traced()
    sharded = traced(cluster="ray", shards=2)
    assert shape(sharded) == shape(alone)
    assert len(sharded) == 1 + 4 + 1 + 6 + 1 + 1  # run, steps, chat attempts, tool
    by_id = {s.context.span_id: s for s in sharded}
    for span in sharded:  # the shards' clocks are the kernel's: each span in its parent
        assert span.start_time is not None and span.end_time is not None
        assert span.start_time <= span.end_time
        if span.parent is not None:
            parent = by_id[span.parent.span_id]
            assert parent.start_time is not None and parent.end_time is not None
            assert parent.start_time <= span.start_time <= span.end_time <= parent.end_time
