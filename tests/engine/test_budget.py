"""Budget: reservations under concurrency never let spend pass the cap."""

from __future__ import annotations

import asyncio
import random
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from swarmkit.engine.budget import Budget
from swarmkit.errors import BudgetExceeded


def test_reservation_that_cannot_fit_even_after_settling_is_refused_with_numbers() -> None:
    budget = Budget(Decimal("1.00"))

    async def scenario() -> None:
        first = await budget.reserve(Decimal("0.80"), 10)
        budget.settle(first, Decimal("0.70"), 8)
        with pytest.raises(BudgetExceeded, match=r"needs up to \$0\.400000.*\$0\.700000"):
            await budget.reserve(Decimal("0.40"), 10)

    asyncio.run(scenario())


def test_a_waiting_reservation_proceeds_when_in_flight_calls_settle_cheaply() -> None:
    budget = Budget(Decimal("1.00"))

    async def scenario() -> Decimal:
        first = await budget.reserve(Decimal("0.90"), 0)
        waiter = asyncio.create_task(budget.reserve(Decimal("0.50"), 0))
        await asyncio.sleep(0)
        assert not waiter.done()  # it fits only once the first settles
        budget.settle(first, Decimal("0.10"), 0)
        second = await waiter
        return second.usd

    assert asyncio.run(scenario()) == Decimal("0.50")


def test_settling_twice_never_double_charges() -> None:
    budget = Budget(Decimal("1.00"))

    async def scenario() -> None:
        reservation = await budget.reserve(Decimal("0.30"), 0)
        budget.settle(reservation, Decimal("0.20"), 5)
        budget.settle(reservation, Decimal("0.20"), 5)

    asyncio.run(scenario())
    snap = budget.snapshot()
    assert snap.spent_usd == Decimal("0.20") and snap.spent_tokens == 5
    assert snap.reserved_usd == 0


def test_hold_keeps_room_that_workers_cannot_take() -> None:
    budget = Budget(Decimal("1.00"))
    assert budget.hold(Decimal("0.60"), 0)
    assert budget.try_reserve(Decimal("0.50"), 0) is None
    assert budget.try_reserve(Decimal("0.40"), 0) is not None
    budget.release_hold()
    assert budget.try_reserve(Decimal("0.60"), 0) is not None


def test_holds_of_several_runs_add_up_and_each_replaces_only_its_own() -> None:
    # A comparison's variants share one budget; each holds room for its own reducer.
    budget = Budget(Decimal("1.00"))
    assert budget.hold(Decimal("0.30"), 0, "run-a")
    assert budget.hold(Decimal("0.30"), 0, "run-b")
    assert budget.snapshot().held_usd == Decimal("0.60")
    assert not budget.hold(Decimal("0.80"), 0, "run-b")  # 0.30 + 0.80 > 1.00
    assert budget.hold(Decimal("0.50"), 0, "run-b")  # replaces b's 0.30
    assert budget.try_reserve(Decimal("0.25"), 0) is None
    budget.release_hold("run-a")
    assert budget.snapshot().held_usd == Decimal("0.50")
    assert budget.try_reserve(Decimal("0.25"), 0) is not None


def test_token_cap_is_enforced_alongside_usd() -> None:
    budget = Budget(None, cap_tokens=100)
    assert budget.try_reserve(Decimal(0), 80) is not None
    assert budget.try_reserve(Decimal(0), 30) is None


@settings(max_examples=60, deadline=None)
@given(
    cap=st.decimals(min_value=Decimal("0.001"), max_value=Decimal("5"), places=4),
    calls=st.lists(
        st.tuples(
            st.decimals(min_value=Decimal("0.0001"), max_value=Decimal("2"), places=4),
            st.floats(min_value=0.0, max_value=1.0),
        ),
        min_size=1,
        max_size=60,
    ),
    concurrency=st.integers(min_value=1, max_value=60),
    seed=st.integers(min_value=0, max_value=10_000),
)
def test_spend_never_exceeds_cap_whatever_the_usage_and_concurrency(
    cap: Decimal, calls: list[tuple[Decimal, float]], concurrency: int, seed: int
) -> None:
    """Each call reserves its worst case, then really costs a random fraction of it."""
    budget = Budget(cap)
    rng = random.Random(seed)
    refused: list[int] = []
    gate = asyncio.Semaphore(concurrency)

    async def one(index: int, worst: Decimal, fraction: float) -> None:
        async with gate:
            try:
                reservation = await budget.reserve(worst, 0)
            except BudgetExceeded:
                refused.append(index)
                return
            await asyncio.sleep(rng.random() / 1000)
            assert budget.snapshot().spent_usd <= cap
            budget.settle(reservation, (worst * Decimal(fraction)).quantize(Decimal("0.0001")), 0)

    async def scenario() -> None:
        await asyncio.gather(*(one(i, w, f) for i, (w, f) in enumerate(calls)))

    asyncio.run(scenario())
    snap = budget.snapshot()
    assert snap.spent_usd <= cap
    assert snap.reserved_usd == 0
    # A refused call really could not fit: its worst case exceeded what was left.
    for index in refused:
        assert calls[index][0] > cap - snap.spent_usd or calls[index][0] > cap


def test_a_charged_call_counts_as_spent_even_past_the_cap_and_is_reported() -> None:
    budget = Budget(Decimal("1.00"), 100)
    budget.charge(Decimal("0.30"), 20)  # a carried call: paid already, nothing reserved
    snap = budget.snapshot()
    assert (snap.spent_usd, snap.reserved_usd, snap.spent_tokens) == (Decimal("0.30"), 0, 20)
    assert budget.overspent("the planner's calls") is None

    async def scenario() -> None:
        with pytest.raises(BudgetExceeded, match=r"needs up to \$0\.800000.*\$0\.300000"):
            await budget.reserve(Decimal("0.80"), 10)

    asyncio.run(scenario())
    budget.charge(None, 90)  # an unknown cost adds nothing; its tokens count
    assert budget.snapshot().spent_usd == Decimal("0.30")
    refusal = budget.overspent("the planner's calls")
    assert refusal == ("budget: the planner's calls spent 110 tokens, over budget_tokens "
                       "100; raise budget_tokens")
    budget.charge(Decimal("0.75"), 0)
    assert budget.overspent("x") == ("budget: x spent $1.050000, over the budget of $1.00; "
                                     "raise the budget")
