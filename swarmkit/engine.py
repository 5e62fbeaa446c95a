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
from collections import Counter
from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import Any

from .budget import Budget, Reservation
from .calls import CallOutcome, ChatRequest, ModelCaller, Usage
from .config import ROLES, Role, SwarmConfig
from .errors import (
    BudgetExceeded,
    PlanError,
    ProviderError,
    ReplayMiss,
    ResponseFormatUnsupported,
)
from .events import (
    BudgetUpdated,
    CallFinished,
    CallStarted,
    Event,
    PlanReady,
    ReducerDelta,
    ReducerStarted,
    RunFinished,
    RunStarted,
    Sink,
)
from .limits import worst_case_tokens
from .planner import parse_plan, plan_formats, repair_message
from .pricing import PriceTable
from .records import CallRecord, WorkerRecord
from .run import Run, RunRecorder
from .worker import WorkerContext, WorkerTally, run_worker, unexpected

__all__ = ["Engine", "WorkerContext", "new_run_id"]  # WorkerContext: re-exported for tools

log = logging.getLogger("swarmkit")

# Average bytes per token when sizing the reducer's hold before worker outputs exist.
_BYTES_PER_TOKEN_ESTIMATE = 4
# The reducer's answer is shortened down to this when that is what fits the budget.
_MIN_REDUCER_TOKENS = 64
# The most of the remaining cap held back for the reducer while workers run.
_REDUCER_SHARE = Decimal("0.25")


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


