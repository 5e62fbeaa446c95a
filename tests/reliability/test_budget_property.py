"""The budget, end to end through the engine, as a hypothesis property.

FakeServer answers with random usage figures (prompt tokens at most the prompt's
characters, completion tokens at most ``max_tokens``, as a real tokenizer would), under
random concurrency and caps. Whatever happens, spend never passes the cap, every refused
worker is recorded as ``skipped (budget)``, and retried calls are charged once.
"""

from __future__ import annotations

import asyncio
import hashlib
import random
import threading
from collections.abc import Iterator
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from swarmkit.api.entry import create_engine
from swarmkit.api.result import Run
from swarmkit.engine.engine import Engine
from swarmkit.engine.prices import PriceTable
from swarmkit.record.usage import Usage
from swarmkit.testing import (
    FakeReply,
    FakeRequest,
    FakeServer,
    Fault,
    FaultRule,
    default_reply,
    run_problems,
)
from tests.support.fakekey import MODEL, run_options


class RandomUsage:
    """Usage drawn per step from ``seed``: the same step is billed the same on any attempt."""

    def __init__(self) -> None:
        self.seed = 0
        self.plan_tasks = 4
        self.billed: list[Usage] = []
        self._lock = threading.Lock()

    def reset(self, seed: int, plan_tasks: int) -> None:
        with self._lock:
            self.seed, self.plan_tasks, self.billed = seed, plan_tasks, []

    def __call__(self, request: FakeRequest) -> FakeReply:
        digest = hashlib.sha256(f"{self.seed}:{request.step}".encode()).digest()
        rng = random.Random(digest)
        usage = Usage(
            prompt_tokens=rng.randint(1, request.prompt_chars()),
            completion_tokens=rng.randint(1, request.max_tokens or 1),
        )
        with self._lock:
            self.billed.append(usage)
        content = default_reply(request, plan_tasks=self.plan_tasks).content
        return FakeReply(content=content, usage=usage)

    def billed_cost(self) -> Decimal:
        prices = PriceTable()
        return sum((prices.cost(MODEL, u) or Decimal(0) for u in self.billed), Decimal(0))


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[FakeServer, RandomUsage]]:
    handler = RandomUsage()
    with FakeServer(handler) as fake:
        yield fake, handler


def _swarm(server: FakeServer, **options: object) -> tuple[Run, Engine]:
    async def go() -> tuple[Run, Engine]:
        engine = await create_engine(**run_options(
            server, model=MODEL, backoff_base=0.001, backoff_max=0.01, **options))
        try:
            return await engine.execute("spend carefully"), engine
        finally:
            await engine.caller.aclose()

    return asyncio.run(go())


def _check_budget(run: Run, engine: Engine, cap: Decimal, handler: RandomUsage) -> None:
    assert run_problems(run) == []
    assert run.cost_usd is not None and run.cost_usd <= cap
    snapshot = engine.budget.snapshot()
    assert snapshot.spent_usd == run.cost_usd  # the budget charged each call exactly once
    assert snapshot.reserved_usd == 0 and snapshot.held_usd == 0  # nothing left reserved
    assert run.cost_usd == handler.billed_cost()  # ...and exactly what the server billed
    for worker in run.workers:
        assert worker.status_label in ("completed", "skipped (budget)"), worker
        if worker.status == "skipped":
            assert worker.calls == 0 and worker.error and "budget" in worker.error
    if run.status == "failed":  # the cap left no room for a plan, a worker or the reducer
        assert run.error is not None
        assert run.error.startswith("BudgetExceeded: ") or run.error.endswith(
            "nothing to reduce; raise the budget or lower max_tokens"
        )


@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    workers=st.integers(1, 24),
    concurrency=st.integers(1, 24),
    cap_micro=st.integers(200, 1_500) | st.integers(1_500, 30_000),  # $0.0002 .. $0.03
    max_tokens=st.integers(8, 400),
    seed=st.integers(0, 2**32),
    retried=st.booleans(),
)
def test_spend_never_exceeds_the_cap_and_refused_workers_are_skipped(
    server: tuple[FakeServer, RandomUsage],
    workers: int,
    concurrency: int,
    cap_micro: int,
    max_tokens: int,
    seed: int,
    retried: bool,
) -> None:
    fake, handler = server
    handler.reset(seed, workers)
    fake.clear_faults()
    if retried:  # every call's first attempt gets a 429: it must not be charged
        fake.add_fault(FaultRule(Fault.rate_limit(), attempts=1))
    cap = Decimal(cap_micro) / 1_000_000
    run, engine = _swarm(
        fake, workers=workers, concurrency=concurrency, budget=cap, max_tokens=max_tokens
    )
    _check_budget(run, engine, cap, handler)
    skipped = sum(1 for w in run.workers if w.status == "skipped")
    event(f"{run.status}, {'some' if skipped else 'no'} workers skipped")
    if retried:
        assert all(c.attempts == 2 for c in run.calls)


@settings(max_examples=12, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(workers=st.integers(1, 12), concurrency=st.integers(1, 12), seed=st.integers(0, 2**32))
def test_a_429_on_every_call_does_not_change_the_total_cost(
    server: tuple[FakeServer, RandomUsage], workers: int, concurrency: int, seed: int
) -> None:
    fake, handler = server
    cap = Decimal("1.00")  # roomy: the same workers run both times
    costs = []
    for faults in ([], [FaultRule(Fault.rate_limit(), attempts=1)]):
        handler.reset(seed, workers)
        fake.clear_faults()
        for rule in faults:
            fake.add_fault(rule)
        run, engine = _swarm(fake, workers=workers, concurrency=concurrency, budget=cap,
                             max_tokens=64)
        _check_budget(run, engine, cap, handler)
        assert run.status == "completed"
        costs.append((run.cost_usd, run.usage))
    assert costs[0] == costs[1]
