"""Events: small frozen dataclasses, one per thing that happens in a run, and the Sink seam.

The engine emits them in order on its event loop; sinks (the Run recorder, the live
dashboard, the history writer, the CLI progress line) receive every one. A sink must be
quick and must never call back into the engine.

``t`` on each event is seconds since the run started. In replay it comes from the
recording, so a replayed run shows the same figures.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Literal, Protocol, runtime_checkable

from .review import PlanReview
from .rows import BatchRecord, CallRecord, ScoreRecord, ToolCallRecord, WorkerRecord
from .steps import worker_id as dotted_id

__all__ = [
    "BatchSubmitted",
    "BatchUpdated",
    "BudgetUpdated",
    "CallFinished",
    "CallRetried",
    "CallStarted",
    "ConcurrencyChanged",
    "Event",
    "PlanReady",
    "PlanReviewed",
    "RateLimitWait",
    "ReducerDelta",
    "ReducerStarted",
    "RunFinished",
    "RunStarted",
    "ScoreRecorded",
    "Sink",
    "ToolCallFinished",
    "WorkerFinished",
    "WorkerSplit",
    "WorkerStarted",
]


@dataclass(frozen=True, slots=True)
class RunStarted:
    run_id: str
    task: str
    config: dict[str, Any]
    started_at: str  # ISO-8601 UTC
    t: float = 0.0
    kind: Literal["run_started"] = "run_started"


@dataclass(frozen=True, slots=True)
class PlanReady:
    tasks: tuple[str, ...]
    raw: str
    t: float
    truncated_from: int | None = None  # the planner's count when it was cut to max_workers
    kind: Literal["plan_ready"] = "plan_ready"


@dataclass(frozen=True, slots=True)
class PlanReviewed:
    """The plan that runs was reviewed first (``swarmkit.plan``, ``--confirm-over``, the
    notebook's review): right after its PlanReady, which holds the approved sub-tasks."""

    review: PlanReview
    t: float
    kind: Literal["plan_reviewed"] = "plan_reviewed"


@dataclass(frozen=True, slots=True)
class CallStarted:
    step: str
    attempt: int
    model: str
    t: float
    kind: Literal["call_started"] = "call_started"


@dataclass(frozen=True, slots=True)
class CallRetried:
    step: str
    attempt: int  # the attempt that failed
    error: str
    delay: float
    status: int | None
    t: float
    kind: Literal["call_retried"] = "call_retried"


@dataclass(frozen=True, slots=True)
class RateLimitWait:
    step: str
    waiting: bool
    t: float
    kind: Literal["rate_limit_wait"] = "rate_limit_wait"


@dataclass(frozen=True, slots=True)
class ConcurrencyChanged:
    endpoint: str
    limit: int
    reason: str
    t: float
    kind: Literal["concurrency_changed"] = "concurrency_changed"


@dataclass(frozen=True, slots=True)
class CallFinished:
    call: CallRecord
    t: float
    kind: Literal["call_finished"] = "call_finished"
    # The model the server says answered (``gen_ai.response.model`` in a trace); None
    # for a failed call or a server that does not say.
    response_model: str | None = None


@dataclass(frozen=True, slots=True)
class BudgetUpdated:
    spent_usd: Decimal
    reserved_usd: Decimal
    cap_usd: Decimal | None
    spent_tokens: int
    t: float
    kind: Literal["budget_updated"] = "budget_updated"


@dataclass(frozen=True, slots=True)
class WorkerStarted:
    """A worker took its slot. In a tree, ``index`` is its place among its siblings and
    ``parent`` its parent's dotted id (None at the top level): see ``WorkerRecord``."""

    index: int
    task: str
    t: float
    kind: Literal["worker_started"] = "worker_started"
    parent: str | None = None

    @property
    def worker_id(self) -> str:
        """The dotted id of the worker (``"2"``, ``"2.1"``)."""
        return dotted_id(self.parent, self.index)


@dataclass(frozen=True, slots=True)
class WorkerSplit:
    """Worker ``parent`` (a dotted id) called ``split_task``: its child swarm's sub-tasks,
    after the caps, are ``tasks`` (children ``<parent>.1`` .. ``<parent>.<n>``, about to
    start); ``asked`` is how many the model asked for (more than ``len(tasks)`` when a cap
    cut the split, and ``cut_by`` names it: ``max_children`` or ``max_total_workers``)."""

    parent: str
    tasks: tuple[str, ...]
    asked: int
    t: float
    cut_by: str | None = None
    kind: Literal["worker_split"] = "worker_split"


@dataclass(frozen=True, slots=True)
class ToolCallFinished:
    tool_call: ToolCallRecord
    t: float
    kind: Literal["tool_call_finished"] = "tool_call_finished"


@dataclass(frozen=True, slots=True)
class WorkerFinished:
    """A worker reached a final status: completed, failed, skipped or cancelled."""

    worker: WorkerRecord
    t: float
    kind: Literal["worker_finished"] = "worker_finished"


@dataclass(frozen=True, slots=True)
class BatchSubmitted:
    """The workers ``batch.first``..``batch.last`` went to the Batch API as one batch
    (or a resumed run took an earlier run's batch over)."""

    batch: BatchRecord
    t: float
    kind: Literal["batch_submitted"] = "batch_submitted"


@dataclass(frozen=True, slots=True)
class BatchUpdated:
    """A batch's status as the server reported it: validating, in_progress, finalizing,
    then completed, failed, expired or cancelled; counts are its request_counts."""

    batch_id: str
    status: str
    total: int
    completed: int
    failed: int
    t: float
    kind: Literal["batch_updated"] = "batch_updated"


@dataclass(frozen=True, slots=True)
class ReducerStarted:
    inputs: tuple[int, ...]  # indexes of the workers whose output the reducer receives
    t: float
    # Past the reducer's input limit the outputs are merged in this many parts first
    # (steps reducer-1.1, reducer-1.2, ...); 0: one reducer call over them all.
    parts: int = 0
    kind: Literal["reducer_started"] = "reducer_started"


@dataclass(frozen=True, slots=True)
class ReducerDelta:
    """A piece of the reducer's streamed answer.

    A delta whose ``attempt`` differs from the previous one starts the text over: the
    earlier attempt's stream was cut off and the call is being retried from the start.
    """

    text: str
    t: float
    attempt: int = 1
    kind: Literal["reducer_delta"] = "reducer_delta"


@dataclass(frozen=True, slots=True)
class ScoreRecorded:
    """A check or the judge scored the run's answer (after the reducer, before
    RunFinished): one event per check, one per answer judged."""

    score: ScoreRecord
    t: float
    kind: Literal["score_recorded"] = "score_recorded"


@dataclass(frozen=True, slots=True)
class RunFinished:
    """The last event of every run, whatever its outcome."""

    # "planned": the end of a dry-run (Engine.plan_only), whose plan is all it made.
    status: Literal["completed", "partial", "stopped", "failed", "cancelled", "planned"]
    answer: str | None
    error: str | None
    duration: float
    t: float
    kind: Literal["run_finished"] = "run_finished"


Event = (
    RunStarted
    | PlanReady
    | PlanReviewed
    | CallStarted
    | CallRetried
    | RateLimitWait
    | ConcurrencyChanged
    | CallFinished
    | BudgetUpdated
    | WorkerStarted
    | WorkerSplit
    | ToolCallFinished
    | WorkerFinished
    | BatchSubmitted
    | BatchUpdated
    | ReducerStarted
    | ReducerDelta
    | ScoreRecorded
    | RunFinished
)


@runtime_checkable
class Sink(Protocol):
    """Receives every event of a run, in order, on the engine's loop thread."""

    def on_event(self, event: Event) -> None: ...
