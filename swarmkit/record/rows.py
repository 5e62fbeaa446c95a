"""Rows of a Run: one model call, one tool call, one worker. Frozen, JSON round-trippable."""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Literal

from .fileshapes import Cost, Count, Fraction, JSONObject, JSONValue, Schema, Seconds
from .modelcall import CallSource
from .usage import Usage

__all__ = [
    "CUT_FINISH_REASON",
    "BatchRecord",
    "CallRecord",
    "RetryRecord",
    "ScoreKind",
    "ScoreRecord",
    "ToolCallRecord",
    "WorkerRecord",
    "WorkerStatus",
    "decimal_or_none",
    "reducer_part_of_step",
    "worker_of_step",
]

# The finish reason of an answer that hit its max tokens (OpenAI's and every compatible
# server's word for it).
CUT_FINISH_REASON = "length"

WorkerStatus = Literal["pending", "running", "completed", "failed", "skipped", "cancelled"]
ScoreKind = Literal["check", "judge"]


def decimal_or_none(value: Any) -> Decimal | None:
    return None if value is None else Decimal(str(value))


def _str_or_none(value: Decimal | None) -> str | None:
    return None if value is None else str(value)


def worker_of_step(step: str) -> int | None:
    """The worker index of a step id such as ``worker-7``; None for planner and reducer."""
    if step.startswith("worker-") and step[7:].isdigit():
        return int(step[7:])
    return None


def reducer_part_of_step(step: str) -> tuple[int, int] | None:
    """``(level, index)`` of a reducer part such as ``reducer-1.3`` (a tree reduction's
    step); None for any other step, the final ``reducer`` included."""
    if not step.startswith("reducer-"):
        return None
    level, dot, index = step[8:].partition(".")
    if dot and level.isdigit() and index.isdigit():
        return int(level), int(index)
    return None


def _priced(record: CallRecord | WorkerRecord) -> None:
    """Keep ``record.usage.cost`` equal to its stored ``cost_usd`` (the one JSON field)."""
    usage = record.usage
    if usage.cost != record.cost_usd:
        # Built directly, not with dataclasses.replace: every record read from a file
        # passes here, and replace() would double what reading a run costs.
        priced = Usage(usage.prompt_tokens, usage.completion_tokens, usage.cached_tokens,
                       usage.reasoning_tokens, usage.requests, record.cost_usd)
        object.__setattr__(record, "usage", priced)


