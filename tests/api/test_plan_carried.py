"""A Plan's run carries the planner's calls: one run per plan, whose record, cost, tables,
budget, history row and cassette hold the planner as a run that planned itself would
(FakeServer, the real openai client, real SQLite)."""

from __future__ import annotations

import json
from decimal import Decimal
from functools import partial
from pathlib import Path

import pytest

import swarmkit
from swarmkit.display.byrole import role_spend
from swarmkit.errors import BudgetExceeded, ConfigError
from swarmkit.record.events import BudgetUpdated, CallFinished
from swarmkit.store import Cassette
from swarmkit.store.history import History
from tests.support.events import Events
from tests.support.fakekey import QUICK_RETRIES, run_options
from tests.support.planners import json_schema_refused

pytestmark = pytest.mark.usefixtures("fake_key")

options = partial(run_options, **QUICK_RETRIES)


def test_a_reviewed_run_costs_what_the_unreviewed_run_costs_planner_included(
        tmp_path: Path) -> None:
    with swarmkit.testing.FakeServer(plan_tasks=3) as server:
        plain = swarmkit.run_sync("Name rivers", **options(server, history=False))
        server.clear()
        plan = swarmkit.plan_sync("Name rivers", **options(server, history=False))
        run = plan.run_sync()
        assert server.count("planner") == 1  # across the plan and its run
        assert server.count("worker-*") == 3 and server.count("reducer") == 1
    roles = [c.role for c in run.calls]
    assert roles.count("planner") == 1 and roles[0] == "planner"
    planner = run.calls[0]
    assert planner == plan.planner_calls[0]  # usage, cost, start, latency, source as made
    assert run.cost_usd == sum((c.cost_usd for c in run.calls), Decimal(0))
    assert run.cost_usd == plain.cost_usd and run.cost_usd > 0
    assert run.usage == plain.usage
    # Spend by role has the planner's row, as the unreviewed run's; the totals are equal.
    spend = {row.role: (row.calls, row.cost_usd) for row in role_spend(run.calls)}
    assert spend == {row.role: (row.calls, row.cost_usd) for row in role_spend(plain.calls)}
    assert spend["planner"] == (1, planner.cost_usd)
    assert "planner" in str(run)
    # The timeline: the planner first, the workers after it.
    assert all(c.started >= planner.started + planner.latency for c in run.calls[1:])
    assert run.duration >= planner.started + planner.latency


def test_the_budget_counts_the_planner_and_a_cap_it_is_over_is_refused_before_workers(
        ) -> None:
    events = Events()
    with swarmkit.testing.FakeServer(plan_tasks=3) as server:
        plan = swarmkit.plan_sync("Name lakes", **options(server, history=False))
        planner_cost = plan.planner_calls[0].cost_usd
        assert planner_cost is not None and planner_cost > 0
        run = plan.run_sync(budget="1.00", sinks=[events])
        # The first budget figure the run reports is the planner's spend.
        first = events.of(BudgetUpdated)[0]
        assert first.spent_usd == planner_cost and first.cap_usd == Decimal("1.00")
        finished = [e.call.role for e in events.of(CallFinished)]
        assert finished[0] == "planner" and run.status == "completed"

        again = swarmkit.plan_sync("Name lakes", **options(server, history=False))
        server.clear()
        refused = again.run_sync(budget=str(planner_cost / 2))
        assert server.count("*") == 0  # no worker, no reducer: nothing sent
    assert refused.status == "failed" and refused.error is not None
    assert "\n" not in refused.error
    assert refused.error.startswith("BudgetExceeded: budget: the planner's calls")
    assert "raise the budget" in refused.error
    assert [c.role for c in refused.calls] == ["planner"]
    assert refused.cost_usd == planner_cost and not refused.workers


def test_one_history_row_per_plan_and_its_run_a_replanned_plan_stays_planned(
        tmp_path: Path) -> None:
    history = str(tmp_path / "h.db")
    with swarmkit.testing.FakeServer(plan_tasks=2) as server:
        first = swarmkit.plan_sync("Name hills", **options(server, history_path=history))
        second = first.replan("only the tallest")
        run = second.run_sync()
        assert server.count("planner") == 2  # the plan and its replan; the run made none
    assert run.run_id == second.run_id != first.run_id
    with History(history) as kept:
        rows = {r.run_id: r for r in kept.recent(10)}
        assert set(rows) == {first.run_id, second.run_id}
        assert rows[first.run_id].status == "planned"
        row = rows[second.run_id]
        assert (row.status, row.calls, row.cost_usd) == ("completed", len(run.calls),
                                                         run.cost_usd)
        assert row.started_at == second.started_at  # the run began with its planner
        stored = kept.load_run(run.run_id)
        assert [c.role for c in kept.calls(run.run_id)].count("planner") == 1
    assert stored.cost_usd == run.cost_usd and stored.review == run.review


