"""The run's budget and rate limits as a shard sees them: asked of the driver.

A cluster run has one budget and one set of rate limits, held by the driver (the
kernel), where the planner and the reducer use them too. A shard's call reserves its
worst case by asking the driver, which reserves it on the run's ``Budget`` (waiting, or
refusing, exactly as in one process) and answers; the settle or release that follows
needs no answer. With ``rpm``/``tpm`` each attempt is admitted the same way by the
driver's ``RateLimits``, which picks the key; without them a shard paces itself.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from decimal import Decimal

from ..engine.budget import Budget, BudgetSnapshot, Reservation
from ..record.events import Event
from .messages import Tell
from .outbox import Outbox

__all__ = ["AskedAdmission", "AskedBudget", "AskedLimits"]


class AskedBudget(Budget):
    """A Budget whose reservations are the driver's (the caps are only read here)."""

    def __init__(self, outbox: Outbox, cap_usd: Decimal | None, cap_tokens: int | None
                 ) -> None:
        super().__init__(cap_usd, cap_tokens)
        self._outbox = outbox

    def try_reserve(self, usd: Decimal, tokens: int) -> Reservation | None:
        return None  # only the driver knows what is open: reserve() asks it

    async def reserve(self, usd: Decimal, tokens: int, *, what: str = "call") -> Reservation:
        ident, _ = await self._outbox.ask("reserve", usd, tokens, what)
        return Reservation(ident, usd, tokens)

    def settle(self, reservation: Reservation, usd: Decimal | None, tokens: int | None) -> None:
        self._outbox.put(Tell(reservation.id, "settle", (usd, tokens)))

    def release(self, reservation: Reservation) -> None:
        self._outbox.put(Tell(reservation.id, "release"))

    def snapshot(self) -> BudgetSnapshot:
        # Read only for the BudgetUpdated a shard never sends (Outbox.emit): the driver
        # reports the one budget after each call it hears of.
        return BudgetSnapshot(Decimal(0), Decimal(0), Decimal(0), self.cap_usd, 0, 0,
                              self.cap_tokens)


class AskedAdmission:
    """An attempt the driver admitted; how it ended goes back to the driver."""

    __slots__ = ("_id", "_outbox", "key_env")

    def __init__(self, outbox: Outbox, ident: int, key_env: str) -> None:
        self._outbox, self._id, self.key_env = outbox, ident, key_env

    def succeeded(self, tokens: int | None, emit: Callable[[Event], None],
                  clock: Callable[[], float]) -> None:
        self._outbox.put(Tell(self._id, "succeeded", (tokens,)))

    def failed(self, status: int | None, emit: Callable[[Event], None],
               clock: Callable[[], float], *, pause: float = 0.0) -> None:
        self._outbox.put(Tell(self._id, "failed", (status, pause)))

    def abandon(self) -> None:
        self._outbox.put(Tell(self._id, "abandon"))


class AskedLimits:
    """The provider's ``Admits``: each attempt admitted by the driver's RateLimits."""

    def __init__(self, outbox: Outbox) -> None:
        self._outbox = outbox

    async def admit(self, base_url: str, key_envs: Sequence[str], tokens: int, *,
                    step: str, emit: Callable[[Event], None],
                    clock: Callable[[], float]) -> AskedAdmission:
        ident, key_env = await self._outbox.ask("admit", base_url, tuple(key_envs), tokens,
                                                step)
        return AskedAdmission(self._outbox, ident, key_env)
