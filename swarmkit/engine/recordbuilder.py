"""The sink that builds a :class:`RunRecord` from the engine's events."""

from __future__ import annotations

import bisect
import sys

from ..record.events import (
    BatchSubmitted,
    CallFinished,
    CallRetried,
    Event,
    PlanReady,
    PlanReviewed,
    ReducerStarted,
    RunFinished,
    RunStarted,
    ScoreRecorded,
    ToolCallFinished,
    WorkerFinished,
)
from ..record.rows import CallRecord, RetryRecord, ToolCallRecord, WorkerRecord
from ..record.runrecord import RunRecord

__all__ = ["RunRecordBuilder"]


def _worker_index(record: WorkerRecord) -> int:
    return record.index


# Calls, retries and tool calls are kept in start order, not in the order they finished:
# finishing order depends on scheduling, start times are what a replay reproduces, so
# every table and chart of a replayed run lists them exactly as the recording did.
def _call_order(record: CallRecord) -> tuple[float, str]:
    return record.started, record.step


def _retry_order(record: RetryRecord) -> tuple[float, str, int]:
    return record.t, record.step, record.attempt


def _tool_order(record: ToolCallRecord) -> tuple[float, int, int, str]:
    return record.started, record.worker, record.hop, record.call_id


# The Run keeps each word its records repeat once. In one process a record's role, model,
# source, status, finish reason and task are the engine's own strings, shared already.
# A record that crossed a process (a shard's, unpickled) brings its own copies: of the
# words once per batch it came in, and of its sub-task always (about 100 bytes a worker,
# the plan holds the same text). Swapping a field for an equal string changes no value,
# so the frozen records are given the shared one.
def _shared_call(record: CallRecord) -> None:
    for name in ("role", "model", "source", "finish_reason"):
        text = getattr(record, name)
        if text is not None:
            shared = sys.intern(text)
            if shared is not text:
                object.__setattr__(record, name, shared)


def _shared_worker(record: WorkerRecord, plan: list[str]) -> None:
    shared = sys.intern(record.status)
    if shared is not record.status:
        object.__setattr__(record, "status", shared)
    if record.reason is not None:
        reason = sys.intern(record.reason)
        if reason is not record.reason:
            object.__setattr__(record, "reason", reason)
    # Its sub-task is the plan's, which the Run keeps anyway.
    if 0 < record.index <= len(plan):
        task = plan[record.index - 1]
        if task is not record.task and task == record.task:
            object.__setattr__(record, "task", task)


class RunRecordBuilder:
    """The sink that turns events into a ``RunRecord``; the only writer of its fields."""

    def __init__(self, record_type: type[RunRecord] = RunRecord,
                 checks: tuple[object, ...] = ()) -> None:
        # The class to build: the user-facing ``swarmkit.Run`` when the caller is the api.
        self.record_type = record_type
        self.checks = checks  # the engine's checks, kept on the record for an export
        self.run: RunRecord | None = None

    def on_event(self, event: Event) -> None:
        if isinstance(event, RunStarted):
            self.run = self.record_type(event.run_id, event.task, event.config, event.started_at)
            self.run.checks = self.checks
            return
        run = self.run
        if run is None:
            return
        match event:
            case PlanReady():
                run.plan, run.plan_raw = list(event.tasks), event.raw
            case PlanReviewed():
                run.review = event.review
            case CallFinished():
                _shared_call(event.call)
                bisect.insort(run.calls, event.call, key=_call_order)
            case CallRetried():
                retry = RetryRecord(event.step, event.attempt, event.error, event.status, event.t)
                bisect.insort(run.retries, retry, key=_retry_order)
            case ReducerStarted():
                run.reduced = list(event.inputs)
            case ToolCallFinished():
                bisect.insort(run.tool_calls, event.tool_call, key=_tool_order)
            case WorkerFinished() if event.worker.parent is None:
                # A child's record reaches the Run inside its parent's (``children``):
                # the parent always finishes after its children, with every one of them.
                _shared_worker(event.worker, run.plan)
                bisect.insort(run.workers, event.worker, key=_worker_index)
            case BatchSubmitted():
                run.batches.append(event.batch)
            case ScoreRecorded():
                run.scores = (*run.scores, event.score)  # in the order they were scored
            case RunFinished():
                run.status, run.answer, run.error = event.status, event.answer, event.error
                run.duration = event.duration
            case _:
                pass
