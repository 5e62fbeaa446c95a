"""``BudgetedCalls``: every model call of a run, under its budget, each leaving a CallRecord.

A call reserves its worst case (unless the caller reserved already), goes to the run's
ModelCaller, is priced and settled, and ends as one CallRecord in a CallFinished event:
whether it succeeded, failed for good or was cancelled with requests already sent.
:meth:`BudgetedCalls._record` is the one place a CallRecord is built.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from ..config.swarmconfig import LOCAL_PENALTIES, Role, SwarmConfig
from ..errors import ProviderError
from ..record.events import BudgetUpdated, CallFinished, CallStarted, Event
from ..record.modelcall import CallOutcome, CallSource, ChatRequest, worst_case_tokens
from ..record.rows import CallRecord
from ..record.usage import Usage
from .budget import Budget, Reservation
from .halt import Halt
from .modelcaller import ModelCaller
from .prices import PriceTable

__all__ = ["BudgetedCalls", "build_request"]


def build_request(
    config: SwarmConfig, role: Role, messages: list[dict[str, Any]], **extra: Any
) -> ChatRequest:
    """The request ``role`` sends with ``messages``: its model, cap, temperature, seed
    (and, on the embedded model, the penalties that keep its workers and reducer from
    looping: config.swarm.LOCAL_PENALTIES)."""
    rc = config.role(role)
    if rc.is_local and role not in ("planner", "judge"):  # grammar-bound JSON: no penalties
        extra = {**LOCAL_PENALTIES, **extra}
    return ChatRequest(
        model=rc.model,
        messages=tuple(messages),
        max_tokens=extra.pop("max_tokens", rc.max_tokens),
        temperature=rc.temperature,
        seed=rc.seed,
        **extra,
    )


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


class BudgetedCalls:
    """The model calls of one run: its caller, prices and budget, and where events go."""

    def __init__(
        self,
        config: SwarmConfig,
        caller: ModelCaller,
        *,
        prices: PriceTable,
        budget: Budget,
        run_id: str,
        emit: Callable[[Event], None],
        now: Callable[[], float],
        halt: Halt,
    ) -> None:
        self.config = config
        self.caller = caller
        self.prices = prices
        self.budget = budget
        self.run_id = run_id
        self._emit = emit
        self._now = now
        self._halt = halt

    def worst_case(self, role: Role, request: ChatRequest) -> tuple[Decimal, int]:
        """The most ``request`` can cost, in USD (0 without a price) and tokens."""
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
        into: list[CallRecord] | None = None,
        reservation: Reservation | None = None,
        on_delta: Callable[[str, int], None] | None = None,
        keep: bool = False,
        carried: bool = False,
    ) -> CallOutcome:
        """One model call under the budget. Raises BudgetExceeded or ProviderError.

        Its CallRecord is appended to ``into`` (a worker's tally) as well as emitted;
        ``on_delta(text, attempt)`` receives streamed text with the attempt it belongs to.
        ``keep``: the CallRecord keeps the messages sent and the text answered (the
        judge's, whose prompt cannot be rebuilt from the run's config and plan).
        ``carried``: a call made before the run began (``CarriedCall``), which the caller
        answers as it was answered then; nothing is reserved (it was paid already) and its
        recorded cost is charged to the budget as spent, even past the cap.
        """
        kept = request.messages if keep else None
        if reservation is None and self.budget.capped and not carried:
            usd, tokens = self.worst_case(role, request)
            reservation = await self.budget.reserve(usd, tokens, what=step)
        started = self._now()
        attempts = _Attempts(self._emit, on_delta)
        try:
            outcome = await self.caller.complete(
                request,
                role=self.config.role(role),
                run_id=self.run_id,
                step=step,
                emit=attempts.emit,
                clock=self._now,
                on_delta=None if on_delta is None else attempts.deliver,
            )
        except ProviderError as exc:
            if reservation is not None:
                self.budget.release(reservation)
            replayed = exc.started is not None  # a replayed failure keeps its recorded timing
            # A carried failure has its recorded timing too, and was live (unless replayed).
            shown_live = not replayed or (carried and not self.config.replay)
            self._finish(self._record(
                role, step, request,
                source="live" if shown_live else "replay",
                usage=Usage(requests=exc.attempts),
                started=exc.started if exc.started is not None else started,
                latency=exc.latency if exc.latency is not None else self._now() - started,
                attempts=exc.attempts, error=str(exc), status=exc.status, messages=kept,
            ), into)
            raise
        except BaseException as exc:
            if reservation is not None:
                self.budget.release(reservation)
            if isinstance(exc, asyncio.CancelledError) and attempts.count:
                # Requests were sent: keep them in the Run, unbilled, like failed calls.
                reason = self._halt.reason
                self._finish(self._record(
                    role, step, request, source="live", usage=Usage(requests=attempts.count),
                    started=started, latency=self._now() - started, attempts=attempts.count,
                    error=f"cancelled ({reason})" if reason else "cancelled",
                ), into)
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
        elif carried:
            self.budget.charge(cost, usage.total_tokens)
        self._finish(self._record(
            role, step, request, source=outcome.source, usage=usage, cost=cost,
            started=started if outcome.started is None else outcome.started,
            latency=outcome.latency, attempts=outcome.attempts, occurrence=outcome.occurrence,
            finish_reason=outcome.response.finish_reason, messages=kept,
            output=outcome.response.content if keep else None,
        ), into, outcome.response.model)
        return outcome

    def batched(
        self,
        step: str,
        request: ChatRequest,
        *,
        usage: Usage,
        started: float,
        error: str | None = None,
        status: int | None = None,
        reservation: Reservation | None = None,
        into: list[CallRecord] | None = None,
        finish_reason: str | None = None,
    ) -> CallRecord:
        """A worker's call answered by a Batch API line (``--batch``): priced at the
        model's batch price (unknown when that is), settled against its reservation and
        emitted like any call. A failed line is unbilled."""
        cost = Decimal(0) if error is not None else self.prices.batch_cost(request.model,
                                                                            usage)
        if reservation is not None:
            if error is None:
                self.budget.settle(reservation, cost, usage.total_tokens)
            else:
                self.budget.release(reservation)
        record = self._record("worker", step, request, source="live", usage=usage,
                              cost=cost, started=started, latency=self._now() - started,
                              attempts=1, error=error, status=status,
                              finish_reason=finish_reason)
        self._finish(record, into)
        return record

    @staticmethod
    def _record(
        role: Role,
        step: str,
        request: ChatRequest,
        *,
        source: CallSource,
        usage: Usage,
        started: float,
        latency: float,
        attempts: int,
        cost: Decimal | None = Decimal(0),
        occurrence: int = 0,
        error: str | None = None,
        status: int | None = None,
        finish_reason: str | None = None,
        messages: tuple[dict[str, Any], ...] | None = None,
        output: str | None = None,
    ) -> CallRecord:
        """The one place a CallRecord is built. A failed call costs nothing: it is unbilled.
        ``finish_reason`` is the response's, whichever way it was served (live, streamed,
        from the cache or a cassette), so a cut answer is marked in every view."""
        return CallRecord(
            step=step, role=role, model=request.model, source=source, usage=usage,
            cost_usd=cost, started=started, latency=latency, attempts=attempts,
            fingerprint=request.fingerprint(), occurrence=occurrence, error=error,
            status=status, finish_reason=finish_reason, messages=messages, output=output,
        )

    def _finish(
        self, record: CallRecord, into: list[CallRecord] | None, response_model: str | None = None
    ) -> None:
        if into is not None:
            into.append(record)
        self._emit(CallFinished(record, t=self._now(), response_model=response_model))
        self.report_budget()

    def report_budget(self) -> None:
        """A BudgetUpdated with the budget as it stands, when it is capped (after every
        call: this process's, or a shard's the driver heard of)."""
        if self.budget.capped:
            snap = self.budget.snapshot()
            self._emit(
                BudgetUpdated(
                    spent_usd=snap.spent_usd,
                    reserved_usd=snap.reserved_usd + snap.held_usd,
                    cap_usd=snap.cap_usd,
                    spent_tokens=snap.spent_tokens,
                    t=self._now(),
                )
            )
