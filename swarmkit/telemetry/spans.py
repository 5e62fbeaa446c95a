"""``SpanSink``: a run's events as OpenTelemetry spans.

The tree is run (``invoke_workflow``) → planner, each worker, the reducer
(``invoke_agent``) → each model call *attempt* (``chat``; a retried call is several
spans, the failed ones with ``error.type``) and each tool call (``execute_tool``, under
its worker). In a swarm of swarms (depth > 1) a worker that split is the parent of its
children's worker spans (``worker-2.1`` under ``worker-2``) and of its child swarm's
reducer (``reducer-of-2``): its span is started when the first of them ends, before its
own end is known, and ended with it.

Events arrive on the engine's loop, after the fact for cached and replayed calls, so
every span gets explicit start and end times from the events and records (seconds since
the run started, anchored to the wall clock when the run's first event
arrives). A step's spans are emitted together when the step ends: its window is then
known to cover its attempts and tool calls. In a replay the records carry the recorded
times while the steps' own events carry the replay's, so there the window comes from
the records alone.

Without ``content`` no prompt, completion, tool argument, tool result or error message
(which can quote a reply) is put on a span; with it, each text is scrubbed of secrets
first. An API key is never an attribute: the events carry only key variable names.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..credentials.scrub import one_line
from ..record.events import (
    CallFinished,
    CallRetried,
    CallStarted,
    Event,
    PlanReady,
    ReducerStarted,
    RunFinished,
    RunStarted,
    ToolCallFinished,
    WorkerFinished,
    WorkerStarted,
)
from ..record.rows import ToolCallRecord, WorkerRecord
from ..record.steps import (
    child_reducer_step,
    split_owner_of_step,
    worker_id_of_step,
    worker_step,
)
from ..record.usage import Usage
from .attributes import (
    OP_AGENT,
    OP_CHAT,
    OP_TOOL,
    OP_WORKFLOW,
    PROVIDER,
    WORKFLOW,
    call_attributes,
    error_type,
    input_messages,
    output_messages,
    request_attributes,
    role_of,
    scrubbed,
    usage_attributes,
)
from .loader import otel_trace

__all__ = ["SpanSink"]

# An error message on a span's status is cut to this many characters (content mode only).
_MESSAGE_CHARS = 500


@dataclass(slots=True)
class _Child:
    """An attempt or tool call span, kept until its step's span is emitted."""

    name: str
    kind: Any
    attributes: dict[str, Any]
    start: float
    end: float | None = None
    error: tuple[str | None, int | None, str | None] | None = None  # (text, status, type)


@dataclass(slots=True)
class _Step:
    """One step (planner, worker-3, reducer): its span's attributes and its children."""

    name: str
    start: float
    attributes: dict[str, Any]
    children: list[_Child] = field(default_factory=list)
    attempt: _Child | None = None  # the call attempt in flight, between CallStarted and its end
    retries: list[CallRetried] = field(default_factory=list)  # replayed: no CallStarted came
    error: tuple[str | None, int | None, str | None] | None = None
    span: Any = None  # started early: a worker whose children's spans nest under it


def _parent_step(name: str) -> str | None:
    """The step whose span a step's nests under, in a tree: ``worker-2`` for
    ``worker-2.1`` and for ``reducer-of-2``; None for a step of the run itself."""
    owner = split_owner_of_step(name)
    if owner is not None:
        return worker_step(owner)
    worker = worker_id_of_step(name)
    if worker is None or "." not in worker:
        return None
    return worker_step(worker.rpartition(".")[0])