def _nothing_to_reduce(records: list[WorkerRecord]) -> str:
    labels = Counter(r.status_label for r in records)
    counts = ", ".join(f"{n} {label}" for label, n in sorted(labels.items()))
    budget = any(r.reason == "budget" for r in records)
    hint = "raise the budget or lower max_tokens" if budget else "see the workers' errors"
    return f"no worker finished ({counts}); nothing to reduce; {hint}"


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
    ) -> None:
        self.config = config
        self.caller = caller
        self.prices = prices or PriceTable.with_overrides(config.prices)
        self.run_id = run_id or new_run_id()
        self.started_at = started_at or dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        self.recorder = RunRecorder()
        self.sinks: list[Sink] = [self.recorder, *sinks]
        self.budget = Budget(config.budget_usd, config.budget_tokens)
        self.worker_loop = worker_loop
        self._clock = clock
        self._t0 = clock()
        # In replay the totals line must show the recorded duration, not the replay's.
        self._recorded_duration = recorded_duration
        self._main: asyncio.Task[Run] | None = None
        self.cancel_reason: str | None = None
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
    def run(self) -> Run | None:
        """The Run as recorded so far (partial while running)."""
        return self.recorder.run

    def cancel(self, reason: str = "cancelled") -> None:
        """Stop the run; finished workers are kept. Call on the engine's loop thread."""
        if self._main is not None and not self._main.done():
            self.cancel_reason = reason
            self._main.cancel()

    def _worst_case(self, role: Role, request: ChatRequest) -> tuple[Decimal, int]:
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
            usd, tokens = self._worst_case(role, request)
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
                reason = self.cancel_reason
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

    async def execute(self, task: str) -> Run:
        self._main = asyncio.current_task()  # type: ignore[assignment]
        timer = None
        if self.config.run_timeout is not None:
            loop = asyncio.get_running_loop()
            timer = loop.call_later(self.config.run_timeout, self.cancel, "timeout")
        self.emit(RunStarted(self.run_id, task, self.config.summary(), self.started_at))
        status, answer, error = "failed", None, None
        try:
            plan = await self._plan(task)
            records = await self._fan_out(task, plan)
            status, answer, error = await self._reduce(task, plan, records)
        except PlanError as exc:
            self.emit(PlanReady((), exc.raw, self.now()))  # keep the raw reply in the Run
            error = f"PlanError: {exc}"
        except BudgetExceeded as exc:
            error = f"BudgetExceeded: {exc}"
        except ProviderError as exc:
            error = f"ProviderError: {exc}"
        except ReplayMiss as exc:  # the cassette no longer matches: stop and say where
            self._finish("failed", None, f"ReplayMiss: {exc}", duration=self.now())
            raise
        except Exception as exc:  # a bug: still end the Run (and every sink), then raise
            self._finish("failed", None, unexpected(exc))
            raise
        except asyncio.CancelledError:
            status = "cancelled"
            reason = self.cancel_reason or "cancelled"
            error = "run timed out" if reason == "timeout" else f"run {reason}"
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
        return await self._plan(task)

    def _finish(
        self, status: Any, answer: str | None, error: str | None, duration: float | None = None
    ) -> None:
        if duration is None:
            duration = self.now() if self._recorded_duration is None else self._recorded_duration
        self.emit(RunFinished(status, answer, error, duration=duration, t=self.now()))

    async def _plan(self, task: str) -> tuple[str, ...]:
        cfg = self.config
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": cfg.planner_prompt.format(max_workers=cfg.max_workers)},
            {"role": "user", "content": task},
        ]
        last_error: ResponseFormatUnsupported | None = None
        for response_format in plan_formats(cfg.max_workers, local=cfg.planner.is_local):
            request = self.request("planner", messages, response_format=response_format)
            try:
                outcome = await self.call("planner", "planner", request)
            except ResponseFormatUnsupported as exc:
                last_error = exc
                continue
            raw = outcome.response.content or ""
            try:
                parsed = parse_plan(raw, cfg.max_workers)
            except PlanError:
                repair = [*messages, {"role": "assistant", "content": raw}]
                repair.append(repair_message(cfg.max_workers))
                request = self.request("planner", repair, response_format=response_format)
                outcome = await self.call("planner", "planner", request)
                raw = outcome.response.content or ""
                parsed = parse_plan(raw, cfg.max_workers)
            self.emit(PlanReady(parsed.tasks, raw, self.now(), parsed.truncated_from))
            return parsed.tasks
        raise PlanError(f"no response_format was accepted by the planner's server: {last_error}")

    def _hold_for_reducer(self, task: str, plan: tuple[str, ...]) -> None:
        """Hold room for the reducer: its worst case, capped at a share of what is left."""
        if not self.budget.capped:
            return
        worker_bytes = self.config.worker.max_tokens * _BYTES_PER_TOKEN_ESTIMATE
        skeleton = self._reducer_request(task, [(i + 1, t, "") for i, t in enumerate(plan)])
        usd, tokens = self._worst_case("reducer", skeleton)
        price = self.prices.lookup(self.config.reducer.model)
        extra_tokens = len(plan) * worker_bytes
        tokens += extra_tokens
        if price is not None:
            usd += price.bound(extra_tokens, 0)
        # Hold the reducer's worst case, but never more than a share of what is left, so
        # a bigger cap always leaves the workers at least as much room (monotonic), and a
        # short reducer budget is met later by shortening its answer and its inputs.
        snap = self.budget.snapshot()
        if snap.cap_usd is not None:
            usd = min(usd, (snap.cap_usd - snap.spent_usd) * _REDUCER_SHARE)
        if snap.cap_tokens is not None:
            tokens = min(tokens, int((snap.cap_tokens - snap.spent_tokens) * _REDUCER_SHARE))
        if not self.budget.hold(usd, tokens):
            raise BudgetExceeded("budget spent before the workers could start; raise the budget")

    async def _fan_out(self, task: str, plan: tuple[str, ...]) -> list[WorkerRecord]:
        self._hold_for_reducer(task, plan)
        slots = asyncio.Semaphore(self.config.concurrency)
        records: dict[int, WorkerRecord] = {}
        try:
            async with asyncio.TaskGroup() as group:
                for index, subtask in enumerate(plan, start=1):
                    group.create_task(
                        run_worker(self, task, index, subtask, len(plan), slots, records)
                    )
        except* ReplayMiss as group:  # one miss stops the run; unwrap it for the caller
            raise group.exceptions[0] from None
        return [records[i] for i in sorted(records)]

    def _reducer_request(
        self, task: str, inputs: list[tuple[int, str, str]], max_tokens: int | None = None
    ) -> ChatRequest:
        parts = [f"Task: {task}", ""]
        for index, subtask, output in inputs:
            parts += [f"Worker {index} (sub-task: {subtask}):", output, ""]
        messages = [
            {"role": "system", "content": self.config.reducer_prompt},
            {"role": "user", "content": "\n".join(parts).rstrip()},
        ]
        stream = self.config.stream_reducer and not self.config.reducer.is_local
        extra: dict[str, Any] = {"stream": stream}
        if max_tokens is not None:
            extra["max_tokens"] = max_tokens
        return self.request("reducer", messages, **extra)

    async def _reduce(
        self, task: str, plan: tuple[str, ...], records: list[WorkerRecord]
    ) -> tuple[Any, str | None, str | None]:
        done = [r for r in records if r.status == "completed"]
        self.budget.release_hold()
        if not done:
            return "failed", None, _nothing_to_reduce(records)
        inputs = [(r.index, r.task, r.output or "") for r in done]
        request, reservation, inputs = await self._reserve_reducer(task, inputs)
        self.emit(ReducerStarted(tuple(index for index, _, _ in inputs), self.now()))

        def on_delta(text: str, attempt: int) -> None:
            self.emit(ReducerDelta(text, self.now(), attempt))

        outcome = await self.call(
            "reducer", "reducer", request, reservation=reservation, on_delta=on_delta
        )
        status = "completed" if len(inputs) == len(plan) else "partial"
        return status, outcome.response.content or "", None

    async def _reserve_reducer(
        self, task: str, inputs: list[tuple[int, str, str]]
    ) -> tuple[ChatRequest, Reservation | None, list[tuple[int, str, str]]]:
        """Reserve for the reducer. If the cap is short, shorten its answer first, then
        give it fewer worker outputs (the reducer's inputs are recorded in the Run)."""
        max_tokens = self.config.reducer.max_tokens
        while True:
            request = self._reducer_request(task, inputs, max_tokens)
            if not self.budget.capped:
                return request, None, inputs
            usd, tokens = self._worst_case("reducer", request)
            try:
                reservation = await self.budget.reserve(usd, tokens, what="the reducer")
                return request, reservation, inputs
            except BudgetExceeded:
                if max_tokens > _MIN_REDUCER_TOKENS:
                    max_tokens = max(_MIN_REDUCER_TOKENS, max_tokens // 2)
                elif len(inputs) > 1:
                    inputs = inputs[: max(1, len(inputs) * 3 // 4)]
                else:
                    raise