def test_a_plan_runs_once_a_second_run_is_refused_in_one_line(tmp_path: Path) -> None:
    history = str(tmp_path / "h.db")
    with swarmkit.testing.FakeServer(plan_tasks=2) as server:
        plan = swarmkit.plan_sync("Name caves", **options(server, history_path=history))
        # Refused before it began (a bad option): the plan is still to run.
        with pytest.raises(ConfigError):
            plan.run_sync(concurrency=0)
        assert plan.ran_as is None
        run = plan.run_sync()
        server.clear()
        with pytest.raises(ConfigError) as refused:
            plan.run_sync()
        with pytest.raises(ConfigError):
            swarmkit.run_sync(plan=plan)
        assert server.count("*") == 0
        message = str(refused.value)
        assert "\n" not in message and f"has run already (run {run.run_id})" in message
        assert f'plan_from="{run.run_id}"' in message and "resume=" in message
        # What it names works: the same sub-tasks as a new run, with no planner call.
        rerun = swarmkit.run_sync("Name caves", plan_from=run.run_id,
                                 **options(server, history_path=history))
        assert server.count("planner") == 0 and rerun.run_id != run.run_id
    with History(history) as kept:
        assert sorted(r.run_id for r in kept.recent(10)) == sorted([run.run_id, rerun.run_id])


def test_a_reviewed_run_replays_byte_identical_with_its_planner_row(tmp_path: Path) -> None:
    cassette = tmp_path / "run.swarm.json"
    with swarmkit.testing.FakeServer(plan_tasks=3) as server:
        plan = swarmkit.plan_sync("Name seas", **options(server, history=False))
        plan.tasks[0] = "The Baltic Sea"
        run = plan.run_sync(record=str(cassette))
    recorded = Cassette.load(cassette)
    planner = [c for c in recorded.calls if c.role == "planner"]
    assert len(planner) == 1 and planner[0].cost_usd == run.calls[0].cost_usd
    # No server now: the replay cannot reach the network, and asks nothing.
    replayed = swarmkit.run_sync("Name seas", replay=str(cassette), history=False)
    assert [c.role for c in replayed.calls] == [c.role for c in run.calls]
    assert replayed.cost_usd == run.cost_usd and replayed.review == run.review
    assert str(replayed) == str(run) and replayed._repr_html_() == run._repr_html_()
    assert "planner" in str(replayed)


def test_a_refused_rung_of_the_planner_is_carried_as_it_was_and_replayed(
        tmp_path: Path) -> None:
    cassette = tmp_path / "run.swarm.json"
    handler = json_schema_refused('{"tasks": ["the Alps", "the Andes"]}')
    with swarmkit.testing.FakeServer(handler) as server:
        plan = swarmkit.plan_sync("Name ranges", **options(server, history=False))
        run = plan.run_sync(record=str(cassette))
        assert server.count("planner") == 2  # the refused rung and the answer, once each
    planner = [c for c in run.calls if c.role == "planner"]
    assert planner == list(plan.planner_calls)
    assert [c.source for c in planner] == ["live", "live"] and planner[0].error
    assert run.plan == ["the Alps", "the Andes"] and run.status == "completed"
    assert '"the Alps"' in run.plan_raw  # the planner's raw reply, as a run keeps it
    replayed = swarmkit.run_sync("Name ranges", replay=str(cassette), history=False)
    assert str(replayed) == str(run) and replayed._repr_html_() == run._repr_html_()


def test_a_reviewed_cassette_without_the_planner_call_still_replays(tmp_path: Path) -> None:
    """A reviewed run recorded before runs carried their planner (its cassette holds the
    workers and the reducer only) replays as it was recorded: no planner row, no miss."""
    cassette = tmp_path / "run.swarm.json"
    with swarmkit.testing.FakeServer(plan_tasks=2) as server:
        plan = swarmkit.plan_sync("Name deserts", **options(server, history=False))
        plan.run_sync(record=str(cassette))
    data = json.loads(cassette.read_text())
    data["calls"] = [c for c in data["calls"] if c["role"] != "planner"]
    cassette.write_text(json.dumps(data))
    old = Cassette.load(cassette)
    assert old.review is not None and old.carried_calls() == ()
    replayed = swarmkit.run_sync("Name deserts", replay=str(cassette), history=False)
    assert replayed.status == "completed" and replayed.review == old.review
    assert "planner" not in [c.role for c in replayed.calls]
    assert sorted(c.fingerprint for c in old.calls) == sorted(
        c.fingerprint for c in replayed.calls)


def test_under_a_tight_cap_a_reviewed_run_fans_out_as_the_unreviewed_one_does() -> None:
    """Caps across the range where workers are skipped: the reviewed run skips what the
    unreviewed run skips (the planner's spend counts against the cap), and at some cap
    that is fewer workers than a run of the same sub-tasks with the planner left out."""
    differs = []
    with swarmkit.testing.FakeServer(plan_tasks=4) as server:
        run_with = partial(options, server, history=False, max_tokens=64)
        bound = swarmkit.plan_sync("Name rivers", **run_with()).forecast.bound_usd
        assert bound is not None
        for step in range(12):
            cap = str((bound * Decimal(20 + 3 * step) / 100).quantize(Decimal("0.000001")))
            plain = swarmkit.run_sync("Name rivers", **run_with(budget=cap))
            try:  # the plan under the same cap, as %%swarm --review --budget makes it
                plan = swarmkit.plan_sync("Name rivers", **run_with(budget=cap))
            except BudgetExceeded:  # the planner's worst case is over it: no plan
                assert not plain.workers and plain.error is not None
                assert plain.error.startswith("BudgetExceeded")
                continue
            reviewed = plan.run_sync()
            left_out = swarmkit.run_sync("Name rivers", tasks=list(plan.tasks),
                                         **run_with(budget=cap))
            statuses = [w.status for w in reviewed.workers]
            assert statuses == [w.status for w in plain.workers], cap
            assert reviewed.cost_usd == plain.cost_usd, cap
            if statuses != [w.status for w in left_out.workers]:
                differs.append(cap)
    assert differs  # the planner's spend made the difference at these caps
