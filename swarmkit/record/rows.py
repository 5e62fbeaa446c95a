"""Rows of a Run: one model call, one tool call, one worker. Frozen, JSON round-trippable."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Literal

from .fileshapes import (
    Cost,
    Count,
    Depth,
    Fraction,
    JSONObject,
    JSONValue,
    Schema,
    Seconds,
    WorkerId,
)
from .modelcall import CallSource
from .steps import worker_id, worker_step
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

    # planner | worker-<i> | reducer-<level>.<i> (a part) | reducer | judge-<i>, and in a
    # tree (depth > 1): worker-<dotted id> (worker-2.1) | reducer-of-<dotted id> (the
    # reducer of that worker's child swarm)
    step: str
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
    # In a tree (depth > 1): the dotted id of the worker's parent, so ``worker`` is its
    # index among its siblings and ``worker_id`` its whole id. None at the top level, and
    # then left out of the JSON.
    parent: WorkerId | None = None

    @property
    def worker_id(self) -> str:
        """The dotted id of the worker that called the tool (``"2"``, ``"2.1"``)."""
        return str(self.worker) if self.parent is None else f"{self.parent}.{self.worker}"

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
            **({} if self.parent is None else {"parent": self.parent}),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ToolCallRecord:
        return Schema(cls).validate(data)


@dataclass(frozen=True, slots=True)
class WorkerRecord:
    """A worker's final state. ``reason`` holds the detail: budget, tools, provider, ...

    Like a CallRecord's, ``usage.cost`` is always ``cost_usd``.

    **The tree (``depth`` > 1; the contract the views read).** A worker below the run's
    ``depth`` may split its sub-task (the ``split_task`` tool) into a child swarm:

    - ``children``: the child WorkerRecords, in index order; empty when it did not split
      (always, at depth 1). A child has the same fields, its own ``children`` included.
    - ``depth``: 1 for the plan's workers, the parent's + 1 for a child.
    - ``parent``: the parent's dotted id (``"2"``, ``"2.1"``); None at the top level.
    - ``index``: the position among its siblings, from 1 (a top-level worker's index is
      its place in the plan, as always); ``id`` is the whole dotted id: ``"2"`` for a
      top-level worker, ``"2.1"``, ``"2.1.3"`` below it. ``RunRecord.workers`` holds the
      top level only; ``walk()`` gives a worker and every descendant, depth first;
      ``RunRecord.walk()`` every worker of the run, ``RunRecord.worker("2.1")`` one.
    - Its figures (``usage``, ``cost_usd``, ``calls``, ``attempts``, ``cached_calls``,
      ``tool_calls``) are its *own* calls: its turns (the split call among them) and its
      split's reducer call (step ``reducer-of-<id>``, role ``reducer``), not its
      children's, which are in their own records; so a run's cost is its planner's,
      reducer's and judge's calls plus the sum of ``own`` figures over every ``walk()``.
      Its ``started``/``latency`` span its own calls, so they cover its children's time.
    - ``completed (budget)``: a worker whose split was merged but whose own answer on top
      did not fit the budget; its ``output`` is its child swarm's merged answer.
    - Steps: a worker's calls are ``worker-<id>`` (``worker-2.1``); the split's reducer
      is ``reducer-of-<id>``. The split itself is a ``ToolCallRecord`` of the parent
      (tool ``split_task``, result: the child reducer's answer with any cut noted).
    - Events: ``WorkerStarted.parent`` / ``WorkerFinished.worker.parent`` say where a
      child belongs; ``WorkerSplit`` announces a split's (capped) sub-tasks before its
      children start. The parent's ``WorkerFinished`` carries the finished subtree, and
      only top-level ``WorkerFinished`` events add to ``RunRecord.workers``.
    - JSON: ``children``, ``depth`` and ``parent`` are written only when set (non-empty,
      not 1, not None), so a depth-1 run's JSON is byte-identical to earlier swarmkits'
      and older files load unchanged.
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
    # The tree (see the class docstring); older files and depth-1 runs have none.
    depth: Depth = 1
    parent: WorkerId | None = None
    children: tuple[WorkerRecord, ...] = ()
    # The shard (a Ray actor of a cluster run, swarmkit.cluster) that ran it, from 0;
    # None in one process, and then left out of the JSON.
    shard: Count | None = None

    def __post_init__(self) -> None:
        _priced(self)

    @property
    def id(self) -> str:
        """The dotted worker id: ``"2"`` at the top level, ``"2.1"``, ``"2.1.3"`` below."""
        return worker_id(self.parent, self.index)

    @property
    def step(self) -> str:
        """The step id of this worker's calls (``worker-2.1``)."""
        return worker_step(self.id)

    def walk(self) -> Iterator[WorkerRecord]:
        """This worker, then each of its descendants, depth first, in index order."""
        yield self
        for child in self.children:
            yield from child.walk()

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
            **({} if self.depth == 1 else {"depth": self.depth}),
            **({} if self.parent is None else {"parent": self.parent}),
            **({"children": [c.to_dict() for c in self.children]} if self.children else {}),
            **({} if self.shard is None else {"shard": self.shard}),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> WorkerRecord:
        return Schema(cls).validate(data)
