"""A run's spans, end to end: the real openai client against FakeServer, a 429 that is
retried, a worker that calls a tool, and the OpenTelemetry SDK's in-memory exporter.

The provider is passed with ``tracer_provider=`` (the global one can be set only once
per process; tests/telemetry/test_enable.py sets it in subprocesses)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

import swarmkit
from swarmkit.api.result import Run
from swarmkit.testing import FakeReply, FakeRequest, FakeServer, Fault, FaultRule, split_script
from swarmkit.tools import tool
from tests.support.fakekey import FAKE_KEY, KEY_ENV, MODEL, run_options

pytestmark = pytest.mark.usefixtures("fake_key")

# Text that only a prompt, a completion or a tool's arguments and result contain.
TASK = "Check the orders of customer PROMPT-7731"
PLAN = ["look up order A-17 for PROMPT-7731", "summarise order B-42 for PROMPT-7731"]
CONTENT = ("PROMPT-7731", "COMPLETION-5150", "TOOLRESULT-2718", "A-17")


@tool
def lookup(order_id: str) -> dict[str, str]:
    """Look up an order.

    Args:
        order_id: The order's id.
    """
    return {"order_id": order_id, "status": "shipped TOOLRESULT-2718"}


def handler(request: FakeRequest) -> FakeReply:
    if request.role == "planner":
        return FakeReply(content=json.dumps({"tasks": PLAN}))
    if request.role == "reducer":
        return FakeReply(content="merged COMPLETION-5150")
    if request.step == "worker-1" and not any(m.get("role") == "tool" for m in request.messages):
        return FakeReply(tool_calls=[("lookup", {"order_id": "A-17"})])
    return FakeReply(content=f"{request.step} done COMPLETION-5150")


@pytest.fixture
def exporter() -> Iterator[tuple[TracerProvider, InMemorySpanExporter]]:
    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    yield provider, spans
    provider.shutdown()


def traced_run(provider: TracerProvider, **extra: Any) -> Run:
    """Two workers: worker-1 calls ``lookup``, worker-2's first attempt gets a 429."""
    with FakeServer(handler, faults=[
        FaultRule(Fault.rate_limit(retry_after=0), step="worker-2", attempts=1),
    ]) as server:
        run = swarmkit.run_sync(TASK, **run_options(
            server, history=False, tools=[lookup], concurrency=2, tracer_provider=provider,
            **extra))
    assert not server.handler_errors
    assert server.count("worker-2") == 2
    return run


def by_op(spans: tuple[ReadableSpan, ...], op: str) -> list[ReadableSpan]:
    found = [s for s in spans if s.attributes.get("gen_ai.operation.name") == op]
    return sorted(found, key=lambda s: s.start_time or 0)


def every_text(span: ReadableSpan) -> str:
    """Everything a span carries that an exporter sends, as one text."""
    parts: list[Any] = [span.name, span.status.description, dict(span.attributes or {})]
    parts += [(e.name, dict(e.attributes or {})) for e in span.events]
    parts += [dict(link.attributes or {}) for link in span.links]
    parts.append(dict(span.resource.attributes))
    return repr(parts)