@dataclass(frozen=True, slots=True)
class CallRecord:
    """One logical model call (all its attempts), as the tables and history show it.

    ``usage.cost`` is always ``cost_usd``: sums of usages carry the cost with them, and
    the JSON form keeps cost in its own ``cost_usd`` field, as files always had it.
    """

    step: str  # planner | worker-<i> | reducer-<level>.<i> (a part) | reducer
    role: str
    model: str
    source: CallSource
    usage: Usage
    cost_usd: Cost
    started: Seconds  # seconds since run start
    latency: Seconds
    attempts: Count
    fingerprint: str
    occurrence: Count = 0
    error: str | None = None
    status: Count | None = None  # HTTP status of the final failure, if any
    # Why the model stopped ("stop", "length", "tool_calls", ...), as the server said;
    # None for a failed call, a server that does not say, or a file older than the field.
    finish_reason: str | None = None
    # The messages sent and the text answered, kept only for the calls whose prompt is no
    # pure function of the run's config, task and plan (the judge's, which holds the
    # answer it scores): the drill-down shows them. None for every other call.
    messages: tuple[JSONObject, ...] | None = None
    output: str | None = None

    def __post_init__(self) -> None:
        _priced(self)

    @property
    def cut(self) -> bool:
        """The answer ended at the call's max tokens (``finish_reason`` ``length``): its
        text may stop mid-sentence."""
        return self.finish_reason == CUT_FINISH_REASON

    @property
    def retries(self) -> int:
        """The attempts past the first; a call served from the cache or a cassette made
        none (so attempts - calls would go negative)."""
        return max(0, self.attempts - 1)

    @property
    def ok(self) -> bool:
        return self.error is None

    def to_dict(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "role": self.role,
            "model": self.model,
            "source": self.source,
            "usage": self.usage.to_dict(),
            "cost_usd": _str_or_none(self.cost_usd),
            "started": self.started,
            "latency": self.latency,
            "attempts": self.attempts,
            "fingerprint": self.fingerprint,
            "occurrence": self.occurrence,
            "error": self.error,
            "status": self.status,
            # Written when known: a record without it reads back the same (None).
            **({} if self.finish_reason is None else {"finish_reason": self.finish_reason}),
            **({} if self.messages is None else {"messages": list(self.messages)}),
            **({} if self.output is None else {"output": self.output}),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CallRecord:
        """Checked against the field types; pydantic's ValidationError if it does not fit."""
        return Schema(cls).validate(data)


@dataclass(frozen=True, slots=True)
class ScoreRecord:
    """One score of a run: a check's (``kind`` "check") or the judge's ("judge").

    ``score`` is from 0 (failed) to 1 (passed); None when there is no score at all (the
    judge's reply held none, or its call failed: ``error`` says why; unknown is not 0).
    A check that raised scores 0 with its error. ``step`` is the judge's call
    (``judge-<i>``); None for a check.
    """

    name: str
    score: Fraction | None
    reason: str | None
    kind: ScoreKind
    error: str | None = None
    step: str | None = None

    @property
    def passed(self) -> bool:
        """A full score (1.0): a check that passed, a judge's 10 out of 10."""
        return self.score == 1.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "score": self.score,
            "reason": self.reason,
            "kind": self.kind,
            "error": self.error,
            "step": self.step,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ScoreRecord:
        """Checked against the field types; pydantic's ValidationError if it does not fit."""
        return Schema(cls).validate(data)


@dataclass(frozen=True, slots=True)
class BatchRecord:
    """One Batch API batch a run submitted (``--batch``): workers ``first``..``last``.

    Saved with the run as soon as it exists, so a resume (even in another process)
    polls it instead of submitting the workers again.
    """

    batch_id: str
    first: Count
    last: Count

    def to_dict(self) -> dict[str, Any]:
        return {"batch_id": self.batch_id, "first": self.first, "last": self.last}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BatchRecord:
        return Schema(cls).validate(data)


@dataclass(frozen=True, slots=True)
class RetryRecord:
    """One failed attempt that was retried."""

    step: str
    attempt: Count
    error: str
    status: Count | None
    t: Seconds

    def to_dict(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "attempt": self.attempt,
            "error": self.error,
            "status": self.status,
            "t": self.t,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RetryRecord:
        return Schema(cls).validate(data)


@dataclass(frozen=True, slots=True)
class ToolCallRecord:
    """One tool execution requested by a worker's model."""

    worker: Count
    hop: Count
    call_id: str
    tool: str
    arguments: str
    result: str | None
    error: str | None
    started: Seconds
    duration: Seconds
    source: CallSource = "live"

    def to_dict(self) -> dict[str, Any]:
        return {
            "worker": self.worker,
            "hop": self.hop,
            "call_id": self.call_id,
            "tool": self.tool,
            "arguments": self.arguments,
            "result": self.result,
            "error": self.error,
            "started": self.started,
            "duration": self.duration,
            "source": self.source,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ToolCallRecord:
        return Schema(cls).validate(data)


@dataclass(frozen=True, slots=True)
class WorkerRecord:
    """A worker's final state. ``reason`` holds the detail: budget, tools, provider, ...

    Like a CallRecord's, ``usage.cost`` is always ``cost_usd``.
    """

    index: Count
    task: str
    status: WorkerStatus
    reason: str | None = None
    output: str | None = None
    usage: Usage = field(default_factory=Usage)
    cost_usd: Cost = Decimal(0)
    started: Seconds | None = None
    latency: Seconds = 0.0
    attempts: Count = 0
    calls: Count = 0
    tool_calls: Count = 0
    cached_calls: Count = 0
    error: str | None = None
    # The reply parsed and checked against the run's output schema (--schema), as JSON
    # values; None without a schema. Older files have no such key.
    data: JSONValue = None
    # The shard (a Ray actor of a cluster run, swarmkit.cluster) that ran it, from 0;
    # None in one process, and then left out of the JSON.
    shard: Count | None = None

    def __post_init__(self) -> None:
        _priced(self)

    @property
    def status_label(self) -> str:
        return f"{self.status} ({self.reason})" if self.reason else self.status

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "task": self.task,
            "status": self.status,
            "reason": self.reason,
            "output": self.output,
            "usage": self.usage.to_dict(),
            "cost_usd": _str_or_none(self.cost_usd),
            "started": self.started,
            "latency": self.latency,
            "attempts": self.attempts,
            "calls": self.calls,
            "tool_calls": self.tool_calls,
            "cached_calls": self.cached_calls,
            "error": self.error,
            **({} if self.data is None else {"data": self.data}),
            **({} if self.shard is None else {"shard": self.shard}),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> WorkerRecord:
        return Schema(cls).validate(data)
