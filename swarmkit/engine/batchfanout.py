"""Batch mode (``--batch``): the workers go to a Batch API, not one call each.

Every worker's request is the one it would send live (``worker_messages`` and the
worker's request builder), one JSONL line under a ``custom_id`` naming the run and the
worker, at most ``MAX_REQUESTS`` lines and ``MAX_BYTES`` per batch. Each batch is
announced (``BatchSubmitted``) the moment it exists, so the history holds its id and a
resumed run, even in another process, polls it instead of sending the workers again.
The batches are polled every ``batch_poll`` seconds (``BatchUpdated`` for the
dashboard); when one ends, each output line becomes a completed worker with its call
priced at the batch price, and each error line, or a line missing from an expired,
failed or cancelled batch, a failed worker with its error. A cancel of the run cancels
the batches at the server. The planner and the reducer run live, as always.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Sequence
from decimal import Decimal

from ..config.swarmconfig import SwarmConfig
from ..errors import ConfigError, ProviderError
from ..record.events import BatchSubmitted, BatchUpdated, WorkerFinished, WorkerStarted
from ..record.modelcall import ChatRequest, worst_case_tokens
from ..record.rows import BatchRecord, WorkerRecord, WorkerStatus
from ..record.usage import Usage
from .batchservice import (
    MAX_BYTES,
    MAX_REQUESTS,
    BatchAnswer,
    BatchService,
    BatchState,
    batch_line,
    custom_id,
    step_of,
)
from .budget import Reservation
from .context import StepContext
from .prices import PriceTable
from .worker import WorkerTally, worker_messages

__all__ = ["check_batch", "fan_out_batched"]

log = logging.getLogger("swarmkit")
_FIRST_LOOK = 1.0  # seconds before the second look at a batch; doubled up to batch_poll

# Why a worker has no line in its ended batch, by the batch's final status.
_MISSING = {
    "expired": "expired: the batch's completion window ended before this request ran",
    "failed": "the batch failed",
    "cancelled": "cancelled: the batch was cancelled before this request ran",
    "completed": "the batch completed with no line for this request",
}


def check_batch(config: SwarmConfig, prices: PriceTable, *, has_tools: bool,
                has_service: bool) -> None:
    """A one-line ConfigError for what batch mode cannot do."""
    if has_tools:
        raise ConfigError("batch: a worker's tool loop needs turns, which a batch does not "
                          "have; drop --batch or the tools")
    if config.output_schema is not None:
        raise ConfigError("batch: typed worker outputs (--schema) are not batched yet; drop "
                          "--batch or --schema")
    if config.replay or config.record:
        raise ConfigError("batch: a batch's workers are not recorded in a cassette; drop "
                          "--batch or --record/--replay")
    if config.worker.is_local:
        raise ConfigError("batch: the local model has no Batch API; pick a hosted worker "
                          "model or drop --batch")
    if not has_service:
        raise ConfigError("batch: this engine was given no batch service")
    if config.budget_usd is not None:
        # Unknown is not zero: an unknown batch price cannot be held to a budget.
        prices.require_batch(config.worker.model)


class _Batches:
    """The state of one run's batches: which workers each holds, what is still open."""

    def __init__(self, context: StepContext, service: BatchService, task: str,
                 plan: tuple[str, ...], records: dict[int, WorkerRecord]) -> None:
        self.context, self.service, self.plan, self.records = context, service, plan, records
        config = context.config
        self.role = config.role("worker")
        self.requests: dict[int, ChatRequest] = {
            index: context.request("worker", worker_messages(
                config.system_prompt, task, index, subtask, len(plan)))
            for index, subtask in enumerate(plan, start=1)
        }
        self.open: dict[str, BatchRecord] = {}
        self.seen: dict[str, BatchState] = {}
        self.started: dict[int, float] = {}
        self.reservations: dict[int, Reservation] = {}

    # -- ending workers ------------------------------------------------------------------

    def finish(self, index: int, status: WorkerStatus, tally: WorkerTally | None = None,
               **extra: object) -> None:
        record = (tally or WorkerTally()).record(index, self.plan[index - 1], status, **extra)
        self.records[index] = record
        self.context.emit(WorkerFinished(record, t=self.context.now()))

    def release(self, index: int) -> None:
        reservation = self.reservations.pop(index, None)
        if reservation is not None:
            self.context.budget.release(reservation)

    def answered(self, index: int, answer: BatchAnswer | None, state: BatchState) -> None:
        """Worker ``index`` from its line in the ended batch ``state`` (None: no line).
        A line that never ran (expired, missing) is no call: nothing was billed."""
        if answer is None or answer.expired:
            self.release(index)
            if state.status == "cancelled" and answer is None:
                reason = self.context.halt.reason
                self.finish(index, "cancelled", reason=None if reason in (None, "cancelled")
                            else reason)
                return
            error = _MISSING.get(state.status, f"the batch ended {state.status}")
            if answer is not None and answer.error:
                error = f"expired: {answer.error}"
            elif state.status == "failed" and state.error:
                error = f"the batch failed: {state.error}"
            expired = answer is not None or state.status == "expired"
            self.finish(index, "failed", reason="expired" if expired else "batch", error=error)
            return
        tally = WorkerTally()
        usage = Usage(requests=1) if answer.response is None else answer.response.usage
        self.context.calls.batched(
            f"worker-{index}", self.requests[index], usage=usage,
            started=self.started.get(index, 0.0), error=answer.error, status=answer.status,
            reservation=self.reservations.pop(index, None), into=tally.calls,
            finish_reason=None if answer.response is None else answer.response.finish_reason)
        if answer.response is None:
            self.finish(index, "failed", tally, reason="provider",
                        error=answer.error or "no answer")
        else:
            self.finish(index, "completed", tally, output=answer.response.content or "")

    # -- submitting ----------------------------------------------------------------------

    def reserve(self, todo: list[int]) -> list[int]:
        """Reserve each worker's worst case at the batch price, in order; the workers
        from the first that does not fit on are skipped (budget)."""
        budget = self.context.budget
        if not budget.capped:
            return todo
        price = self.context.prices.batch_lookup(self.role.model)
        for position, index in enumerate(todo):
            request = self.requests[index]
            tokens = worst_case_tokens(request, self.role)
            prompt = request.prompt_token_bound()
            usd = price.bound(prompt, tokens - prompt) if price is not None else Decimal(0)
            reservation = budget.try_reserve(usd, tokens)
            if reservation is None:
                for skipped in todo[position:]:
                    self.finish(skipped, "skipped", reason="budget", error=(
                        f"budget: the batch's worker-{skipped} needs up to ${usd:.6f} and "
                        "the budget has no room for it; raise the budget or lower "
                        "max_tokens"))
                return todo[:position]
            self.reservations[index] = reservation
        return todo

    async def submit(self, todo: list[int]) -> None:
        run_id = self.context.run_id
        for chunk in _chunks(todo, lambda i: len(batch_line(
                custom_id(run_id, f"worker-{i}"), self.requests[i]))):
            jsonl = b"".join(batch_line(custom_id(run_id, f"worker-{i}"), self.requests[i])
                             for i in chunk)
            try:
                batch_id = await self.service.submit(jsonl, role=self.role, run_id=run_id)
            except ProviderError as exc:
                for index in chunk:
                    self.release(index)
                    self.finish(index, "failed", reason="provider", error=str(exc))
                continue
            self.adopt(BatchRecord(batch_id, chunk[0], chunk[-1]))

    def adopt(self, batch: BatchRecord) -> None:
        """Announce ``batch`` (the history saves its id at once) and wait for it."""
        now = self.context.now()
        self.open[batch.batch_id] = batch
        self.context.emit(BatchSubmitted(batch, t=now))
        for index in range(batch.first, batch.last + 1):
            if index in self.requests and index not in self.records:
                self.started[index] = now
                self.context.emit(WorkerStarted(index, self.plan[index - 1], now))

    # -- polling -------------------------------------------------------------------------

    async def poll(self) -> None:
        failures = 0
        poll = self.context.config.batch_poll
        # The first looks come sooner (1, 2, 4, ... seconds, up to batch_poll): a small
        # batch on a self-hosted stack ends in seconds, and a look is one small request.
        wait = min(poll, _FIRST_LOOK)
        while self.open:
            for batch_id, batch in list(self.open.items()):
                try:
                    state = await self.service.retrieve(batch_id, role=self.role)
                    if state != self.seen.get(batch_id):
                        self.seen[batch_id] = state
                        self.context.emit(BatchUpdated(batch_id, state.status, state.total,
                                                       state.completed, state.failed,
                                                       t=self.context.now()))
                    if state.done:
                        self.end(batch, state, await self.service.answers(state,
                                                                          role=self.role))
                    failures = 0
                except ProviderError as exc:
                    # A look that fails is tried again next time; a server that keeps
                    # failing fails the batch's workers with its error.
                    failures += 1
                    log.warning("swarmkit: batch %s: %s", batch_id, exc)
                    if failures >= self.context.config.max_attempts:
                        self.end(batch, BatchState(batch_id, "failed", error=str(exc)), [])
            if self.open:
                await asyncio.sleep(wait)
                wait = min(poll, wait * 2)

    def end(self, batch: BatchRecord, state: BatchState, answers: list[BatchAnswer]) -> None:
        del self.open[batch.batch_id]
        by_step = {step_of(a.custom_id): a for a in answers}
        for index in range(batch.first, batch.last + 1):
            if index in self.requests and index not in self.records:
                self.answered(index, by_step.get(f"worker-{index}"), state)

    async def cancel(self) -> None:
        """Cancel the open batches at the server; their workers end cancelled."""
        for batch_id in list(self.open):
            try:
                await self.service.cancel(batch_id, role=self.role)
            except ProviderError as exc:
                log.warning("swarmkit: batch %s not cancelled: %s", batch_id, exc)
        reason = self.context.halt.reason
        for index in self.requests:
            if index not in self.records:
                self.release(index)
                self.finish(index, "cancelled",
                            reason=None if reason in (None, "cancelled") else reason)


