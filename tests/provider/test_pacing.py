"""The pacing primitives: the sliding-window limiter (refunds, waiting) and the AIMD gate."""

from __future__ import annotations

import asyncio

import pytest

from swarmkit.provider.pacing import AdaptiveGate, GateTicket, WindowLimiter


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


async def settle_loop(rounds: int = 5) -> None:
    for _ in range(rounds):
        await asyncio.sleep(0)


# -- WindowLimiter ------------------------------------------------------------------------


def test_grants_up_to_the_limit_then_refuses() -> None:
    limiter = WindowLimiter(3, 10.0, clock=FakeClock())
    grants = [limiter.try_acquire(1) for _ in range(3)]
    assert all(g is not None for g in grants)
    assert limiter.try_acquire(1) is None
    assert limiter.used == 3
    assert limiter.delay(1) is None  # only calls in flight block it: wait for one to end


def test_a_settled_grant_counts_for_one_more_window_then_leaves() -> None:
    clock = FakeClock()
    limiter = WindowLimiter(2, 10.0, clock=clock)
    first, second = limiter.try_acquire(1), limiter.try_acquire(1)
    assert first is not None and second is not None
    clock.now += 3
    limiter.settle(first)
    assert limiter.used == 2
    assert limiter.delay(1) == pytest.approx(10.0)  # counted from when its answer arrived
    clock.now += 9.5
    assert limiter.delay(1) == pytest.approx(0.5)
    clock.now += 0.5
    assert limiter.used == 1
    assert limiter.try_acquire(1) is not None


def test_refund_gives_room_back_at_once_and_settle_lowers_to_actual() -> None:
    clock = FakeClock()
    limiter = WindowLimiter(1000, 60.0, clock=clock)
    estimate = limiter.try_acquire(800)
    assert estimate is not None
    assert limiter.try_acquire(300) is None
    limiter.settle(estimate, 120)  # the call used 120 tokens, not the 800 reserved
    assert limiter.used == 120
    other = limiter.try_acquire(300)
    assert other is not None and limiter.used == 420
    limiter.refund(other)  # the server refused it: it counts nothing
    assert limiter.used == 120
    limiter.refund(other)  # settling twice changes nothing
    limiter.settle(estimate, 0)
    assert limiter.used == 120


def test_an_amount_over_the_whole_limit_waits_for_an_empty_window() -> None:
    limiter = WindowLimiter(100, 60.0, clock=FakeClock())
    small = limiter.try_acquire(10)
    assert small is not None
    assert limiter.try_acquire(500) is None
    limiter.refund(small)
    assert limiter.try_acquire(500) is not None  # alone in the window it may proceed


def test_acquire_waits_for_a_settle_and_serves_in_arrival_order() -> None:
    async def scenario() -> list[int]:
        limiter = WindowLimiter(1, 60.0, clock=FakeClock())
        held = await limiter.acquire(1)
        order: list[int] = []

        async def take(n: int) -> None:
            grant = await limiter.acquire(1)
            order.append(n)
            limiter.refund(grant)

        tasks = [asyncio.create_task(take(n)) for n in range(3)]
        await settle_loop()
        assert order == [] and limiter.busy
        assert limiter.try_acquire(1) is None  # nobody may cut in ahead of the queue
        limiter.refund(held)
        await asyncio.wait_for(asyncio.gather(*tasks), 5)
        return order

    assert asyncio.run(scenario()) == [0, 1, 2]


def test_acquire_wakes_when_an_old_grant_leaves_the_window() -> None:
    async def scenario() -> bool:
        limiter = WindowLimiter(1, 0.2)  # the real clock: only the wake-up is checked
        limiter.settle(await limiter.acquire(1))
        waiter = asyncio.create_task(limiter.acquire(1))
        await settle_loop()
        blocked = not waiter.done()
        await asyncio.wait_for(waiter, 5)
        return blocked

    assert asyncio.run(scenario())


