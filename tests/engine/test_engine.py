"""The engine end to end: real openai client → FakeServer on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
from decimal import Decimal
from functools import partial

import pytest

import swarmkit
from swarmkit.errors import ConfigError
from swarmkit.record.usage import Usage
from swarmkit.testing import (
    FakeReply,
    FakeRequest,
    FakeServer,
    Fault,
    FaultRule,
    default_reply,
)
from tests.support.fakekey import QUICK_RETRIES, run_options
from tests.support.planners import json_schema_refused

pytestmark = pytest.mark.usefixtures("fake_key")

options = partial(run_options, **QUICK_RETRIES)



def test_four_worker_swarm_plans_fans_out_and_reduces() -> None:
    with FakeServer(plan_tasks=4) as server:
        run = swarmkit.run_sync("Compare three databases", **options(server, workers=8))
    assert run.status == "completed"
    assert len(run.plan) == 4
    assert [w.status for w in run.workers] == ["completed"] * 4
    assert run.answer
    counts = server.counts_by_step()
    assert counts["planner"] == 1 and counts["reducer"] == 1
    assert sum(n for step, n in counts.items() if step.startswith("worker-")) == 4
    # Every request carries the run id and its step; the reducer sees every worker, labelled.
    assert {r.run_id for r in server.requests} == {run.run_id}
    reducer = next(r for r in server.requests if r.step == "reducer")
    prompt = reducer.body["messages"][-1]["content"]
    for index in range(1, 5):
        assert f"Worker {index} (sub-task: " in prompt
    planner = next(r for r in server.requests if r.step == "planner")
    assert planner.body["response_format"]["json_schema"]["name"] == "swarm_plan"


def test_hundred_workers_sum_exactly_to_run_totals() -> None:
    with FakeServer(plan_tasks=100, latency=0.01) as server:
        run = swarmkit.run_sync("big task", **options(server, workers=100, concurrency=20))
        assert server.max_in_flight <= 20
    assert run.status == "completed"
    assert len(run.workers) == 100
    worker_calls = [c for c in run.calls if c.role == "worker"]
    assert sum(w.usage.prompt_tokens or 0 for w in run.workers) == sum(
        c.usage.prompt_tokens or 0 for c in worker_calls
    )
    assert sum((w.usage for w in run.workers), Usage()).cost == sum(
        (c.usage for c in worker_calls), Usage()
    ).cost
    assert run.usage.total_tokens == sum(c.usage.total_tokens or 0 for c in run.calls)
    assert run.cost_usd == sum((c.cost_usd or Decimal(0) for c in run.calls), Decimal(0))
    assert run.cost_usd is not None and run.cost_usd > 0


def test_budget_is_never_exceeded_with_500_concurrent_workers() -> None:
    cap = Decimal("0.02")
    with FakeServer(plan_tasks=500, latency=0.005) as server:
        run = swarmkit.run_sync(
            "many small things",
            **options(server, workers=500, concurrency=500, budget=cap, max_tokens=64),
        )
    assert run.cost_usd is not None and run.cost_usd <= cap
    statuses = {w.status_label for w in run.workers}
    assert "skipped (budget)" in statuses
    assert len(run.workers) == 500  # every refused worker is recorded, none lost
    assert run.answer is not None  # the reducer's reserve kept room for an answer


def test_every_call_rate_limited_once_still_completes_with_attempts_recorded() -> None:
    faults = [FaultRule(Fault.rate_limit(retry_after=0.01), attempts=1)]
    with FakeServer(plan_tasks=5, faults=faults) as server:
        run = swarmkit.run_sync("task", **options(server, workers=5))
    assert run.status == "completed"
    assert all(c.attempts == 2 for c in run.calls)
    assert all(w.attempts == 2 for w in run.workers)
    assert len(run.retries) == len(run.calls)
    assert all(r.status == 429 for r in run.retries)


def test_three_of_twenty_failing_workers_are_kept_and_the_rest_reduced() -> None:
    failing = {"worker-3", "worker-9", "worker-17"}
    faults = [FaultRule(Fault.status(500), step=step, attempts=None) for step in failing]
    with FakeServer(plan_tasks=20, faults=faults) as server:
        run = swarmkit.run_sync("task", **options(server, workers=20, max_attempts=2))
    assert run.status == "partial"
    failed = [w for w in run.workers if w.status == "failed"]
    assert {f"worker-{w.index}" for w in failed} == failing
    assert all(w.reason == "provider" and w.error and "500" in w.error for w in failed)
    reducer = next(r for r in server.requests if r.step == "reducer")
    prompt = reducer.body["messages"][-1]["content"]
    assert prompt.count("Worker ") == 17
    assert "Worker 3 (" not in prompt


def test_tiered_routing_sends_each_role_its_own_model() -> None:
    with FakeServer(plan_tasks=2) as server:
        run = swarmkit.run_sync(
            "task",
            **options(
                server,
                planner_model="moonshot/kimi-k2.5",
                worker_model="deepseek/deepseek-v3.2",
                reducer_model="claude-sonnet-4.5",
                reducer_max_tokens=300,
            ),
        )
    models = {r.step: r.body["model"] for r in server.requests}
    assert models["planner"] == "moonshot/kimi-k2.5"
    assert models["worker-1"] == "deepseek/deepseek-v3.2"
    assert models["reducer"] == "claude-sonnet-4.5"
    reducer = next(r for r in server.requests if r.step == "reducer")
    assert reducer.body["max_tokens"] == 300
    assert all(c.cost_usd is not None for c in run.calls)  # vendor prefixes were priced


def test_unknown_model_price_shows_unknown_cost_and_refuses_a_budget() -> None:
    with FakeServer(plan_tasks=2) as server:
        run = swarmkit.run_sync("task", **options(server, model="my-finetune"))
        assert run.cost_usd is None
        assert "unknown" in run.tables().text()
        with pytest.raises(ConfigError, match="my-finetune"):
            swarmkit.run_sync("task", **options(server, model="my-finetune", budget=1))


def test_planner_falls_back_when_json_schema_is_rejected() -> None:
    handler = json_schema_refused('```json\n{"tasks": ["a", "b"]}\n```')
    with FakeServer(handler) as server:
        run = swarmkit.run_sync("task", **options(server))
    assert run.plan == ["a", "b"]
    formats = [r.body.get("response_format", {}).get("type") for r in server.requests
               if r.step == "planner"]
    assert formats == ["json_schema", "json_object"]


def test_planner_junk_is_repaired_once_per_rung_then_a_plan_error_keeps_the_raw_text() -> None:
    replies = iter(["Sure! Here are some ideas: do things.", '{"tasks": ["x"]}'])

    def handler(request: FakeRequest) -> FakeReply:
        if request.step == "planner":
            return FakeReply(content=next(replies, "still prose"))
        return FakeReply(content="ok")

    with FakeServer(handler) as server:
        run = swarmkit.run_sync("task", **options(server))
        assert run.plan == ["x"]
        assert server.count("planner") == 2
        replies = iter(["prose one", "prose two"])
        failed = swarmkit.run_sync("task", **options(server))
    assert failed.status == "failed"
    assert failed.error is not None and failed.error.startswith("PlanError")
    # json_schema, json_object with the schema, plain text: an answer and a repair each.
    assert server.count("planner") == 2 + 6
    assert failed.plan_raw == "still prose"


def test_plan_is_cut_to_max_workers() -> None:
    with FakeServer(plan_tasks=10_000) as server:
        run = swarmkit.run_sync("task", **options(server, workers=3))
    assert len(run.plan) == 3 and len(run.workers) == 3


def test_run_json_round_trip_is_exact() -> None:
    with FakeServer(plan_tasks=3) as server:
        run = swarmkit.run_sync("task", **options(server))
    again = swarmkit.Run.from_json(run.to_json())
    assert again.to_json() == run.to_json()
    assert again.cost_usd == run.cost_usd and again.usage == run.usage
    assert json.loads(run.to_json())["workers"][0]["status"] == "completed"


def test_run_sync_works_inside_a_running_event_loop() -> None:
    with FakeServer(plan_tasks=2) as server:

        async def inside() -> swarmkit.Run:
            return swarmkit.run_sync("task", **options(server))

        run = asyncio.run(inside())
    assert run.status == "completed"


def test_run_timeout_cancels_and_keeps_finished_workers() -> None:
    def handler(request: FakeRequest) -> FakeReply:
        if request.step == "worker-2":
            return FakeReply(content="slow", latency=5.0)
        return default_reply(request, plan_tasks=3)

    with FakeServer(handler, plan_tasks=3) as server:
        run = swarmkit.run_sync("task", **options(server, run_timeout=1.0))
    assert run.status == "cancelled"
    assert run.error == "run timed out"
    by_status = {w.index: w.status_label for w in run.workers}
    assert by_status[2] == "cancelled (timeout)"
    assert by_status[1] == "completed" and by_status[3] == "completed"


def test_a_bigger_budget_never_completes_fewer_workers() -> None:
    """The reducer's hold is capped at a share of the cap, so more money, more workers."""
    completed = []
    with FakeServer(plan_tasks=8) as server:
        for cap in ("0.01", "0.0125", "0.015", "0.02", "0.03", "0.05"):
            run = swarmkit.run_sync(
                "task", **options(server, model="gpt-4.1", workers=8, budget=cap, cache=False)
            )
            assert run.cost_usd is not None and run.cost_usd <= Decimal(cap)
            completed.append(sum(w.status == "completed" for w in run.workers))
    assert completed == sorted(completed), completed
    assert completed[-1] == 8


def test_cancel_before_execute_starts_stops_at_once() -> None:
    from swarmkit.api.entry import create_engine

    with FakeServer(plan_tasks=3) as server:

        async def scenario() -> swarmkit.Run:
            engine = await create_engine(**options(server))
            engine.cancel("interrupt")
            try:
                return await engine.execute("task")
            finally:
                await engine.caller.aclose()

        run = asyncio.run(scenario())
        assert server.count() == 0
    assert run.status == "cancelled" and run.error == "run interrupted"


def test_reasoning_models_get_max_completion_tokens_others_max_tokens() -> None:
    """o-series and gpt-5 refuse max_tokens; other servers know only max_tokens."""
    with FakeServer(plan_tasks=2) as server:
        swarmkit.run_sync("task", **options(server, worker_model="openai/gpt-5-mini",
                                            worker_max_tokens=300))
    bodies = {r.step: r.body for r in server.requests}
    assert bodies["worker-1"]["max_completion_tokens"] == 300
    assert "max_tokens" not in bodies["worker-1"]
    assert "max_completion_tokens" not in bodies["planner"]
    assert bodies["planner"]["max_tokens"] == 1024