class SpanSink:
    """The Sink that turns one run's events into spans on ``tracer``."""

    def __init__(self, tracer: Any, *, content: bool = False,
                 clock_ns: Callable[[], int] = time.time_ns) -> None:
        trace = otel_trace()
        self._tracer, self._content, self._clock_ns = tracer, content, clock_ns
        self._client, self._internal = trace.SpanKind.CLIENT, trace.SpanKind.INTERNAL
        self._status, self._error = trace.Status, trace.StatusCode.ERROR
        self._in_context = trace.set_span_in_context
        self._run: Any = None
        self._run_context: Any = None
        self._replay = False
        self._base_ns = 0
        self._ids: dict[str, Any] = {}
        self._config: dict[str, Any] = {}
        self._task = ""
        self._steps: dict[str, _Step] = {}
        self._usage = Usage()
        self._last = 0.0  # the latest end of any span emitted so far

    # -- events ----------------------------------------------------------------------------

    def on_event(self, event: Event) -> None:
        if isinstance(event, RunStarted):
            self._start_run(event)
            return
        if self._run is None:
            return
        match event:
            case CallStarted():
                step = self._step(event.step, event.t)
                self._close_attempt(step, event.t, "cancelled")  # never expected: no leak
                step.attempt = self._attempt(event.step, event.model, event.attempt, event.t)
                step.children.append(step.attempt)
            case CallRetried():
                step = self._step(event.step, event.t)
                if step.attempt is None:
                    step.retries.append(event)  # replayed: laid out when the call finishes
                else:
                    step.attempt.error = (event.error, event.status, None)
                    step.attempt.end, step.attempt = event.t, None
            case CallFinished():
                self._call_finished(event)
            case WorkerStarted():
                step = self._step(worker_step(event.worker_id), event.t)
                if self._content:
                    step.attributes["gen_ai.input.messages"] = input_messages(event.task)
            case ToolCallFinished():
                self._tool_call(event.tool_call)
            case WorkerFinished():
                self._worker_finished(event.worker, event.t)
            case PlanReady():
                self._plan_ready(event)
            case ReducerStarted():
                self._step("reducer", event.t).attributes["swarmkit.reducer.inputs"] = \
                    len(event.inputs)
            case RunFinished():
                self._finish_run(event)
            case _:
                pass

    # -- building --------------------------------------------------------------------------

    def _ns(self, t: float) -> int:
        return self._base_ns + round(t * 1e9)

    def _start_run(self, event: RunStarted) -> None:
        self._base_ns = self._clock_ns() - round(event.t * 1e9)
        self._ids = {"swarmkit.run_id": event.run_id}
        self._config, self._task = event.config, event.task
        self._replay = bool(event.config.get("replay"))
        attributes = {"gen_ai.operation.name": OP_WORKFLOW, "gen_ai.workflow.name": WORKFLOW,
                      **self._ids}
        if self._content:
            attributes["gen_ai.input.messages"] = input_messages(event.task)
        # No explicit parent: a run started inside an application's span nests under it.
        self._run = self._tracer.start_span(
            f"{OP_WORKFLOW} {WORKFLOW}", kind=self._internal, attributes=attributes,
            start_time=self._ns(event.t))
        self._run_context = self._in_context(self._run)
        self._last = event.t
        if not event.config.get("tasks"):
            # The planner starts with the run (its first attempt may wait for a client
            # or a rate limit); given tasks mean no planner at all.
            self._step("planner", event.t)

    def _step(self, name: str, t: float) -> _Step:
        """The step ``name``, begun at ``t`` by the first event that names it."""
        found = self._steps.get(name)
        if found is None:
            role = role_of(name)
            attributes: dict[str, Any] = {
                "gen_ai.operation.name": OP_AGENT, "gen_ai.provider.name": PROVIDER,
                "gen_ai.agent.name": role, **self._ids, "swarmkit.step": name}
            settings = self._config.get(role)
            if isinstance(settings, dict) and isinstance(settings.get("model"), str):
                attributes["gen_ai.request.model"] = settings["model"]
            if role == "planner" and self._content:
                attributes["gen_ai.input.messages"] = input_messages(self._task)
            found = self._steps[name] = _Step(name, t, attributes)
        return found

    def _attempt(self, step: str, model: str, attempt: int, t: float) -> _Child:
        return _Child(f"{OP_CHAT} {model}", self._client, {
            "gen_ai.operation.name": OP_CHAT, "gen_ai.provider.name": PROVIDER,
            "gen_ai.request.model": model, **request_attributes(self._config, role_of(step)),
            **self._ids, "swarmkit.step": step, "swarmkit.attempt": attempt}, t)

    def _call_finished(self, event: CallFinished) -> None:
        call = event.call
        step = self._step(call.step, call.started)
        attempt, end = step.attempt, event.t
        if attempt is None:
            # Served from the cache or a cassette: no CallStarted came, so the attempts
            # are laid out from the record (and the failed ones the cassette replayed).
            cursor = call.started
            for retry in step.retries:
                failed = self._attempt(call.step, call.model, retry.attempt, cursor)
                failed.error, failed.end = (retry.error, retry.status, None), max(retry.t, cursor)
                step.children.append(failed)
                cursor = max(retry.t + retry.delay, cursor)
            attempt = self._attempt(call.step, call.model, len(step.retries) + 1, cursor)
            step.children.append(attempt)
            step.retries.clear()
            end = max(call.started + call.latency, cursor)
        step.attempt, attempt.end = None, end
        attempt.attributes.update(call_attributes(call, event.response_model))
        if call.error is not None:
            attempt.error = (call.error, call.status, None)
        self._usage = self._usage + call.usage

    def _tool_call(self, record: ToolCallRecord) -> None:
        step = worker_step(record.worker_id)
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": OP_TOOL, "gen_ai.tool.name": record.tool,
            "gen_ai.tool.call.id": record.call_id, "gen_ai.tool.type": "function",
            **self._ids, "swarmkit.step": step, "swarmkit.tool.hop": record.hop,
            "swarmkit.source": record.source}
        if self._content:
            attributes["gen_ai.tool.call.arguments"] = scrubbed(record.arguments)
            if record.result is not None:
                attributes["gen_ai.tool.call.result"] = scrubbed(record.result)
        error = None if record.error is None else (record.error, None, None)
        self._step(step, record.started).children.append(_Child(
            f"{OP_TOOL} {record.tool}", self._internal, attributes, record.started,
            record.started + record.duration, error))

    def _worker_finished(self, worker: WorkerRecord, t: float) -> None:
        step = self._step(worker.step, t if worker.started is None else worker.started)
        step.attributes.update({
            "swarmkit.worker.status": worker.status, "swarmkit.calls": worker.calls,
            "swarmkit.tool_calls": worker.tool_calls,
            **usage_attributes(worker.usage, worker.cost_usd)})
        if self._content and worker.output is not None:
            step.attributes["gen_ai.output.messages"] = output_messages(worker.output)
        if worker.status == "failed":  # error.type: its reason (provider, budget, tools...)
            step.error = (worker.error, None, worker.reason or error_type(worker.error))
        recorded = None
        if worker.started is not None:
            recorded = (worker.started, worker.started + worker.latency)
        merge = self._steps.get(child_reducer_step(worker.id))
        if merge is not None:  # its child swarm's reducer: no event of its own ends it
            self._emit(merge, t)
        self._emit(step, t, recorded)

    def _plan_ready(self, event: PlanReady) -> None:
        step = self._steps.get("planner")
        if step is None:  # the user gave the tasks: no planner ran
            return
        step.attributes["swarmkit.plan.tasks"] = len(event.tasks)
        if self._content and event.raw:
            step.attributes["gen_ai.output.messages"] = output_messages(event.raw)
        if not event.tasks:
            step.error = (None, None, "PlanError")
        self._emit(step, event.t)

    def _close_attempt(self, step: _Step, t: float, why: str) -> None:
        if step.attempt is not None:
            step.attempt.error, step.attempt.end = (why, None, None), t
            step.attempt = None

    def _finish_run(self, event: RunFinished) -> None:
        failed = event.status in ("failed", "cancelled")
        kind = "cancelled" if event.status == "cancelled" else error_type(event.error)
        for step in list(self._steps.values()):
            if step.name == "reducer" and self._content and event.answer is not None:
                step.attributes["gen_ai.output.messages"] = output_messages(event.answer)
            if failed and step.error is None:
                step.error = (event.error, None, kind)
            self._emit(step, event.t)
        run = self._run
        run.set_attributes({"swarmkit.status": event.status,
                            **usage_attributes(self._usage, self._usage.cost)})
        if self._content and event.answer is not None:
            run.set_attribute("gen_ai.output.messages", output_messages(event.answer))
        if failed:
            self._fail(run, (event.error, None, kind))
        # A replay's events run on the replay's clock; its recorded duration is the run's.
        end = max(self._last, event.duration if self._replay else event.t)
        run.end(self._ns(end))
        self._run = self._run_context = None

    # -- emitting --------------------------------------------------------------------------

    def _emit(self, step: _Step, t: float, recorded: tuple[float, float] | None = None) -> None:
        """The step's span and its children's, with a window that covers them all."""
        del self._steps[step.name]
        self._close_attempt(step, t, "cancelled")
        children = step.children
        if self._replay:
            # Only the records carry the recorded times: the window is theirs.
            bounds = [(c.start, c.end if c.end is not None else c.start) for c in children]
            if recorded is not None:
                bounds.append(recorded)
            start = min((b[0] for b in bounds), default=step.start)
            end = max((b[1] for b in bounds), default=start)
        else:
            start = min([step.start, *(c.start for c in children)])
            end = max([t, *(c.end for c in children if c.end is not None)])
        span = step.span
        if span is None:
            span = self._tracer.start_span(
                f"{OP_AGENT} {step.attributes['gen_ai.agent.name']}",
                context=self._parent_context(step.name), kind=self._internal,
                attributes=step.attributes, start_time=self._ns(start))
        else:  # started early, for its children: its attributes are known only now
            span.set_attributes(step.attributes)
        context = self._in_context(span)
        for child in children:
            child_span = self._tracer.start_span(
                child.name, context=context, kind=child.kind, attributes=child.attributes,
                start_time=self._ns(child.start))
            if child.error is not None:
                self._fail(child_span, child.error)
            child_span.end(self._ns(child.start if child.end is None else child.end))
        if step.error is not None:
            self._fail(span, step.error)
        span.end(self._ns(end))
        self._last = max(self._last, end)

    def _parent_context(self, name: str) -> Any:
        """Where step ``name``'s span goes: under its parent worker's span in a tree
        (started now if it was not: the parent ends after its children), else the run's."""
        parent_name = _parent_step(name)
        parent = None if parent_name is None else self._steps.get(parent_name)
        if parent is None:
            return self._run_context
        if parent.span is None:
            parent.span = self._tracer.start_span(
                f"{OP_AGENT} {parent.attributes['gen_ai.agent.name']}",
                context=self._parent_context(parent.name), kind=self._internal,
                attributes=parent.attributes, start_time=self._ns(parent.start))
        return self._in_context(parent.span)

    def _fail(self, span: Any, error: tuple[str | None, int | None, str | None]) -> None:
        """``error.type`` and an ERROR status; the message (which can quote a reply or
        a tool's arguments) only with content, scrubbed."""
        text, status, kind = error
        span.set_attribute("error.type", kind or error_type(text, status))
        message = one_line(scrubbed(text), _MESSAGE_CHARS) if self._content and text else None
        span.set_status(self._status(self._error, message))
