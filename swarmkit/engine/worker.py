"""One worker: its sub-task, its calls (or tool loop), and the record it leaves.

A worker always ends with a WorkerFinished event and a final status: completed, failed,
skipped or cancelled, with the reason (budget, provider, tools, schema, error, interrupt,
timeout). With an output schema its answer is typed (swarmkit.engine.typedworker).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..config.prompts import LOCAL_SYSTEM_PROMPT
from ..config.swarmconfig import SwarmConfig
from ..credentials.scrub import scrub, scrub_line
from ..errors import BudgetExceeded, ProviderError, ReplayMiss, SwarmError
from ..record.events import Event, WorkerFinished, WorkerStarted
from ..record.modelcall import CallOutcome, ChatRequest, ToolKey, ToolOutcome
from ..record.rows import CallRecord, WorkerRecord, WorkerStatus
from ..record.steps import InTree, worker_depth, worker_id, worker_step
from ..record.usage import Usage
from .context import StepContext
from .scaffold import without_scaffold
from .typedworker import checked_answer, schema_instruction, typed_answer

__all__ = [
    "Splitter",
    "WorkerContext",
    "WorkerLoop",
    "WorkerSlot",
    "WorkerTally",
    "never_started",
    "run_worker",
    "unexpected",
    "worker_messages",
]

log = logging.getLogger("swarmkit")


def unexpected(exc: BaseException) -> str:
    """One line for an exception swarmkit did not expect (a bug, logged with its traceback)."""
    return (f"unexpected {type(exc).__name__}: {scrub_line(str(exc), 200)} (a bug; the "
            "traceback is in the 'swarmkit' log)")


@dataclass
class WorkerTally:
    """What one worker's calls added up to, and the records of its children (a split)."""

    calls: list[CallRecord] = field(default_factory=list)
    tool_calls: int = 0
    children: dict[int, WorkerRecord] = field(default_factory=dict)
    merged: str | None = None  # its child swarm's merged answer, once it has one

    def record(self, index: int, task: str, status: WorkerStatus, *,
               parent: str | None = None, **extra: Any) -> WorkerRecord:
        usage = Usage.total(call.usage for call in self.calls)
        started = min((c.started for c in self.calls), default=None)
        ended = max((c.started + c.latency for c in self.calls), default=None)
        return WorkerRecord(
            index=index,
            task=task,
            status=status,
            usage=usage,
            cost_usd=usage.cost,
            started=started,
            latency=0.0 if started is None or ended is None else ended - started,
            attempts=sum(c.attempts for c in self.calls),
            calls=len(self.calls),
            tool_calls=self.tool_calls,
            cached_calls=sum(1 for c in self.calls if c.source == "cache"),
            depth=worker_depth(parent),
            parent=parent,
            children=tuple(self.children[i] for i in sorted(self.children)),
            **extra,
        )


class WorkerSlot:
    """A worker's hold on one of the run's ``concurrency`` slots.

    Taken when the worker starts and given back when it ends; while its child swarm runs
    (``lent``) the worker holds none, so its children can take them: concurrency 1 runs
    a tree one call at a time and cannot deadlock. Its children's slots come from the
    same semaphore, so the bound holds across the whole tree."""

    def __init__(self, slots: asyncio.Semaphore) -> None:
        self._slots = slots
        self._held = False

    async def __aenter__(self) -> WorkerSlot:
        await self._slots.acquire()
        self._held = True
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._give_back()

    def _give_back(self) -> None:
        if self._held:
            self._held = False
            self._slots.release()

    async def lent(self, children: Awaitable[None]) -> None:
        """Await ``children`` without the slot, then take one again (not after an error
        or a cancel: the worker is ending, and holds none)."""
        self._give_back()
        await children
        await self._slots.acquire()
        self._held = True


class Splitter(Protocol):
    """What runs a worker's ``split_task`` call as a child swarm (``engine.subtree``):
    the text the worker reads as the tool's result."""

    async def __call__(self, worker: WorkerContext, subtasks: Sequence[str]) -> str: ...


