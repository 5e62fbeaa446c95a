"""The budget: reserve a worst case before each call, settle to the actual cost after it.

Spent can never pass the cap, whatever the concurrency: a call may start only when
``spent + reserved + held + its worst case <= cap``. A call that does not fit *now* but
could fit once in-flight calls settle waits for them; one that cannot fit even if every
in-flight call cost nothing is refused at once with ``BudgetExceeded``.

A hold keeps room for the reducer, so a capped run still merges what its workers found.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
from dataclasses import dataclass
from decimal import Decimal

from ..errors import BudgetExceeded

__all__ = ["Budget", "BudgetSnapshot", "Reservation"]

_ZERO = Decimal(0)


@dataclass(frozen=True, slots=True)
class Reservation:
    id: int
    usd: Decimal
    tokens: int


@dataclass(frozen=True, slots=True)
class BudgetSnapshot:
    spent_usd: Decimal
    reserved_usd: Decimal
    held_usd: Decimal
    cap_usd: Decimal | None
    spent_tokens: int
    reserved_tokens: int
    cap_tokens: int | None


class Budget:
    """USD and token caps shared by every call of one run (or of every variant of a
    comparison, each holding room for its own reducer)."""

    def __init__(self, cap_usd: Decimal | None = None, cap_tokens: int | None = None) -> None:
        self.cap_usd = cap_usd
        self.cap_tokens = cap_tokens
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._open: dict[int, Reservation] = {}
        # Running sums of the open reservations: every reserve and snapshot needs them,
        # and with hundreds of calls in flight summing the dict each time is O(n) per call.
        self._open_usd = _ZERO
        self._open_tokens = 0
        self._spent_usd = _ZERO
        self._spent_tokens = 0
        self._holds: dict[str, tuple[Decimal, int]] = {}  # holder -> room set aside
        self._held_usd = _ZERO
        self._held_tokens = 0
        self._settled = asyncio.Event()

    @property
    def capped(self) -> bool:
        return self.cap_usd is not None or self.cap_tokens is not None

    def snapshot(self) -> BudgetSnapshot:
        with self._lock:
            return BudgetSnapshot(
                spent_usd=self._spent_usd,
                reserved_usd=self._open_usd,
                held_usd=self._held_usd,
                cap_usd=self.cap_usd,
                spent_tokens=self._spent_tokens,
                reserved_tokens=self._open_tokens,
                cap_tokens=self.cap_tokens,
            )

    def hold(self, usd: Decimal, tokens: int, holder: str = "reducer") -> bool:
        """Set room aside for ``holder`` (a run's reducer), replacing its earlier hold.
        Returns False when even that does not fit."""
        with self._lock:
            old_usd, old_tokens = self._holds.get(holder, (_ZERO, 0))
            if not self._fits(self._held_usd - old_usd + usd,
                              self._held_tokens - old_tokens + tokens):
                return False
            self._holds[holder] = (usd, tokens)
            self._held_usd += usd - old_usd
            self._held_tokens += tokens - old_tokens
            return True

    def release_hold(self, holder: str = "reducer") -> None:
        with self._lock:
            usd, tokens = self._holds.pop(holder, (_ZERO, 0))
            self._held_usd -= usd
            self._held_tokens -= tokens

    def try_reserve(self, usd: Decimal, tokens: int) -> Reservation | None:
        """Reserve now if it fits beside everything open and held, else None."""
        with self._lock:
            if not self._fits_now(usd, tokens):
                return None
            reservation = Reservation(next(self._ids), usd, tokens)
            self._open[reservation.id] = reservation
            self._open_usd += usd
            self._open_tokens += tokens
            return reservation

    async def reserve(self, usd: Decimal, tokens: int, *, what: str = "call") -> Reservation:
        """Reserve, waiting for in-flight calls to settle if that could make room."""
        while True:
            reservation = self.try_reserve(usd, tokens)
            if reservation is not None:
                return reservation
            with self._lock:
                hopeless = not self._fits_after_settle(usd, tokens) or not self._open
            if hopeless:
                raise BudgetExceeded(self._refusal(usd, tokens, what))
            self._settled.clear()
            await self._settled.wait()

    def settle(self, reservation: Reservation, usd: Decimal | None, tokens: int | None) -> None:
        """Replace a reservation with what the call really cost (None: the worst case)."""
        with self._lock:
            if not self._close(reservation):
                return  # settled already: never charge twice
            self._spent_usd += reservation.usd if usd is None else usd
            self._spent_tokens += reservation.tokens if tokens is None else tokens
        self._settled.set()

    def charge(self, usd: Decimal | None, tokens: int) -> None:
        """Count a call made before the run began (a carried call: the planner's, made by
        ``swarmkit.plan``) as spent. Nothing is reserved: it was paid already, so it is
        counted even past the cap, which :meth:`overspent` then reports."""
        with self._lock:
            self._spent_usd += usd or _ZERO
            self._spent_tokens += tokens
        self._settled.set()

    def overspent(self, what: str) -> str | None:
        """The one-line refusal when what is spent already is over a cap, else None."""
        with self._lock:
            if self.cap_usd is not None and self._spent_usd > self.cap_usd:
                return (f"budget: {what} spent ${self._spent_usd:.6f}, over the budget of "
                        f"${self.cap_usd}; raise the budget")
            if self.cap_tokens is not None and self._spent_tokens > self.cap_tokens:
                return (f"budget: {what} spent {self._spent_tokens} tokens, over "
                        f"budget_tokens {self.cap_tokens}; raise budget_tokens")
        return None

    def release(self, reservation: Reservation) -> None:
        """Give a reservation back unused (the call failed before any usage)."""
        with self._lock:
            self._close(reservation)
        self._settled.set()

    # -- the arithmetic, always called with the lock held --------------------------------

    def _close(self, reservation: Reservation) -> bool:
        """Drop an open reservation from the books; False if it was not open."""
        if self._open.pop(reservation.id, None) is None:
            return False
        self._open_usd -= reservation.usd
        self._open_tokens -= reservation.tokens
        return True

    def _fits_now(self, usd: Decimal, tokens: int) -> bool:
        return self._fits(
            self._open_usd + self._held_usd + usd, self._open_tokens + self._held_tokens + tokens
        )

    def _fits_after_settle(self, usd: Decimal, tokens: int) -> bool:
        return self._fits(self._held_usd + usd, self._held_tokens + tokens)

    def _fits(self, extra_usd: Decimal, extra_tokens: int) -> bool:
        if self.cap_usd is not None and self._spent_usd + extra_usd > self.cap_usd:
            return False
        return self.cap_tokens is None or self._spent_tokens + extra_tokens <= self.cap_tokens

    def _refusal(self, usd: Decimal, tokens: int, what: str) -> str:
        if self.cap_usd is not None and self._spent_usd + self._held_usd + usd > self.cap_usd:
            return (
                f"budget: {what} needs up to ${usd:.6f} but ${self._spent_usd:.6f} of "
                f"${self.cap_usd} is spent and ${self._held_usd:.6f} is held for the reducer; "
                "raise the budget or lower max_tokens"
            )
        return (
            f"budget: {what} needs up to {tokens} tokens but {self._spent_tokens} of "
            f"{self.cap_tokens} are spent; raise budget_tokens or lower max_tokens"
        )