def test_the_span_tree_of_a_run_with_a_retry_and_a_tool_call(
    exporter: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    provider, spans_out = exporter
    run = traced_run(provider, otel=True)
    assert run.status == "completed" and len(run.retries) == 1
    spans = spans_out.get_finished_spans()

    [root] = [s for s in spans if s.parent is None]
    assert root.name == "invoke_workflow swarmkit" and root.kind is SpanKind.INTERNAL
    assert root.attributes["gen_ai.operation.name"] == "invoke_workflow"
    assert root.attributes["swarmkit.run_id"] == run.run_id
    assert root.attributes["swarmkit.status"] == "completed"
    assert root.attributes["gen_ai.usage.input_tokens"] == run.usage.prompt_tokens
    assert root.attributes["gen_ai.usage.output_tokens"] == run.usage.completion_tokens
    assert root.attributes["swarmkit.cost_usd"] == pytest.approx(float(run.cost_usd))
    assert {s.context.trace_id for s in spans} == {root.context.trace_id}

    steps = {s.attributes["swarmkit.step"]: s for s in by_op(spans, "invoke_agent")}
    assert set(steps) == {"planner", "worker-1", "worker-2", "reducer"}
    for name, step in steps.items():
        assert step.parent.span_id == root.context.span_id
        assert step.name == f"invoke_agent {name.split('-')[0]}"
        assert step.attributes["gen_ai.provider.name"] == "openai"
        assert step.attributes["swarmkit.run_id"] == run.run_id
    for worker in run.workers:
        span = steps[f"worker-{worker.index}"]
        assert span.attributes["gen_ai.usage.input_tokens"] == worker.usage.prompt_tokens
        assert span.attributes["gen_ai.usage.output_tokens"] == worker.usage.completion_tokens
        assert span.attributes["swarmkit.worker.status"] == "completed"

    # Every model call attempt is a chat span under its step: worker-1 made two calls
    # (the tool turn, then the answer); worker-2's one call took two attempts.
    attempts = by_op(spans, "chat")
    per_step = {name: [a for a in attempts if a.attributes["swarmkit.step"] == name]
                for name in steps}
    assert {name: len(found) for name, found in per_step.items()} == {
        "planner": 1, "worker-1": 2, "worker-2": 2, "reducer": 1}
    for name, found in per_step.items():
        for attempt in found:
            assert attempt.parent.span_id == steps[name].context.span_id
            assert attempt.kind is SpanKind.CLIENT and attempt.name == f"chat {MODEL}"
            assert attempt.attributes["gen_ai.request.model"] == MODEL
            assert attempt.attributes["server.address"] == "127.0.0.1"
    failed, retried = per_step["worker-2"]
    assert failed.attributes["error.type"] == "429"
    assert failed.status.status_code is StatusCode.ERROR
    assert "gen_ai.usage.input_tokens" not in failed.attributes
    assert [failed.attributes["swarmkit.attempt"], retried.attributes["swarmkit.attempt"]] \
        == [1, 2]
    assert failed.end_time <= retried.start_time
    assert "error.type" not in retried.attributes
    assert retried.status.status_code is StatusCode.UNSET

    # The final attempt of each call carries that call's record: tokens, cost, source.
    finals = [a for a in attempts if "error.type" not in a.attributes]
    assert len(finals) == len(run.calls) == 5
    for call in run.calls:
        [span] = [a for a in finals if a.attributes["swarmkit.step"] == call.step
                  and a.start_time >= steps[call.step].start_time
                  and a.attributes["gen_ai.usage.input_tokens"] == call.usage.prompt_tokens]
        assert span.attributes["gen_ai.usage.output_tokens"] == call.usage.completion_tokens
        assert span.attributes["gen_ai.response.model"] == MODEL
        assert span.attributes["swarmkit.source"] == "live"
        assert span.attributes["swarmkit.cost_usd"] == pytest.approx(float(call.cost_usd))

    [tool_span] = by_op(spans, "execute_tool")
    [record] = run.tool_calls
    assert tool_span.name == "execute_tool lookup"
    assert tool_span.parent.span_id == steps["worker-1"].context.span_id
    assert tool_span.attributes["gen_ai.tool.name"] == "lookup"
    assert tool_span.attributes["gen_ai.tool.call.id"] == record.call_id
    assert tool_span.attributes["swarmkit.step"] == "worker-1"

    # Explicit times from the events: every span lies within its parent.
    by_id = {s.context.span_id: s for s in spans}
    for span in spans:
        assert span.start_time <= span.end_time
        if span.parent is not None:
            parent = by_id[span.parent.span_id]
            assert parent.start_time <= span.start_time <= span.end_time <= parent.end_time


def test_no_key_and_by_default_no_prompt_or_completion_in_any_span(
    exporter: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    provider, spans_out = exporter
    run = traced_run(provider)  # a tracer_provider alone turns traces on
    assert run.answer == "merged COMPLETION-5150" and run.tool_calls[0].result
    spans = spans_out.get_finished_spans()
    assert len(spans) == 12
    for span in spans:
        text = every_text(span)
        assert FAKE_KEY not in text and KEY_ENV not in text
        for marker in CONTENT:
            assert marker not in text, (span.name, marker)


def test_otel_content_puts_the_scrubbed_texts_in_the_spans(
    exporter: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    provider, spans_out = exporter
    run = traced_run(provider, otel=True, otel_content=True)
    spans = spans_out.get_finished_spans()
    assert all(FAKE_KEY not in every_text(span) for span in spans)
    [root] = [s for s in spans if s.parent is None]
    assert json.loads(root.attributes["gen_ai.input.messages"]) == [
        {"role": "user", "parts": [{"type": "text", "content": TASK}]}]
    assert json.loads(root.attributes["gen_ai.output.messages"])[0]["parts"][0]["content"] \
        == run.answer
    steps = {s.attributes["swarmkit.step"]: s for s in by_op(spans, "invoke_agent")}
    output = json.loads(steps["worker-2"].attributes["gen_ai.output.messages"])
    assert output[0]["parts"][0]["content"] == "worker-2 done COMPLETION-5150"
    assert PLAN[0] in steps["worker-1"].attributes["gen_ai.input.messages"]
    assert PLAN[0] in steps["planner"].attributes["gen_ai.output.messages"]
    [tool_span] = by_op(spans, "execute_tool")
    assert json.loads(tool_span.attributes["gen_ai.tool.call.arguments"]) == {"order_id": "A-17"}
    assert "TOOLRESULT-2718" in tool_span.attributes["gen_ai.tool.call.result"]


def test_otel_false_emits_nothing_even_with_a_provider(
    exporter: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    provider, spans_out = exporter
    traced_run(provider, otel=False)
    assert spans_out.get_finished_spans() == ()


def test_a_replayed_run_has_the_same_tree_from_its_recording(
    exporter: tuple[TracerProvider, InMemorySpanExporter], tmp_path: Any,
) -> None:
    """Replay emits no CallStarted: the attempts are laid out from the records and the
    recorded retry, and the spans say the calls came from the cassette."""
    provider, spans_out = exporter
    cassette = tmp_path / "run.swarm.json"
    recorded = traced_run(provider, otel=False, record=str(cassette))
    replayed = swarmkit.run_sync(TASK, replay=str(cassette), history=False, tools=[lookup],
                                 tracer_provider=provider)
    assert replayed.answer == recorded.answer
    spans = spans_out.get_finished_spans()
    steps = {s.attributes["swarmkit.step"]: s for s in by_op(spans, "invoke_agent")}
    attempts = by_op(spans, "chat")
    failed, retried = [a for a in attempts if a.attributes["swarmkit.step"] == "worker-2"]
    assert failed.attributes["error.type"] == "429" and "error.type" not in retried.attributes
    assert failed.end_time <= retried.start_time
    assert {a.attributes.get("swarmkit.source") for a in attempts} == {None, "replay"}
    assert len(attempts) == 6 and len(by_op(spans, "execute_tool")) == 1
    by_id = {s.context.span_id: s for s in spans}
    for span in spans:
        if span.parent is not None:
            parent = by_id[span.parent.span_id]
            assert parent.start_time <= span.start_time <= span.end_time <= parent.end_time
    assert set(steps) == {"planner", "worker-1", "worker-2", "reducer"}


def test_a_worker_that_fails_for_good_is_an_error_span_with_its_failed_attempts(
    exporter: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    provider, spans_out = exporter
    with FakeServer(handler, faults=[FaultRule(Fault.status(503), step="worker-2")]) as server:
        run = swarmkit.run_sync(TASK, **run_options(
            server, history=False, tools=[lookup], max_attempts=2, backoff_base=0.01,
            tracer_provider=provider))
    [failed_worker] = [w for w in run.workers if w.status == "failed"]
    spans = spans_out.get_finished_spans()
    steps = {s.attributes["swarmkit.step"]: s for s in by_op(spans, "invoke_agent")}
    worker = steps["worker-2"]
    assert worker.status.status_code is StatusCode.ERROR
    assert worker.status.description is None  # the message only with otel_content
    assert worker.attributes["error.type"] == failed_worker.reason == "provider"
    assert worker.attributes["swarmkit.worker.status"] == failed_worker.status
    attempts = [a for a in by_op(spans, "chat") if a.attributes["swarmkit.step"] == "worker-2"]
    assert [a.attributes["error.type"] for a in attempts] == ["503", "503"]
    assert all(a.parent.span_id == worker.context.span_id for a in attempts)
    [root] = [s for s in spans if s.parent is None]
    assert root.attributes["swarmkit.status"] == run.status


def test_the_judges_call_is_a_step_of_its_own_with_its_model(
    exporter: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    provider, spans_out = exporter
    with FakeServer() as server:
        run = swarmkit.run_sync(
            TASK, model=MODEL, base_url=server.base_url, api_key_env=KEY_ENV, history=False,
            workers=2, judge="judge-model", tracer_provider=provider, otel=True)
    assert run.scores[0].score == 0.8
    spans = spans_out.get_finished_spans()
    [judge] = [s for s in by_op(spans, "invoke_agent")
               if s.attributes["swarmkit.step"] == "judge-0"]
    assert judge.name == "invoke_agent judge"
    [attempt] = [s for s in by_op(spans, "chat") if s.attributes["swarmkit.step"] == "judge-0"]
    assert attempt.parent.span_id == judge.context.span_id
    assert attempt.name == "chat judge-model"
    assert attempt.attributes["gen_ai.request.max_tokens"] == 512


# -- a swarm of swarms (depth > 1): child spans under their parent worker's --------------

SPLITS = {"worker-2": ["Postgres", "Qdrant"], "worker-2.1": ["pgvector", "pgvecto.rs"]}


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
