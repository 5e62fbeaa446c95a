"""Rate limits per endpoint: RPM/TPM per key, adaptive concurrency, several keys.

Every attempt of a live call is admitted by :meth:`RateLimits.admit` before it is sent:

1. the endpoint's :class:`~swarmkit.provider.pacing.AdaptiveGate` (one per base URL, shared by
   every role that uses it) caps attempts in flight; it starts at ``concurrency``, halves
   on a 429 and climbs back by one after a run of successes. The engine's worker
   semaphore stays at ``concurrency``, so only this gate ever goes lower;
2. the least-loaded of the role's keys is picked, and that key's own RPM and TPM windows
   are waited on. TPM counts the worst case the budget reserves (every prompt byte a
   token, plus ``max_tokens``) and settles to the real usage when the answer arrives.

Windows belong to the key, not to one run: they are shared by every run on the same
event loop (e.g. successive ``%%swarm`` cells), since the provider counts them together.
Providers that charge ``max_tokens`` up front (OpenAI does) count more than the real usage
a settled window keeps; the adaptive gate absorbs the 429s that difference may cause.

Only variable *names* of keys pass through here, never their values.
"""

from __future__ import annotations

import asyncio
import itertools
import math
import time
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from ..config.swarmconfig import SwarmConfig
from ..config.urls import redact_url
from ..config.wording import counted
from ..record.events import ConcurrencyChanged, Event, RateLimitWait
from .embedded import MAX_SLOTS, slots_at
from .pacing import AdaptiveGate, GateTicket, WindowGrant, WindowLimiter

__all__ = [
    "Admission",
    "Admits",
    "AttemptAdmission",
    "KeyWindows",
    "RateLimits",
    "ideal_wall_time",
]


Emit = Callable[[Event], None]
Clock = Callable[[], float]


def ideal_wall_time(
    requests: int,
    *,
    limit: float,
    window: float = 60.0,
    latency: float = 0.0,
    concurrency: int | None = None,
) -> float:
    """The least wall time for ``requests`` calls under ``limit`` per ``window`` seconds.

    A perfect client sends ``limit`` calls at once, waits for the window to roll, and
    repeats; ``concurrency`` (if given) also bounds each wave's calls to waves of that
    size, each ``latency`` long. Benchmarks report a rate-limited run against this.
    """
    if requests <= 0:
        return 0.0
    per_window = max(1, math.floor(limit))
    by_rate = (math.ceil(requests / per_window) - 1) * window + latency
    by_slots = math.ceil(requests / concurrency) * latency if concurrency else latency
    return max(by_rate, by_slots)


class AttemptAdmission(Protocol):
    """What the provider holds of one admitted attempt (an :class:`Admission`, or a
    shard's stand-in for one the driver holds: ``swarmkit.cluster``)."""

    key_env: str

    def succeeded(self, tokens: int | None, emit: Emit, clock: Clock) -> None: ...
    def failed(self, status: int | None, emit: Emit, clock: Clock, *,
               pause: float = 0.0) -> None: ...
    def abandon(self) -> None: ...


class Admits(Protocol):
    """Admits each attempt of a live call: :class:`RateLimits` in this process, or a
    shard's requests to the driver that holds the run's one set of limits."""

    async def admit(self, base_url: str, key_envs: Sequence[str], tokens: int, *,
                    step: str, emit: Emit, clock: Clock) -> AttemptAdmission: ...