def test_a_cancelled_waiter_leaves_the_queue() -> None:
    async def scenario() -> None:
        limiter = WindowLimiter(1, 60.0, clock=FakeClock())
        held = await limiter.acquire(1)
        waiter = asyncio.create_task(limiter.acquire(1))
        await settle_loop()
        waiter.cancel()
        await asyncio.gather(waiter, return_exceptions=True)
        assert not limiter.busy
        limiter.refund(held)
        assert limiter.try_acquire(1) is not None

    asyncio.run(scenario())


def test_limits_must_be_positive() -> None:
    with pytest.raises(ValueError):
        WindowLimiter(0, 60.0)
    with pytest.raises(ValueError):
        AdaptiveGate(0)


# -- AdaptiveGate (AIMD) --------------------------------------------------------------------


def test_a_429_halves_the_limit_and_never_goes_below_one() -> None:
    gate = AdaptiveGate(20)
    limits = []
    for _ in range(6):
        ticket = gate.try_acquire()
        assert ticket is not None
        limits.append(gate.rate_limited(ticket))
        gate.release()
    assert limits == [10, 5, 2, 1, None, None]
    assert gate.limit == 1


def test_429s_from_one_wave_cut_only_once() -> None:
    gate = AdaptiveGate(8)
    tickets = [gate.try_acquire() for _ in range(8)]
    assert all(t is not None for t in tickets)
    cuts = [gate.rate_limited(t) for t in tickets if t is not None]
    assert cuts == [4, None, None, None, None, None, None, None]
    later = GateTicket(epoch=1)  # sent after the cut: a new episode, cut again
    assert gate.rate_limited(later) == 2


def test_successes_climb_by_one_up_to_the_cap() -> None:
    gate = AdaptiveGate(4)
    ticket = gate.try_acquire()
    assert ticket is not None
    assert gate.rate_limited(ticket) == 2
    gate.release()
    climbs = [gate.succeeded(GateTicket(gate.epoch)) for _ in range(2 + 3 + 4)]
    # Two successes at limit 2 -> 3, three at 3 -> 4, then the cap holds.
    assert climbs == [None, 3, None, None, 4, None, None, None, None]
    assert gate.limit == 4


def test_a_429_resets_the_run_of_successes() -> None:
    gate = AdaptiveGate(8)
    gate.limit = 4
    gate.succeeded(GateTicket(gate.epoch))
    gate.succeeded(GateTicket(gate.epoch))
    gate.succeeded(GateTicket(gate.epoch))
    assert gate.rate_limited(GateTicket(0)) == 2
    assert gate.succeeded(GateTicket(gate.epoch)) is None
    assert gate.succeeded(GateTicket(gate.epoch)) == 3


def test_the_gate_holds_attempts_over_the_limit_and_wakes_them_in_order() -> None:
    async def scenario() -> list[int]:
        gate = AdaptiveGate(2)
        first = await gate.acquire()
        await gate.acquire()
        gate.rate_limited(first)  # limit 1 with two in flight
        order: list[int] = []

        async def attempt(n: int) -> None:
            await gate.acquire()
            order.append(n)

        tasks = [asyncio.create_task(attempt(n)) for n in range(2)]
        await settle_loop()
        gate.release()
        await settle_loop()
        assert order == []  # one still in flight, and the limit is now 1
        gate.release()
        await settle_loop()
        assert order == [0] and gate.in_flight == 1
        # One success at limit 1 climbs to 2 and lets the next one in.
        gate.succeeded(GateTicket(gate.epoch))
        await asyncio.wait_for(asyncio.gather(*tasks), 5)
        assert gate.in_flight == 2
        return order

    assert asyncio.run(scenario()) == [0, 1]


def test_a_cancelled_gate_waiter_gives_its_place_up() -> None:
    async def scenario() -> None:
        gate = AdaptiveGate(1)
        await gate.acquire()
        waiter = asyncio.create_task(gate.acquire())
        await settle_loop()
        waiter.cancel()
        await asyncio.gather(waiter, return_exceptions=True)
        gate.release()
        assert gate.in_flight == 0 and gate.try_acquire() is not None

    asyncio.run(scenario())
