"""The engine: plan, fan out workers, reduce. Async, and knows nothing of Jupyter.

It owns every task it starts. Every model call goes engine → ModelCaller (call store,
then provider), under the budget. It reports only through events and returns a ``Run``.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import time
import uuid
from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import Any

from ..budget import Budget, Reservation
from ..calls import CallOutcome, ChatRequest, ModelCaller, worst_case_tokens
from ..config.swarm import ROLES, Role, SwarmConfig
from ..errors import (
    BudgetExceeded,
    PlanError,
    ProviderError,
    ReplayMiss,
)
from ..events import (
    BudgetUpdated,
    CallFinished,
    CallStarted,
    Event,
    PlanReady,
    RunFinished,
    RunStarted,
    Sink,
)
from ..pricing import PriceTable
from ..records import CallRecord, WorkerRecord
from ..runrecord import RunRecord
from ..usage import Usage
from .planner import make_plan
from .recorder import RunRecorder
from .reducer import hold_for_reducer, reduce
from .worker import WorkerContext, WorkerTally, run_worker, unexpected

# WorkerContext: re-exported for tools
__all__ = ["STOPPED", "Engine", "WorkerContext", "new_run_id"]

log = logging.getLogger("swarmkit")

# The reason a worker stopped by "stop and merge" is recorded with, and the run's status.
STOPPED = "stopped"

_CANCEL_MESSAGES = {
    "timeout": "run timed out",
    "interrupt": "run interrupted",
    "cancelled": "run cancelled",
    STOPPED: "run stopped while planning; nothing to merge",
}


def new_run_id() -> str:
    return uuid.uuid4().hex[:12]


class _Attempts:
    """Follows one logical call's attempts through the CallStarted events its caller emits.

    Streamed text is tagged with its attempt, so a sink can drop the text of a stream
    that was cut off and retried; a cancelled call knows how many requests it had sent.
    """

    __slots__ = ("_emit", "_on_delta", "count")

    def __init__(
        self, emit: Callable[[Event], None], on_delta: Callable[[str, int], None] | None
    ) -> None:
        self._emit, self._on_delta, self.count = emit, on_delta, 0

    def emit(self, event: Event) -> None:
        if isinstance(event, CallStarted):
            self.count = event.attempt
        self._emit(event)

    def deliver(self, text: str) -> None:
        assert self._on_delta is not None
        self._on_delta(text, max(self.count, 1))


class Engine:
    """Runs one swarm. Create one per run; call :meth:`execute` once."""

    def __init__(
        self,
        config: SwarmConfig,
        *,
        caller: ModelCaller,
        sinks: Sequence[Sink] = (),
        prices: PriceTable | None = None,
        run_id: str | None = None,
        started_at: str | None = None,
        worker_loop: Callable[[WorkerContext, list[dict[str, Any]]], Any] | None = None,
        clock: Callable[[], float] = time.perf_counter,
        recorded_duration: float | None = None,
        record_type: type[RunRecord] = RunRecord,
    ) -> None:
        self.config = config
        self.caller = caller
        self.prices = prices or PriceTable.with_overrides(config.prices)
        self.run_id = run_id or new_run_id()
        self.started_at = started_at or dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        self.recorder = RunRecorder(record_type)
        self.sinks: list[Sink] = [self.recorder, *sinks]
        self.budget = Budget(config.budget_usd, config.budget_tokens)
        self.worker_loop = worker_loop
        self._clock = clock
        self._t0 = clock()
        # In replay the totals line must show the recorded duration, not the replay's.
        self._recorded_duration = recorded_duration
        self._main: asyncio.Task[RunRecord] | None = None
        self.cancel_reason: str | None = None
        # Set by stop(): the fan-out stops and the reducer merges what finished.
        self.stop_reason: str | None = None
        self._worker_tasks: list[asyncio.Task[None]] = []
        self.phase = "planning"  # then "workers", "reducing", "ended"
        if config.budget_usd is not None:
            for role in ROLES:
                self.prices.require(config.role(role).model)

    # -- plumbing used by workers and the tool loop ------------------------------------

    def now(self) -> float:
        return self._clock() - self._t0

    def emit(self, event: Event) -> None:
        for sink in self.sinks:
            try:
                sink.on_event(event)
            except Exception:  # a broken display must not break the run
                log.exception("swarmkit sink %r failed on %s", sink, event.kind)

    @property
    def run(self) -> RunRecord | None:
        """The Run as recorded so far (partial while running)."""
        return self.recorder.run

    def cancel(self, reason: str = "cancelled") -> None:
        """Stop the run; finished workers are kept. Call on the engine's loop thread."""
        if self._main is None:
            self.cancel_reason = reason  # execute() has not started: it stops at once
        elif not self._main.done():
            self.cancel_reason = reason
            self._main.cancel()

    def stop(self) -> None:
        """Stop fanning out and merge what finished. Call on the engine's loop thread.

        Pending and running workers are cancelled (recorded as ``cancelled (stopped)``),
        then the reducer runs on the completed ones and the run ends ``stopped``. While
        planning there is nothing to merge, so it is a cancel; while reducing the merge
        is already under way and it changes nothing.
        """
        if self._main is None or self.phase == "planning":
            self.cancel(STOPPED)
            return
        if self.phase != "workers" or self.stop_reason is not None:
            return
        self.stop_reason = STOPPED
        for task in self._worker_tasks:
            task.cancel()

    def worst_case(self, role: Role, request: ChatRequest) -> tuple[Decimal, int]:
        tokens = worst_case_tokens(request, self.config.role(role))
        prompt = request.prompt_token_bound()
        price = self.prices.lookup(request.model)
        usd = price.bound(prompt, tokens - prompt) if price is not None else Decimal(0)
        return usd, tokens

    async def call(
        self,
        role: Role,
        step: str,
        request: ChatRequest,
        *,
        tally: WorkerTally | None = None,
        reservation: Reservation | None = None,
        on_delta: Callable[[str, int], None] | None = None,
    ) -> CallOutcome:
        """One model call under the budget. Raises BudgetExceeded or ProviderError.

        ``on_delta(text, attempt)`` receives streamed text with the attempt it belongs to.
        """
        if reservation is None and self.budget.capped:
            usd, tokens = self.worst_case(role, request)
            reservation = await self.budget.reserve(usd, tokens, what=step)
        started = self.now()
        attempts = _Attempts(self.emit, on_delta)
        try:
            outcome = await self.caller.complete(
                request,
                role=self.config.role(role),
                run_id=self.run_id,
                step=step,
                emit=attempts.emit,
                clock=self.now,
                on_delta=None if on_delta is None else attempts.deliver,
            )
        except ProviderError as exc:
            if reservation is not None:
                self.budget.release(reservation)
            record = CallRecord(
                step=step,
                role=role,
                model=request.model,
                source="live" if exc.started is None else "replay",  # timing: replay only
                usage=Usage(requests=exc.attempts),
                cost_usd=Decimal(0),
                started=started if exc.started is None else exc.started,
                latency=self.now() - started if exc.latency is None else exc.latency,
                attempts=exc.attempts,
                fingerprint=request.fingerprint(),
                error=str(exc),
                status=exc.status,
            )
            self._finish_call(record, tally)
            raise
        except BaseException as exc:
            if reservation is not None:
                self.budget.release(reservation)
            if isinstance(exc, asyncio.CancelledError) and attempts.count:
                # Requests were sent: keep them in the Run, unbilled, like failed calls.
                reason = self.cancel_reason or self.stop_reason
                record = CallRecord(
                    step=step, role=role, model=request.model, source="live",
                    usage=Usage(requests=attempts.count), cost_usd=Decimal(0),
                    started=started, latency=self.now() - started, attempts=attempts.count,
                    fingerprint=request.fingerprint(),
                    error=f"cancelled ({reason})" if reason else "cancelled",
                )
                self._finish_call(record, tally)
            raise
        usage = outcome.response.usage
        if outcome.cost_recorded:
            cost = outcome.cost_usd
        elif outcome.source == "cache":
            cost = Decimal(0)
        else:
            cost = self.prices.cost(request.model, usage)
        if reservation is not None:
            self.budget.settle(reservation, cost, usage.total_tokens)
        record = CallRecord(
            step=step,
            role=role,
            model=request.model,
            source=outcome.source,
            usage=usage,
            cost_usd=cost,
            started=started if outcome.started is None else outcome.started,
            latency=outcome.latency,
            attempts=outcome.attempts,
            fingerprint=request.fingerprint(),
            occurrence=outcome.occurrence,
        )
        self._finish_call(record, tally)
        return outcome

    def _finish_call(self, record: CallRecord, tally: WorkerTally | None) -> None:
        if tally is not None:
            tally.calls.append(record)
        self.emit(CallFinished(record, t=self.now()))
        if self.budget.capped:
            snap = self.budget.snapshot()
            self.emit(
                BudgetUpdated(
                    spent_usd=snap.spent_usd,
                    reserved_usd=snap.reserved_usd + snap.held_usd,
                    cap_usd=snap.cap_usd,
                    spent_tokens=snap.spent_tokens,
                    t=self.now(),
                )
            )

    def request(self, role: Role, messages: list[dict[str, Any]], **extra: Any) -> ChatRequest:
        rc = self.config.role(role)
        return ChatRequest(
            model=rc.model,
            messages=tuple(messages),
            max_tokens=extra.pop("max_tokens", rc.max_tokens),
            temperature=rc.temperature,
            seed=rc.seed,
            **extra,
        )

    # -- the run -----------------------------------------------------------------------

    async def execute(self, task: str) -> RunRecord:
        self._main = asyncio.current_task()  # type: ignore[assignment]
        timer = None
        if self.config.run_timeout is not None:
            loop = asyncio.get_running_loop()
            timer = loop.call_later(self.config.run_timeout, self.cancel, "timeout")
        self.emit(RunStarted(self.run_id, task, self.config.summary(), self.started_at))
        status, answer, error = "failed", None, None
        if self.cancel_reason is not None:
            self._main.cancel()  # cancelled before it started: the first await stops it
        try:
            plan = await make_plan(self, task)
            self.phase = "workers"
            records = await self._fan_out(task, plan)
            self.phase = "reducing"
            status, answer, error = await reduce(self, task, plan, records)
            if self.stop_reason is not None:
                status = STOPPED  # the answer merges only what finished before the stop
        except PlanError as exc:
            self.emit(PlanReady((), exc.raw, self.now()))  # keep the raw reply in the RunRecord
            error = f"PlanError: {exc}"
        except BudgetExceeded as exc:
            error = f"BudgetExceeded: {exc}"
        except ProviderError as exc:
            error = f"ProviderError: {exc}"
        except ReplayMiss as exc:  # the cassette no longer matches: stop and say where
            self._finish("failed", None, f"ReplayMiss: {exc}", duration=self.now())
            raise
        except Exception as exc:  # a bug: still end the RunRecord (and every sink), then raise
            self._finish("failed", None, unexpected(exc))
            raise
        except asyncio.CancelledError:
            status = "cancelled"
            reason = self.cancel_reason or "cancelled"
            error = _CANCEL_MESSAGES.get(reason, f"run cancelled ({reason})")
            if self.cancel_reason is None:
                self._finish(status, answer, error)
                raise
            self._main.uncancel()  # type: ignore[union-attr]
        finally:
            if timer is not None:
                timer.cancel()
        self._finish(status, answer, error)
        assert self.run is not None
        return self.run

    async def plan_only(self, task: str) -> tuple[str, ...]:
        """Run only the planner (``--dry-run``); ``self.run`` keeps the planner's calls."""
        self.emit(RunStarted(self.run_id, task, self.config.summary(), self.started_at))
        return await make_plan(self, task)

    def _finish(
        self, status: Any, answer: str | None, error: str | None, duration: float | None = None
    ) -> None:
        if duration is None:
            duration = self.now() if self._recorded_duration is None else self._recorded_duration
        self.phase = "ended"
        self.emit(RunFinished(status, answer, error, duration=duration, t=self.now()))

    async def _fan_out(self, task: str, plan: tuple[str, ...]) -> list[WorkerRecord]:
        hold_for_reducer(self, task, plan)
        slots = asyncio.Semaphore(self.config.concurrency)
        records: dict[int, WorkerRecord] = {}
        try:
            # A worker task cancelled by stop() ends the group normally (TaskGroup does
            # not count a child's own cancellation as an error).
            async with asyncio.TaskGroup() as group:
                self._worker_tasks = [
                    group.create_task(
                        run_worker(self, task, index, subtask, len(plan), slots, records)
                    )
                    for index, subtask in enumerate(plan, start=1)
                ]
        except* ReplayMiss as group:  # one miss stops the run; unwrap it for the caller
            raise group.exceptions[0] from None
        return [records[i] for i in sorted(records)]
