"""``Ledger``: what one shard's run holds of the driver's budget and rate limits.

The driver answers a shard's asks on the run's one ``Budget`` and one ``RateLimits``
and keeps what each answer handed out (a reservation, an admission) under the ask's id,
until the shard tells how it ended. A shard that dies leaves its holdings here: its
reservations are charged at their worst case (the call may have been billed before the
shard died: the hard cap holds), and its admissions are abandoned (their room stays
counted, as for a call cut off mid-flight).
"""

from __future__ import annotations

from ..engine.budget import Reservation
from ..engine.context import StepContext
from ..errors import BudgetExceeded
from ..provider.ratelimits import AttemptAdmission, RateLimits
from .messages import Answer, Ask, Tell

__all__ = ["Ledger"]


class Ledger:
    """One shard run's reservations and admissions, by the id of the ask that got them."""

    def __init__(self, context: StepContext, limits: RateLimits | None) -> None:
        self._context = context
        self._limits = limits
        self._reserved: dict[int, Reservation] = {}
        self._admitted: dict[int, AttemptAdmission] = {}

    def at_once(self, ask: Ask) -> Answer | None:
        """The answer when it needs no wait (a reservation that fits now), else None."""
        if ask.kind != "reserve":
            return None
        usd, tokens, _ = ask.args
        reservation = self._context.budget.try_reserve(usd, tokens)
        if reservation is None:
            return None
        self._reserved[ask.id] = reservation
        return Answer(ask.id)

    async def answer(self, ask: Ask) -> Answer:
        """The answer, after waiting for room as a call in this process would."""
        context = self._context
        if ask.kind == "reserve":
            usd, tokens, what = ask.args
            try:
                self._reserved[ask.id] = await context.budget.reserve(usd, tokens, what=what)
            except BudgetExceeded as exc:
                return Answer(ask.id, refusal=str(exc))
            return Answer(ask.id)
        assert self._limits is not None, "a shard asked for rate limits the run has not"
        base_url, key_envs, tokens, step = ask.args
        admission = await self._limits.admit(base_url, key_envs, tokens, step=step,
                                             emit=context.emit, clock=context.now)
        self._admitted[ask.id] = admission
        return Answer(ask.id, admission.key_env)

    def tell(self, tell: Tell) -> None:
        context = self._context
        if tell.kind in ("settle", "release"):
            reservation = self._reserved.pop(tell.id, None)
            if reservation is None:
                return
            if tell.kind == "settle":
                context.budget.settle(reservation, *tell.args)
            else:
                context.budget.release(reservation)
            return
        admission = self._admitted.pop(tell.id, None)
        if admission is None:
            return
        if tell.kind == "succeeded":
            admission.succeeded(tell.args[0], context.emit, context.now)
        elif tell.kind == "failed":
            status, pause = tell.args
            admission.failed(status, context.emit, context.now, pause=pause)
        else:
            admission.abandon()

    def close(self) -> None:
        """The shard died: settle what it held (see the module's docstring)."""
        for reservation in self._reserved.values():
            self._context.budget.settle(reservation, None, None)
        for admission in self._admitted.values():
            admission.abandon()
        self._reserved.clear()
        self._admitted.clear()