def _chunks(todo: list[int], size: Callable[[int], int]) -> list[list[int]]:
    """``todo`` cut into batches: runs of consecutive workers, each within the limits."""
    chunks: list[list[int]] = []
    current: list[int] = []
    used = 0
    for index in todo:
        line = size(index)
        if current and (index != current[-1] + 1 or len(current) >= MAX_REQUESTS
                        or used + line > MAX_BYTES):
            chunks.append(current)
            current, used = [], 0
        current.append(index)
        used += line
    if current:
        chunks.append(current)
    return chunks


async def fan_out_batched(
    context: StepContext,
    service: BatchService,
    task: str,
    plan: tuple[str, ...],
    records: dict[int, WorkerRecord],
    *,
    adopted: Sequence[BatchRecord] = (),
) -> None:
    """Run the workers of ``plan`` as batches; each worker's record goes in ``records``.

    ``adopted``: an earlier run's batches (``resume=``), polled and never submitted
    again; only workers in none of them are sent. A cancel (the run's, or a stop)
    cancels the open batches at the server and re-raises.
    """
    batches = _Batches(context, service, task, plan, records)
    try:
        # Every worker's worst case is reserved, an adopted batch's too: what it spends
        # counts against the budget like anything sent now.
        admitted = set(batches.reserve(list(batches.requests)))
        for batch in adopted:
            batches.adopt(batch)
        covered = {i for b in adopted for i in range(b.first, b.last + 1)}
        await batches.submit([i for i in batches.requests if i in admitted and i not in covered])
        await batches.poll()
    except asyncio.CancelledError:
        await batches.cancel()
        raise
    finally:
        with contextlib.suppress(Exception):
            await service.aclose()
