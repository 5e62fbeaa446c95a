"""A swarm of swarms' spans (depth > 1): each child worker's span and its child swarm's
reducer span under the parent worker's span, live and replayed; the OpenTelemetry SDK's
in-memory exporter, the real openai client against FakeServer."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import swarmkit
from swarmkit.testing import FakeServer, split_script
from tests.support.fakekey import run_options

pytestmark = pytest.mark.usefixtures("fake_key")

SPLITS = {"worker-2": ["Postgres", "Qdrant"], "worker-2.1": ["pgvector", "pgvecto.rs"]}


@pytest.fixture
def exporter() -> Iterator[tuple[TracerProvider, InMemorySpanExporter]]:
    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    yield provider, spans
    provider.shutdown()


def parents(spans: tuple[ReadableSpan, ...]) -> dict[str, str]:
    """Each agent span's step, and the step of the span it is under ("run" for the run)."""
    by_id = {s.context.span_id: s for s in spans}
    steps: dict[str, str] = {}
    for span in spans:
        step = span.attributes.get("swarmkit.step")
        if span.attributes.get("gen_ai.operation.name") != "invoke_agent":
            continue
        parent = by_id[span.parent.span_id] if span.parent is not None else None
        steps[str(step)] = str(parent.attributes.get("swarmkit.step", "run")) if parent else ""
    return steps


def test_child_spans_nest_under_their_parent_worker_live_and_replayed(
    exporter: tuple[TracerProvider, InMemorySpanExporter], tmp_path: Path,
) -> None:
    provider, spans = exporter
    cassette = tmp_path / "tree.swarm.json"
    with FakeServer(split_script(SPLITS), plan_tasks=2) as server:
        swarmkit.run_sync("Survey the vector databases", **run_options(
            server, history=False, workers=2, depth=3, record=str(cassette),
            tracer_provider=provider))
    live = parents(spans.get_finished_spans())
    assert live == {
        "planner": "run", "worker-1": "run", "worker-2": "run", "reducer": "run",
        "worker-2.1": "worker-2", "worker-2.2": "worker-2", "reducer-of-2": "worker-2",
        "worker-2.1.1": "worker-2.1", "worker-2.1.2": "worker-2.1",
        "reducer-of-2.1": "worker-2.1"}
    finished = spans.get_finished_spans()
    assert len({s.context.trace_id for s in finished}) == 1
    # The parent's window covers its children's.
    by_step = {s.attributes.get("swarmkit.step"): s for s in finished
               if s.attributes.get("gen_ai.operation.name") == "invoke_agent"}
    parent, child = by_step["worker-2"], by_step["worker-2.1.2"]
    assert parent.start_time <= child.start_time and child.end_time <= parent.end_time
    assert parent.attributes["swarmkit.worker.status"] == "completed"
    spans.clear()
    swarmkit.run_sync("Survey the vector databases", replay=str(cassette), history=False,
                      tracer_provider=provider)
    assert parents(spans.get_finished_spans()) == live
