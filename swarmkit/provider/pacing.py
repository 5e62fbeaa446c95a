"""Pacing primitives: a sliding-window limiter with refunds, and an AIMD concurrency gate.

:class:`WindowLimiter` admits at most ``limit`` units (requests or tokens) in any
``window`` seconds. A grant counts from the moment it is taken until ``window`` seconds
after it is *settled*, i.e. after its answer arrived. Providers stamp a request somewhere
between those two moments, so counting that whole span means a client that obeys the
limiter can never be ahead of a server enforcing the same limit over a sliding window, a
fixed window, or any quantised variant of them. Settling may lower the amount (the TPM
estimate becomes the real usage); a refunded grant (a request the server refused with
429, which it does not count) frees its room at once.

``aiolimiter`` was considered: it is a leaky bucket that lets a burst of ``max_rate``
through and then refills, so it admits close to twice the limit within one window, and
it has no way to give back an unused reservation.

:class:`AdaptiveGate` caps in-flight attempts with additive increase and multiplicative
decrease (AIMD): a 429 halves the limit (never below 1), and ``limit`` successes in a row
raise it by one, up to its cap. 429s from attempts that started before the last cut
belong to the same congestion episode and do not cut again.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["AdaptiveGate", "GateTicket", "WindowGrant", "WindowLimiter"]


@dataclass(eq=False, slots=True)
class WindowGrant:
    """Room taken in a :class:`WindowLimiter`; settle or refund it exactly once."""

    amount: int
    settled: bool = False


class WindowLimiter:
    """At most ``limit`` units in any ``window`` seconds, first come first served."""

    def __init__(
        self, limit: float, window: float = 60.0, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if limit <= 0 or window <= 0:
            raise ValueError(f"limit and window must be positive, got {limit} and {window}")
        self.limit = limit
        self.window = window
        self._clock = clock
        self._open = 0  # units of grants not yet settled
        self._settled: deque[tuple[float, WindowGrant]] = deque()  # (settled at, grant)
        self._settled_total = 0
        self._queue = asyncio.Lock()  # asyncio.Lock wakes waiters in FIFO order
        self._changed = asyncio.Event()

    @property
    def used(self) -> int:
        """Units counted in the window right now (in flight plus recently settled)."""
        self._expire(self._clock())
        return self._open + self._settled_total

    @property
    def busy(self) -> bool:
        """True while some call is already queued for room."""
        return self._queue.locked()

    def _expire(self, now: float) -> None:
        while self._settled and self._settled[0][0] + self.window <= now:
            _, grant = self._settled.popleft()
            self._settled_total -= grant.amount

    def _fits(self, used: int, amount: int) -> bool:
        # An amount over the whole limit waits for an empty window instead of forever.
        return used == 0 or used + amount <= self.limit

    def delay(self, amount: int) -> float | None:
        """Seconds until ``amount`` fits: 0 now, None when it waits for calls in flight."""
        now = self._clock()
        self._expire(now)
        used = self._open + self._settled_total
        if self._fits(used, amount):
            return 0.0
        for settled_at, grant in self._settled:
            used -= grant.amount
            if self._fits(used, amount):
                return max(settled_at + self.window - now, 0.0)
        return None

    def try_acquire(self, amount: int) -> WindowGrant | None:
        """A grant now if nobody is queued and ``amount`` fits, else None."""
        if self.busy or self.delay(amount) != 0.0:
            return None
        return self._take(amount)

    async def acquire(self, amount: int) -> WindowGrant:
        """Wait (in arrival order) until ``amount`` fits, then take it."""
        async with self._queue:
            while True:
                delay = self.delay(amount)
                if delay == 0.0:
                    return self._take(amount)
                self._changed.clear()
                # Wake when a grant settles, or when the oldest blocking one leaves the window.
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._changed.wait(), delay)

    def _take(self, amount: int) -> WindowGrant:
        grant = WindowGrant(max(0, amount))
        self._open += grant.amount
        return grant

    def settle(self, grant: WindowGrant, amount: int | None = None) -> None:
        """The call ended: it counts as ``amount`` (default: as taken) for one more window."""
        if grant.settled:
            return
        grant.settled = True
        self._open -= grant.amount
        if amount is not None:
            grant.amount = max(0, amount)
        if grant.amount:
            self._settled.append((self._clock(), grant))
            self._settled_total += grant.amount
        self._changed.set()

    def refund(self, grant: WindowGrant) -> None:
        """The server did not count this call: give its room back at once."""
        self.settle(grant, 0)


@dataclass(frozen=True, slots=True)
class GateTicket:
    """One admitted attempt; ``epoch`` tells which congestion episode it started in."""

    epoch: int


class AdaptiveGate:
    """Caps in-flight attempts at an AIMD-adjusted ``limit`` between 1 and ``cap``."""

    def __init__(self, cap: int) -> None:
        if cap < 1:
            raise ValueError(f"cap must be at least 1, got {cap}")
        self.cap = cap
        self.limit = cap
        self.in_flight = 0
        self._epoch = 0
        self._successes = 0
        self._waiters: deque[asyncio.Future[None]] = deque()

    @property
    def epoch(self) -> int:
        """How many times the limit has been cut (a ticket from before a cut is stale)."""
        return self._epoch

    @property
    def full(self) -> bool:
        return self.in_flight >= self.limit or bool(self._waiters)

    def try_acquire(self) -> GateTicket | None:
        if self.full:
            return None
        self.in_flight += 1
        return GateTicket(self._epoch)

    async def acquire(self) -> GateTicket:
        ticket = self.try_acquire()
        if ticket is not None:
            return ticket
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self.release()  # the slot was handed over as we were cancelled
            elif waiter in self._waiters:  # _wake may already have dropped it
                self._waiters.remove(waiter)
            raise
        return GateTicket(self._epoch)

    def release(self) -> None:
        self.in_flight -= 1
        self._wake()

    def _wake(self) -> None:
        while self._waiters and self.in_flight < self.limit:
            waiter = self._waiters.popleft()
            if not waiter.done():
                self.in_flight += 1  # hand the slot over directly: no one can cut in
                waiter.set_result(None)

    def rate_limited(self, ticket: GateTicket) -> int | None:
        """A 429 came back: halve the limit; the new limit, or None if it did not change."""
        self._successes = 0
        if ticket.epoch != self._epoch:
            return None  # sent before the last cut: the same episode, already answered
        self._epoch += 1
        new = max(1, self.limit // 2)
        if new == self.limit:
            return None
        self.limit = new
        return new

    def succeeded(self, ticket: GateTicket) -> int | None:
        """An attempt succeeded: after ``limit`` in a row, the limit climbs by one.

        Only attempts sent since the last cut count: the ones in flight when it happened
        say nothing about whether the lower limit is safe to raise.
        """
        if self.limit >= self.cap or ticket.epoch != self._epoch:
            return None
        self._successes += 1
        if self._successes < self.limit:
            return None
        self._successes = 0
        self.limit += 1
        self._wake()
        return self.limit