@dataclass
class WorkerContext(InTree):
    """What a worker's turn loop needs: used by the tool loop in ``swarmkit.tools``.

    The tree: ``parent`` is the parent's dotted id (None at the top level), ``id`` this
    worker's; ``splitter`` is set only below the run's ``depth`` (``offers_split``), and
    a worker splits at most once (``claim_split``)."""

    run: StepContext
    index: int
    step: str
    tally: WorkerTally
    parent: str | None = None
    task: str = ""  # the task this worker's sub-task belongs to
    subtask: str = ""
    slot: WorkerSlot | None = None
    splitter: Splitter | None = None
    has_split: bool = False

    @property
    def offers_split(self) -> bool:
        """Whether its requests offer ``split_task``: below the run's depth (then on every
        turn, so the conversation's tools stay the same after the split)."""
        return self.splitter is not None

    def claim_split(self) -> bool:
        """True the first time: a worker splits at most once (a second call is refused)."""
        if self.splitter is None or self.has_split:
            return False
        self.has_split = True
        return True

    async def split(self, subtasks: Sequence[str]) -> str:
        """Run ``subtasks`` as this worker's child swarm (after ``claim_split``); its
        merged answer, with any cap that cut it said, is the tool's result."""
        if self.splitter is None:
            raise RuntimeError(f"worker {self.id} is at the run's depth: it cannot split")
        return await self.splitter(self, subtasks)

    @property
    def config(self) -> SwarmConfig:
        return self.run.config

    @property
    def run_id(self) -> str:
        return self.run.run_id

    def request(self, messages: list[dict[str, Any]], **extra: Any) -> ChatRequest:
        """A worker's request for ``messages`` (``tools=``, ``tool_choice=``, ...)."""
        return self.run.request("worker", messages, **extra)

    async def call(self, request: ChatRequest) -> CallOutcome:
        return await self.run.calls.call("worker", self.step, request, into=self.tally.calls)

    async def tool(
        self, key: ToolKey, execute: Callable[[], Awaitable[ToolOutcome]]
    ) -> ToolOutcome:
        return await self.run.tool(key, execute)

    def emit(self, event: Event) -> None:
        self.run.emit(event)

    def now(self) -> float:
        return self.run.now()


# A worker's turn loop (the tool loop): its context and first messages in, its answer out.
WorkerLoop = Callable[[WorkerContext, list[dict[str, Any]]], Awaitable[str]]


def worker_messages(
    system_prompt: str, task: str, index: int, subtask: str, total: int,
    schema: str | None = None,
) -> list[dict[str, Any]]:
    """The conversation a worker starts from (the dry-run estimate sizes it too); with an
    output ``schema`` (JSON text), it asks for JSON matching it."""
    messages = [
        {"role": "system", "content": system_prompt},
        {
            "role": "user",
            "content": f"Overall task: {task}\n\nYour sub-task ({index} of {total}): {subtask}",
        },
    ]
    return messages if schema is None else schema_instruction(messages, schema)


