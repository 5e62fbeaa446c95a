"""``confirm_over=`` from Python: a run whose forecast is over it raises
ConfirmationNeeded (a ConfigError) carrying the Plan, after the planner's call only;
under it, the run goes ahead with that one planner call."""

from __future__ import annotations

from decimal import Decimal
from functools import partial

import pytest

import swarmkit
from swarmkit.errors import ConfigError, ConfirmationNeeded
from swarmkit.testing import FakeServer
from tests.support.fakekey import QUICK_RETRIES, run_options

pytestmark = pytest.mark.usefixtures("fake_key")

options = partial(run_options, **QUICK_RETRIES, history=False)


def test_over_the_threshold_raises_with_the_plan_and_only_the_planner_call() -> None:
    with FakeServer(plan_tasks=3) as server:
        with pytest.raises(ConfirmationNeeded) as caught:
            swarmkit.run_sync("Name rivers", confirm_over="0.0001", **options(server))
        assert server.count() == server.count("planner") == 1
        err = caught.value
        assert isinstance(err, ConfigError) and "\n" not in str(err)
        assert "at most $" in str(err) and "over confirm_over $0.000100" in str(err)
        assert "the bound only" in str(err)  # no history: the message says which figure
        plan = err.plan
        assert isinstance(plan, swarmkit.Plan) and len(plan.tasks) == 3
        del plan.tasks[0]
        run = plan.run_sync()
    assert server.count("planner") == 1 and server.count("worker-*") == 2
    assert run.review is not None and run.review.dropped == 1


def test_under_the_threshold_the_run_goes_ahead_unreviewed() -> None:
    with FakeServer(plan_tasks=2) as server:
        run = swarmkit.run_sync("Name rivers", confirm_over=Decimal("5"), **options(server))
    assert server.count("planner") == 1 and server.count("worker-*") == 2
    assert run.status == "completed" and run.review is None


def test_a_config_threshold_and_given_tasks() -> None:
    config = swarmkit.SwarmConfig.from_options(confirm_over="0")
    with FakeServer(plan_tasks=2) as server:
        with pytest.raises(ConfirmationNeeded):
            swarmkit.run_sync("Name rivers", config=config, **options(server))
        # Given sub-tasks are no planner's plan: nothing to stop for.
        run = swarmkit.run_sync("Name rivers", config=config, tasks=["a"], **options(server))
    assert run.status == "completed" and server.count("planner") == 1


def test_a_bad_threshold_is_one_line() -> None:
    with pytest.raises(ConfigError, match="confirm_over must be a USD amount"):
        swarmkit.run_sync("x", confirm_over="lots")


def test_a_comparison_refuses_confirm_over_in_one_line() -> None:
    with pytest.raises(ConfigError, match="compare: confirm_over holds one run's plan"):
        swarmkit.compare_sync("x", variants=[{"model": "a"}, {"model": "b"}],
                              confirm_over="0.01")


def test_a_refused_repeat_is_refused_before_the_planner_and_plan_takes_a_plan() -> None:
    with FakeServer(plan_tasks=2) as server:
        with pytest.raises(ConfigError, match="repeat=2 repeats the variants"):
            swarmkit.run_sync("x", repeat=2, confirm_over="0", **options(server))
        with pytest.raises(ConfigError, match=r"plan= takes a swarmkit\.Plan .* not a str"):
            swarmkit.run_sync(plan="abc")  # type: ignore[arg-type]
    assert server.count() == 0
