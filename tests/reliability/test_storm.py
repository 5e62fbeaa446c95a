"""A mixed fault storm over a 200-worker run: nothing lost, totals equal what was billed.

30% of requests get a 429, 5% an HTML 502 page and 5% a dropped connection (seeded
probability rules). The server's handler tallies the usage it reports on every answer it
actually sends, so the Run's totals are checked against the server, not against itself.
"""

from __future__ import annotations

import random
import threading
from decimal import Decimal
from pathlib import Path

import swarmkit
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
from tests.support.fakekey import Options

WORKERS = 200


def storm(step: str = "*") -> list[FaultRule]:
    return [
        FaultRule(Fault.rate_limit(), step=step, probability=0.30, seed=1),
        FaultRule(Fault.html(502), step=step, probability=0.05, seed=2),
        FaultRule(Fault.drop(), step=step, probability=0.05, seed=3),
    ]


class BillingHandler:
    """Answers with the default script and random usage, and keeps what it billed."""

    def __init__(self, seed: int = 7) -> None:
        self.billed: list[tuple[str, str, Usage]] = []  # (step, model, usage)
        self._rng = random.Random(seed)
        self._lock = threading.Lock()

    def __call__(self, request: FakeRequest) -> FakeReply:
        reply = default_reply(request, plan_tasks=WORKERS)
        with self._lock:
            usage = Usage(
                prompt_tokens=self._rng.randint(1, 5_000),
                completion_tokens=self._rng.randint(1, request.max_tokens or 1024),
                cached_tokens=self._rng.randint(0, 100),
            )
            self.billed.append((request.step, request.model, usage))
        return FakeReply(content=reply.content, usage=usage)


def _billed_totals(handler: BillingHandler) -> tuple[Usage, Decimal]:
    prices = PriceTable()
    total, cost = Usage(), Decimal(0)
    for _, model, usage in handler.billed:
        total = total + usage
        cost += prices.cost(model, usage) or Decimal(0)
    return total, cost


def test_mixed_storm_loses_nothing_and_totals_equal_what_the_server_billed(
    options: Options,
) -> None:
    handler = BillingHandler()
    # A generous call_timeout: a late answer on a busy machine is not the fault tested here
    # (the server would bill an answer the client gave up on).
    with FakeServer(handler, faults=storm()) as server:
        run = swarmkit.run_sync(
            "storm", **options(server, workers=WORKERS, concurrency=50, max_attempts=15,
                               call_timeout=60)
        )
        requests = server.requests
        faulted = len(requests) - len(handler.billed)
    assert run_problems(run) == []
    assert len(run.workers) == WORKERS
    assert run.status == "completed", run.error
    assert [w.status for w in run.workers] == ["completed"] * WORKERS
    # The storm really happened, and every attempt is accounted for.
    assert faulted > WORKERS * 0.25
    assert sum(c.attempts for c in run.calls) == len(requests)
    assert len(run.retries) == faulted
    assert {r.status for r in run.retries} == {429, 502, None}
    # Totals equal the sum of the calls, and the calls equal what the server billed.
    billed_usage, billed_cost = _billed_totals(handler)
    assert len(handler.billed) == len(run.calls) == WORKERS + 2
    run_usage = run.usage
    assert run_usage.prompt_tokens == billed_usage.prompt_tokens
    assert run_usage.completion_tokens == billed_usage.completion_tokens
    assert run_usage.cached_tokens == billed_usage.cached_tokens
    assert run.cost_usd == billed_cost
    worker_cost = sum((w.cost_usd or Decimal(0) for w in run.workers), Decimal(0))
    other_cost = sum((c.cost_usd or Decimal(0) for c in run.calls if c.role != "worker"),
                     Decimal(0))
    assert worker_cost + other_cost == run.cost_usd


def test_storm_with_few_attempts_fails_some_workers_readably_and_reduces_the_rest(
    options: Options,
) -> None:
    handler = BillingHandler(seed=11)
    with FakeServer(handler, faults=storm("worker-*")) as server:
        run = swarmkit.run_sync(
            "storm", **options(server, workers=WORKERS, concurrency=50, max_attempts=2,
                               call_timeout=60)
        )
        reducer = next(r for r in server.requests if r.step == "reducer")
    assert run_problems(run) == []
    assert len(run.workers) == WORKERS
    failed = [w for w in run.workers if w.status == "failed"]
    completed = [w for w in run.workers if w.status == "completed"]
    assert len(failed) + len(completed) == WORKERS
    assert failed and completed  # with two attempts some calls lose both draws
    assert all(w.reason == "provider" and w.error and "gave up after 2" in w.error
               for w in failed)
    assert run.status == "partial"
    assert run.reduced == [w.index for w in completed]
    prompt = reducer.body["messages"][-1]["content"]
    assert prompt.count("\nWorker ") == len(completed)
    billed_usage, billed_cost = _billed_totals(handler)
    assert run.usage.prompt_tokens == billed_usage.prompt_tokens
    assert run.cost_usd == billed_cost


def test_a_run_recorded_through_a_storm_replays_to_the_same_tables(
    options: Options, tmp_path: Path
) -> None:
    cassette = str(tmp_path / "storm.swarm.json")
    faults = [*storm(), FaultRule(Fault.html(502), step="worker-2"),  # one worker fails
              FaultRule(Fault.stream_cut(), step="reducer", attempts=1)]
    with FakeServer(faults=faults, plan_tasks=40) as server:
        run = swarmkit.run_sync("storm", **options(server, workers=40, max_attempts=3,
                                                   record=cassette))
    assert run.status == "partial" and run.retries and run.worker(2).status == "failed"
    again = swarmkit.run_sync("storm", **options(server, workers=40, max_attempts=3,
                                                 replay=cassette))
    assert {c.source for c in again.calls} == {"replay"}  # the failed call too
    assert again.tables().text() == run.tables().text()
    assert again._repr_html_() == run._repr_html_()
    assert again.retries == run.retries and again.answer == run.answer
    assert run_problems(again) == []