async def run_worker(
    context: StepContext,
    loop: WorkerLoop | None,
    task: str,
    index: int,
    subtask: str,
    total: int,
    slots: asyncio.Semaphore,
    records: dict[int, WorkerRecord],
    *,
    parent: str | None = None,
    splitter: Splitter | None = None,
) -> None:
    """Run worker ``index``: plain calls, or ``loop`` (the tool loop) when given. The
    record it leaves is put in ``records``; only a ReplayMiss or a cancel propagates.

    In a tree, ``parent`` is its parent's dotted id (``task`` is then the parent's
    sub-task) and ``splitter`` runs its split, offered only above the run's depth."""
    tally = WorkerTally()
    step = worker_step(worker_id(parent, index))
    data: Any = None
    if worker_depth(parent) >= context.config.depth:
        splitter = None

    def finish(status: WorkerStatus, **extra: Any) -> None:
        record = tally.record(index, subtask, status, parent=parent, **extra)
        records[index] = record
        context.emit(WorkerFinished(record, t=context.now()))

    try:
        async with WorkerSlot(slots) as slot:
            delay = start_delay(context.config, index) if parent is None else 0.0
            if delay:
                await asyncio.sleep(delay)  # spread the first wave (rate-limited runs only)
            context.emit(WorkerStarted(index, subtask, context.now(), parent=parent))
            schema = context.config.output_schema
            messages = worker_messages(context.config.system_prompt, task, index, subtask, total,
                                       schema)
            worker = WorkerContext(context, index, step, tally, parent, task, subtask, slot,
                                   splitter)
            if schema is not None:
                if loop is not None:  # the tool loop's final answer is the one checked
                    output, data = await checked_answer(worker, messages,
                                                        await loop(worker, messages), None)
                else:
                    output, data = await typed_answer(worker, messages)
            elif loop is not None:
                output = await loop(worker, messages)
            else:
                request = context.request("worker", messages)
                outcome = await context.calls.call("worker", step, request, into=tally.calls)
                output = outcome.response.content or ""
    except BudgetExceeded as exc:
        if tally.merged is not None and context.config.output_schema is None:
            # Its children's merged answer was paid for; its own answer on top was not:
            # the merged one is its output ("completed (budget)"), so the tree is kept.
            finish("completed", reason="budget", output=tally.merged)
            return
        status: WorkerStatus = "skipped" if not tally.calls else "failed"
        finish(status, reason="budget", error=str(exc))
    except ProviderError as exc:
        finish("failed", reason="provider", error=str(exc))
    except ReplayMiss:  # not a worker failure: the cassette no longer matches the run
        finish("failed", reason="replay")
        raise
    except SwarmError as exc:  # ToolError and friends, raised by the tool loop
        # An MCP server's message is text from outside, like a server's error body.
        finish("failed", reason=getattr(exc, "reason", "tools"), error=scrub(str(exc)))
    except Exception as exc:  # a bug: it fails this worker, not its siblings or the run
        log.exception("swarmkit: worker %s raised unexpectedly", worker_id(parent, index))
        finish("failed", reason="error", error=unexpected(exc))
    except asyncio.CancelledError:
        finish("cancelled", reason=_cancel_reason(context))
        raise
    else:
        if data is None:
            cfg = context.config
            output = without_scaffold(output, local=cfg.worker.is_local,
                                      thorough=cfg.system_prompt == LOCAL_SYSTEM_PROMPT,
                                      prompt=cfg.system_prompt)
        finish("completed", output=output, data=data)


def _cancel_reason(context: StepContext) -> str | None:
    reason = context.halt.reason or "cancelled"
    return None if reason == "cancelled" else reason


def never_started(context: StepContext, index: int, subtask: str,
                  records: dict[int, WorkerRecord], parent: str | None = None) -> None:
    """Record worker ``index``, whose task the run ended before creating, exactly as a
    worker cancelled while waiting for its slot is recorded."""
    record = WorkerTally().record(index, subtask, "cancelled", parent=parent,
                                  reason=_cancel_reason(context))
    records[index] = record
    context.emit(WorkerFinished(record, t=context.now()))


MAX_START_JITTER = 0.25


def start_delay(config: SwarmConfig, index: int) -> float:
    """How long worker ``index`` (1-based) waits before its first call.

    The first wave is spread evenly over ``start_jitter`` seconds so that a limited key
    does not see ``concurrency`` requests in the same millisecond. With no ``rpm``/``tpm``
    and no explicit ``start_jitter`` there is no delay: an unlimited endpoint gains
    nothing from it, and it would cost up to the whole jitter in wall time.
    """
    jitter = config.start_jitter
    if jitter is None:
        jitter = MAX_START_JITTER if (config.rpm or config.tpm) else 0.0
    if jitter <= 0 or index > config.concurrency:
        return 0.0
    return min(jitter, MAX_START_JITTER) * (index - 1) / config.concurrency