@dataclass(eq=False)
class KeyWindows:
    """One key's RPM and TPM windows at one endpoint, and the calls it is serving."""

    rpm: WindowLimiter | None = None
    tpm: WindowLimiter | None = None
    pending: int = 0  # calls waiting for, or holding, this key's room
    paused_until: float = 0.0  # time.monotonic() before which no attempt is sent
    ramp: int | None = None  # after a pause: attempts allowed in flight on this key
    ramp_cap: int = 1  # the ramp ends here (the endpoint's concurrency)
    sending: int = 0  # attempts past the pause and ramp, not yet ended
    _turn: asyncio.Event | None = None  # set whenever a paused or ramping key frees up

    def pause(self, seconds: float) -> None:
        """A 429 said to wait: hold back every call on this key, not only the refused one.

        Retry-After often names only when the *first* unit of room comes back, so after
        the pause the key ramps up: one attempt alone, then one more per success (twice
        as many per round trip), until ``ramp_cap`` attempts may be in flight again.
        """
        self.paused_until = max(self.paused_until, time.monotonic() + seconds)
        self.ramp = 1

    def pause_left(self) -> float:
        return max(0.0, self.paused_until - time.monotonic())

    async def wait_turn(self, report: _WaitReport) -> None:
        """Wait out a pause and the ramp after it, then count this attempt as sending."""
        while True:
            if (left := self.pause_left()) > 0:
                report.start()
                await asyncio.sleep(left)
            elif self.ramp is not None and self.sending >= self.ramp:
                report.start()
                if self._turn is None:
                    self._turn = asyncio.Event()
                await self._turn.wait()
            else:
                self.sending += 1
                return

    def attempt_ended(self, succeeded: bool) -> None:
        self.sending -= 1
        if succeeded and self.ramp is not None:
            self.ramp += 1
            if self.ramp >= self.ramp_cap:
                self.ramp = None
        if self._turn is not None:
            self._turn.set()
            self._turn = None

    def configure(
        self, rpm: float | None, tpm: float | None, window: float, concurrency: int
    ) -> None:
        self.ramp_cap = concurrency
        self.rpm = _reconfigured(self.rpm, rpm, window)
        self.tpm = _reconfigured(self.tpm, tpm, window)

    def ready(self, tokens: int) -> bool:
        clear = self.pause_left() == 0.0 and (self.ramp is None or self.sending < self.ramp)
        return clear and all(
            limiter is None or (not limiter.busy and limiter.delay(amount) == 0.0)
            for limiter, amount in ((self.rpm, 1), (self.tpm, tokens))
        )


def _reconfigured(
    limiter: WindowLimiter | None, limit: float | None, window: float
) -> WindowLimiter | None:
    if limit is None:
        return None
    if limiter is None:
        return WindowLimiter(limit, window)
    limiter.limit, limiter.window = limit, window
    return limiter


# Windows per (base URL, key variable), one table per event loop: asyncio primitives
# belong to the loop they were first used on.
_SHARED: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[str, str], KeyWindows]]
_SHARED = weakref.WeakKeyDictionary()


def _windows(base_url: str, key_env: str) -> KeyWindows:
    loop = asyncio.get_running_loop()
    table = _SHARED.get(loop)
    if table is None:
        table = _SHARED.setdefault(loop, {})
    windows = table.get((base_url, key_env))
    if windows is None:
        windows = table[(base_url, key_env)] = KeyWindows()
    return windows


@dataclass(eq=False)
class Admission:
    """One admitted attempt: which key it uses, and the room it holds until it ends."""

    key_env: str
    endpoint: str = ""
    _gate: AdaptiveGate | None = None
    _ticket: GateTicket | None = None
    _key: KeyWindows | None = None
    _grants: list[tuple[WindowLimiter, WindowGrant, bool]] = field(default_factory=list)
    _sending: bool = False
    _done: bool = False

    def succeeded(self, tokens: int | None, emit: Emit, clock: Clock) -> None:
        """The answer arrived; ``tokens`` is its real usage (None: keep the estimate)."""
        if self._end(succeeded=True):
            return
        for limiter, grant, counts_tokens in self._grants:
            limiter.settle(grant, tokens if counts_tokens else None)
        if self._gate is not None and self._ticket is not None:
            self._changed(self._gate.succeeded(self._ticket), "recovered", emit, clock)

    def failed(self, status: int | None, emit: Emit, clock: Clock, *, pause: float = 0.0) -> None:
        """The attempt failed. A 429 was not counted by the server; it cuts concurrency and
        pauses the key for ``pause`` seconds (the Retry-After, or the retry's backoff)."""
        if status == 429 and self._key is not None and not self._done:
            self._key.pause(pause)
        if self._end(succeeded=status != 429):
            return
        for limiter, grant, _ in self._grants:
            if status == 429:
                limiter.refund(grant)
            else:
                limiter.settle(grant)  # it may have been counted: keep the estimate
        if status == 429 and self._gate is not None and self._ticket is not None:
            self._changed(self._gate.rate_limited(self._ticket), "429", emit, clock)

    def abandon(self) -> None:
        """Cancelled or broken mid-attempt: free the slot and keep the room counted."""
        if self._end():
            return
        for limiter, grant, _ in self._grants:
            limiter.settle(grant)

    def _unsent(self) -> None:
        """Admission itself was interrupted: nothing was sent, so give everything back."""
        if self._end():
            return
        for limiter, grant, _ in self._grants:
            limiter.refund(grant)

    def _end(self, *, succeeded: bool = False) -> bool:
        if self._done:
            return True
        self._done = True
        if self._key is not None:
            self._key.pending -= 1
            if self._sending:
                self._key.attempt_ended(succeeded)
        if self._gate is not None and self._ticket is not None:
            self._gate.release()
        return False

    def _changed(self, limit: int | None, reason: str, emit: Emit, clock: Clock) -> None:
        if limit is not None:
            emit(ConcurrencyChanged(redact_url(self.endpoint), limit, reason, t=clock()))


