"""Swarms of swarms (depth > 1) on the loopback FakeServer with a scripted split: the
tree's shape and steps, its cost, the caps, one budget, one set of slots (in flight
measured at the server), servers without tool calling, and a flat run's requests
unchanged. Replay, interrupt and resume of a tree: ``test_tree_lifecycle``."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest

import swarmkit
from swarmkit.api.result import Run
from swarmkit.config.swarmconfig import SwarmConfig
from swarmkit.engine.estimate import estimate, tree_levels
from swarmkit.engine.prices import PriceTable
from swarmkit.engine.subtree import shares
from swarmkit.record.usage import Usage
from swarmkit.testing import (
    FakeReply,
    FakeRequest,
    FakeServer,
    Fault,
    FaultRule,
    run_problems,
    split_everywhere,
    split_reply,
    split_script,
)
from swarmkit.tools import SPLIT_TOOL, split_spec
from tests.support.fakekey import QUICK_RETRIES, run_options

pytestmark = pytest.mark.usefixtures("fake_key")

VECTOR_DBS = {"worker-2": ["Postgres", "Qdrant", "Milvus"],
              "worker-2.1": ["pgvector", "pgvecto.rs"]}


def tree_run(server: FakeServer, **extra: Any) -> Run:
    options = run_options(server, **{"history": False, "workers": 3, **QUICK_RETRIES,
                                     **extra})
    return swarmkit.run_sync("Survey the vector databases", **options)


def shape(run: Run) -> list[tuple[str, int, str | None, str]]:
    return [(w.id, w.depth, w.parent, w.status) for top in run.workers for w in top.walk()]


def test_a_scripted_split_makes_the_tree_its_steps_and_its_records() -> None:
    with FakeServer(split_script(VECTOR_DBS), plan_tasks=3) as server:
        run = tree_run(server, depth=3)
        asked = server.counts_by_step()
    assert run.status == "completed" and run_problems(run) == []
    assert shape(run) == [
        ("1", 1, None, "completed"), ("2", 1, None, "completed"),
        ("2.1", 2, "2", "completed"), ("2.1.1", 3, "2.1", "completed"),
        ("2.1.2", 3, "2.1", "completed"), ("2.2", 2, "2", "completed"),
        ("2.3", 2, "2", "completed"), ("3", 1, None, "completed")]
    two = run.workers[1]
    assert [c.task for c in two.children] == VECTOR_DBS["worker-2"]
    assert run.workers[0].children == () and two.children[1].children == ()
    # The splitting worker: its split turn, its child swarm's reducer, its own answer.
    assert asked["worker-2"] == 2 and asked["reducer-of-2"] == 1
    assert asked["worker-2.1"] == 2 and asked["reducer-of-2.1"] == 1
    assert asked["worker-2.1.1"] == 1 and asked["reducer"] == 1
    assert two.calls == 3 and sorted(c.step for c in run.calls if c.role == "reducer") == [
        "reducer", "reducer-of-2", "reducer-of-2.1"]
    # The split is the parent's tool call; its result is the child reducer's answer.
    [split, inner] = run.tool_calls
    assert (split.tool, split.worker_id, split.error) == (SPLIT_TOOL, "2", None)
    assert split.result == "Final answer merging 3 results"
    assert inner.worker_id == "2.1" and inner.result == "Final answer merging 2 results"
    # A child worker's conversation names its parent's sub-task as its task.
    [leaf] = [r for r in server.requests if r.step == "worker-2.1.2"]
    assert "Overall task: Postgres" in leaf.body["messages"][1]["content"]
    assert "tools" not in leaf.body  # at the run's depth: no split offered
    assert run_json_round_trips(run)


def run_json_round_trips(run: Run) -> bool:
    again = type(run).from_json(run.to_json())
    return again.workers == run.workers and again.tool_calls == run.tool_calls


def test_depth_one_sends_the_very_requests_of_a_flat_swarm() -> None:
    with FakeServer(split_everywhere(3), plan_tasks=3) as server:
        flat = tree_run(server, depth=1)
        bodies = [r.body for r in server.requests]
    with FakeServer(plan_tasks=3) as plain:
        tree_run(plain)
        assert bodies == [r.body for r in plain.requests]
    assert all("tools" not in body for body in bodies)
    assert "depth" not in flat.config and all(w.children == () for w in flat.workers)
    assert "children" not in flat.to_json()


def test_the_tree_costs_the_sum_of_its_calls() -> None:
    prices = [("fake-model", "3", "15")]
    with FakeServer(split_everywhere(2), plan_tasks=2) as server:
        run = tree_run(server, depth=3, workers=2, prices=prices)
    walked = [w for top in run.workers for w in top.walk()]
    assert len(walked) == 2 + 4 + 8
    assert run.cost_usd is not None and run.cost_usd > 0
    assert run.cost_usd == sum((c.cost_usd for c in run.calls), Decimal(0))
    # Every call is in exactly one place: a worker's own figures, or the run's steps.
    own = Usage.total(w.usage for w in walked)
    steps = Usage.total(c.usage for c in run.calls if not c.step.startswith(
        ("worker-", "reducer-of-")))
    assert own + steps == run.usage
    assert sum(w.calls for w in walked) == sum(1 for c in run.calls
                                               if c.step.startswith(("worker-", "reducer-of-")))


def test_a_split_over_max_children_is_cut_and_the_worker_is_told() -> None:
    many = {"worker-1": [f"Region {i}" for i in range(1, 8)]}
    with FakeServer(split_script(many), plan_tasks=1) as server:
        run = tree_run(server, depth=2, workers=1, max_children=3)
        [answer] = [r for r in server.requests if r.step == "worker-1"][1:]
    assert [c.task for c in run.workers[0].children] == ["Region 1", "Region 2", "Region 3"]
    [split] = run.tool_calls
    assert "you asked for 7 sub-tasks; only the first 3 ran (max_children=3)" in split.result
    tool_message = answer.body["messages"][-1]
    assert tool_message["role"] == "tool" and "max_children=3" in tool_message["content"]
    spec = next(t for t in answer.body["tools"] if t["function"]["name"] == SPLIT_TOOL)
    assert spec["function"]["parameters"]["properties"]["subtasks"]["maxItems"] == 3


def test_max_total_workers_caps_the_whole_tree_by_position_not_by_timing() -> None:
    with FakeServer(split_everywhere(4), plan_tasks=3) as server:
        run = tree_run(server, depth=3, max_total_workers=10)
    walked = [w for top in run.workers for w in top.walk()]
    assert len(walked) == 10 and run.status == "completed"
    # 7 places after the plan: shares 3, 2, 2; worker 1 splits into 3, each child with no
    # share left; workers 2 and 3 into 2 each.
    assert [len(top.children) for top in run.workers] == [3, 2, 2]
    cut = [t for t in run.tool_calls if t.result and "(max_total_workers=10)" in t.result]
    assert [t.worker_id for t in cut] == ["1", "2", "3"]
    refused = [t for t in run.tool_calls if t.error is not None]
    assert len(refused) == 7 and all("share of the run's tree is full" in t.error
                                     for t in refused)
    assert shares(7, 3) == [3, 2, 2] and shares(0, 2) == [0, 0]


def test_a_second_split_and_a_bad_split_are_refused_to_the_model() -> None:
    def handler(request: FakeRequest) -> FakeReply | None:
        if request.step == "worker-1" and len(request.messages) == 2:
            return FakeReply(tool_calls=[(SPLIT_TOOL, {"subtasks": ["a", "b"]}),
                                         (SPLIT_TOOL, {"subtasks": ["c", "d"]})])
        if request.step == "worker-2" and len(request.messages) == 2:
            return FakeReply(tool_calls=[(SPLIT_TOOL, {"subtasks": ["only one"]})])
        return None

    with FakeServer(handler, plan_tasks=2) as server:
        run = tree_run(server, depth=2, workers=2)
    one, two = run.workers
    assert [c.task for c in one.children] == ["a", "b"] and two.children == ()
    errors = [t.error for t in run.tool_calls if t.error]
    assert any("has split its sub-task once already" in e for e in errors)
    assert any("needs at least 2 non-empty sub-tasks" in e for e in errors)
    assert run.status == "completed"


def test_a_budget_too_small_for_the_tree_cuts_children_and_keeps_the_run() -> None:
    def long_leaves(request: FakeRequest) -> FakeReply | None:
        if request.step == "worker-1" and len(request.messages) == 2:
            return split_reply([f"Region {i}" for i in range(1, 9)])
        if request.step.startswith("worker-1."):
            return FakeReply(content="A long answer. " * 80)
        return None

    with FakeServer(long_leaves, plan_tasks=1) as server:
        run = tree_run(server, depth=2, workers=1, max_children=8, budget_tokens=4400,
                       max_tokens=2000, concurrency=1)
    [top] = run.workers
    statuses = [c.status_label for c in top.children]
    assert "completed" in statuses and "skipped (budget)" in statuses
    assert len(statuses) == 8  # every child has its row, the cut ones too
    # The merge tells the worker what it got; the run keeps its answer.
    [split] = run.tool_calls
    assert split.result is not None and "the others did not finish" in split.result
    assert run.status == "completed" and run.answer is not None
    assert run.usage.total_tokens <= 4400 and run_problems(run) == []


@pytest.mark.parametrize("concurrency", [1, 2])
def test_depth_three_never_deadlocks_nor_exceeds_the_slots(concurrency: int) -> None:
    with FakeServer(split_everywhere(2), plan_tasks=3, latency=0.01) as server:
        run = tree_run(server, depth=3, concurrency=concurrency, run_timeout=60)
        peak = server.max_in_flight
    walked = [w for top in run.workers for w in top.walk()]
    assert run.status == "completed" and len(walked) == 3 + 6 + 12
    assert all(w.status == "completed" for w in walked)
    assert peak <= concurrency
    if concurrency == 2:
        assert peak == 2  # the children do use the slots their parents lend


@pytest.mark.parametrize("status", [400, 500])
def test_a_server_without_tool_calling_answers_without_a_split(status: int) -> None:
    def no_tools(request: FakeRequest) -> Fault | None:
        if request.tools:  # llama.cpp's 500, Ollama's 400
            return Fault.status(status, body=json.dumps({"error": {
                "message": "tools param requires --jinja flag", "type": "invalid_request"}}))
        return None

    with FakeServer(no_tools, plan_tasks=2) as server:
        run = tree_run(server, depth=2, workers=2)
        refusals = server.count("worker-*")
    assert refusals == 4  # each worker: one refused request (never retried), one answer
    assert run.status == "completed" and run.answer is not None
    for worker in run.workers:
        assert worker.status == "completed" and worker.children == ()
        assert worker.output and worker.output.startswith("Result for:")
    refused = [c for c in run.calls if c.error is not None]
    assert len(refused) == 2 and all(c.status == status for c in refused)


def test_a_childs_step_id_is_stable_across_its_retries() -> None:
    with FakeServer(split_script(VECTOR_DBS), plan_tasks=3, faults=[
        FaultRule(Fault.rate_limit(retry_after=0), step="worker-2.1.2", attempts=1),
        FaultRule(Fault.status(500), step="reducer-of-2.1", attempts=1),
    ]) as server:
        run = tree_run(server, depth=3)
        sent = [(r.step, r.attempt) for r in server.requests
                if r.step in ("worker-2.1.2", "reducer-of-2.1")]
    assert sorted(sent) == [("reducer-of-2.1", 1), ("reducer-of-2.1", 2),
                            ("worker-2.1.2", 1), ("worker-2.1.2", 2)]
    assert sorted(r.step for r in run.retries) == ["reducer-of-2.1", "worker-2.1.2"]
    assert run.status == "completed" and run_problems(run) == []


def test_the_dry_run_bound_covers_a_tree_that_splits_everywhere() -> None:
    with FakeServer(split_everywhere(3), plan_tasks=2) as server:
        run = tree_run(server, depth=3, workers=2, max_children=3, max_tokens=200)
    config = SwarmConfig.from_options(**run_options(server, workers=2, depth=3,
                                                    max_children=3, max_tokens=200))
    bound = estimate(config, PriceTable.with_overrides(()), [], run.task,
                     tuple(run.plan), split_spec(3))
    rows = {(r.role, r.calls): r.tokens for r in bound.roles}
    assert tree_levels(config, 2) == [2, 6, 18]
    used = sum(c.usage.total_tokens for c in run.calls if c.role != "planner")
    made = sum(1 for c in run.calls if c.role == "worker")
    [workers] = [r for r in bound.roles if r.role == "worker"]
    assert workers.calls >= made and len(rows) == 4  # planner, workers, merges, reducer
    assert sum(r.tokens or 0 for r in bound.roles if r.role != "planner") >= used
    flat = estimate(SwarmConfig.from_options(**run_options(server, workers=2)),
                    PriceTable.with_overrides(()), [], run.task, tuple(run.plan))
    assert [r.role for r in flat.roles] == ["planner", "worker", "reducer"]


def test_a_child_swarm_merges_what_fits_the_reducers_input_limit() -> None:
    def long_leaves(request: FakeRequest) -> FakeReply | None:
        if request.step == "worker-1" and len(request.messages) == 2:
            return split_reply(["North", "South", "East", "West"])
        if request.step.startswith("worker-1."):
            return FakeReply(content="A long regional answer. " * 60)  # ~1,400 bytes
        return None

    with FakeServer(long_leaves, plan_tasks=1) as server:
        run = tree_run(server, depth=2, workers=1, reducer_max_input_tokens=4000)
        [merge] = [r for r in server.requests if r.step == "reducer-of-1"]
    [split] = run.tool_calls
    assert split.result is not None and "(Merged 2 of the 4 sub-tasks' answers" in split.result
    assert "North" in json.dumps(merge.body) and "West" not in json.dumps(merge.body)
    assert run.status == "completed"


def test_the_tree_shares_the_runs_rate_limit() -> None:
    with FakeServer(split_everywhere(2), plan_tasks=2, rpm_limit=8, window=1.0) as server:
        run = tree_run(server, depth=2, workers=2, concurrency=4, rpm=8, rate_window=1.0)
    assert run.status == "completed" and len(list(run.walk())) == 6
    # Every call of the tree, children and their merges included, paced by one limiter.
    assert server.rejected_429 == 0 and not run.retries


def test_a_users_tool_named_split_task_is_refused_above_depth_one() -> None:
    @swarmkit.tool(name=SPLIT_TOOL)
    def mine(text: str) -> str:
        """Split the text into words."""
        return " ".join(text.split())

    with FakeServer(plan_tasks=2) as server:
        with pytest.raises(swarmkit.ConfigError, match=r"rename yours with @tool\(name=") as err:
            tree_run(server, depth=2, tools=[mine])
        assert "\n" not in str(err.value) and server.requests == []
        flat = tree_run(server, depth=1, tools=[mine])  # at depth 1 the name is free
    assert flat.status == "completed"
