"""The run as data: one model call's values, a run's rows, its events, the ``RunRecord``.

    modelcall    ``ChatRequest`` / ``ChatResponse`` / ``CallOutcome``, the request fingerprint
    usage        ``Usage``: tokens, requests and cost, where unknown stays unknown
    rows         the rows of a run: ``CallRecord``, ``ToolCallRecord``, ``WorkerRecord``,
                 ``ScoreRecord``, ...
    steps        a run's step ids (``worker-2.1``, ``reducer-of-2``, ...), parsed
    events       every event a run emits, and the ``Sink`` seam
    runrecord    ``RunRecord``: the whole run, built only from events, JSON round-trip
    fileshapes   the declared shapes of what swarmkit reads back (Run JSON, cassettes, rows)
    jsontext     a large record's JSON text, made a piece at a time
    review       ``PlanReview``: a plan looked at and approved before the fan-out
    carried      ``CarriedCall``: a call made for a run before it began (a Plan's planner)

Values only: nothing here does I/O beyond (de)serialising, and nothing imports a layer
above ``config``.
"""

from __future__ import annotations

from .carried import CarriedCall
from .events import (
    BatchSubmitted,
    BatchUpdated,
    BudgetUpdated,
    CallFinished,
    CallRetried,
    CallStarted,
    ConcurrencyChanged,
    Event,
    PlanReady,
    PlanReviewed,
    RateLimitWait,
    ReducerDelta,
    ReducerStarted,
    RunFinished,
    RunStarted,
    ScoreRecorded,
    Sink,
    ToolCallFinished,
    WorkerFinished,
    WorkerSplit,
    WorkerStarted,
)
from .modelcall import CallOutcome, CallSource, ChatRequest, ChatResponse, ToolCallRequest
from .review import PlanReview
from .rows import (
    BatchRecord,
    CallRecord,
    RetryRecord,
    ScoreRecord,
    ToolCallRecord,
    WorkerRecord,
    WorkerStatus,
)
from .runrecord import RUN_FORMAT, RunRecord, RunStatus
from .usage import Usage

__all__ = [
    "RUN_FORMAT",
    "BatchRecord",
    "BatchSubmitted",
    "BatchUpdated",
    "BudgetUpdated",
    "CallFinished",
    "CallOutcome",
    "CallRecord",
    "CallRetried",
    "CallSource",
    "CallStarted",
    "CarriedCall",
    "ChatRequest",
    "ChatResponse",
    "ConcurrencyChanged",
    "Event",
    "PlanReady",
    "PlanReview",
    "PlanReviewed",
    "RateLimitWait",
    "ReducerDelta",
    "ReducerStarted",
    "RetryRecord",
    "RunFinished",
    "RunRecord",
    "RunStarted",
    "RunStatus",
    "ScoreRecord",
    "ScoreRecorded",
    "Sink",
    "ToolCallFinished",
    "ToolCallRecord",
    "ToolCallRequest",
    "Usage",
    "WorkerFinished",
    "WorkerRecord",
    "WorkerSplit",
    "WorkerStarted",
    "WorkerStatus",
]