class _WaitReport:
    """Emits RateLimitWait(True) once when a call starts waiting, and False when it ends."""

    def __init__(self, emit: Emit, step: str, clock: Clock) -> None:
        self.emit, self.step, self.clock = emit, step, clock
        self.waiting = False

    def start(self) -> None:
        if not self.waiting:
            self.waiting = True
            self.emit(RateLimitWait(self.step, True, t=self.clock()))

    def stop(self) -> None:
        if self.waiting:
            self.waiting = False
            self.emit(RateLimitWait(self.step, False, t=self.clock()))


def _pick_name(names: Sequence[str], turn: int) -> str:
    return names[turn % len(names)] if names else ""


class RateLimits:
    """Admits one provider's attempts under its configured limits, per base URL."""

    def __init__(self, config: SwarmConfig) -> None:
        self.rpm = config.rpm
        self.tpm = config.tpm
        self.window = config.rate_window
        self.concurrency = config.concurrency
        self.adaptive = config.adaptive_concurrency
        self._gates: dict[str, AdaptiveGate | None] = {}
        self._turns = itertools.count()
        # Endpoints whose cap is below the concurrency and not yet reported (the embedded
        # server's slots): said once, as a ConcurrencyChanged, so nothing queues unseen.
        self._unreported: dict[str, str] = {}

    def gate(self, base_url: str) -> AdaptiveGate | None:
        """The endpoint's gate, decided once per endpoint (None: nothing caps it)."""
        if base_url in self._gates:
            return self._gates[base_url]
        gate: AdaptiveGate | None = None
        slots = slots_at(base_url)
        if slots is not None and slots < self.concurrency:
            gate = AdaptiveGate(slots)
            self._unreported[base_url] = (
                f"the embedded model serves {counted(slots, 'request')} at once (its slots, "
                f"at most {MAX_SLOTS}); the other calls wait here, not at the server")
        elif self.adaptive:
            gate = AdaptiveGate(self.concurrency)
        self._gates[base_url] = gate
        return gate

    async def admit(
        self,
        base_url: str,
        key_envs: Sequence[str],
        tokens: int,
        *,
        step: str,
        emit: Emit,
        clock: Clock,
    ) -> Admission:
        """Wait for a slot and for room on the least-loaded key; report waiting if any."""
        gate = self.gate(base_url)
        reason = self._unreported.pop(base_url, None)
        if reason is not None and gate is not None:
            emit(ConcurrencyChanged(redact_url(base_url), gate.limit, reason, t=clock()))
        limited = self.rpm is not None or self.tpm is not None
        if gate is None and not limited:
            return Admission(_pick_name(key_envs, next(self._turns)), base_url)
        report = _WaitReport(emit, step, clock)
        admission = Admission("", base_url, gate)
        try:
            if gate is not None:
                admission._ticket = gate.try_acquire()
                if admission._ticket is None:
                    report.start()
                    admission._ticket = await gate.acquire()
            await self._take_room(admission, base_url, key_envs, tokens, report)
        except BaseException:
            admission._unsent()
            raise
        finally:
            report.stop()
        return admission

    async def _take_room(
        self,
        admission: Admission,
        base_url: str,
        key_envs: Sequence[str],
        tokens: int,
        report: _WaitReport,
    ) -> None:
        names = list(key_envs) or [""]
        keys = [_windows(base_url, name) for name in names]
        for key in keys:
            key.configure(self.rpm, self.tpm, self.window, self.concurrency)
        turn = next(self._turns)
        # Prefer a key with room now, then the one serving fewest calls, then take turns.
        best = 0 if len(names) == 1 else min(
            range(len(names)),
            key=lambda i: (not keys[i].ready(tokens), keys[i].pending, (i - turn) % len(names)),
        )
        key = keys[best]
        admission.key_env, admission._key = names[best], key
        key.pending += 1
        await key.wait_turn(report)
        admission._sending = True
        for limiter, amount, counts_tokens in ((key.rpm, 1, False), (key.tpm, tokens, True)):
            if limiter is None:
                continue
            grant = limiter.try_acquire(amount)
            if grant is None:
                report.start()
                grant = await limiter.acquire(amount)
            admission._grants.append((limiter, grant, counts_tokens))
