"""The forecast learns from the history: after 3 runs of a model in a history, the
expected figure of the next plan is within 25 % of what running it spends, on the
loopback FakeServer with the real openai client; before any run there is no expected
figure and the basis says so."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest

import swarmkit
from swarmkit.testing import FakeReply, FakeRequest, FakeServer, default_reply
from tests.support.fakekey import MODEL, QUICK_RETRIES, run_options

pytestmark = pytest.mark.usefixtures("fake_key")

options = partial(run_options, **QUICK_RETRIES)


def _varied(request: FakeRequest) -> FakeReply:
    """Workers whose replies differ in length from one sub-task to the next."""
    if request.role != "worker":
        return default_reply(request, plan_tasks=5)
    words = 20 + 7 * (len(request.last_user_message) % 11)
    return FakeReply(content=" ".join(["word"] * words))


def test_after_three_runs_the_expected_figure_is_within_25_percent(tmp_path: Path) -> None:
    history = str(tmp_path / "h.db")
    with FakeServer(handler=_varied) as server:
        first = swarmkit.plan_sync("Survey the rivers of Asia", **options(
            server, history_path=history))
        assert first.forecast.expected_usd is None
        assert first.forecast.basis == (f"no earlier run of {MODEL} as the workers and the "
                                        "reducer in this history: the bound only")
        first.run_sync()
        for task in ("Survey the lakes of Africa", "Survey the deserts of America"):
            swarmkit.run_sync(task, **options(server, history_path=history))
        plan = swarmkit.plan_sync("Survey the mountains of Europe", **options(
            server, history_path=history))
        forecast = plan.forecast
        run = plan.run_sync()
    assert forecast.basis == f"from 3 earlier runs of {MODEL} in this history"
    spent = run.cost_usd  # the planner's call included: the run carries it
    assert spent == sum(c.cost_usd for c in run.calls) and run.calls[0].role == "planner"
    assert forecast.expected_usd is not None and spent > 0
    assert abs(forecast.expected_usd - spent) / spent < 0.25, (forecast, spent)
    assert forecast.bound_usd is not None and forecast.bound_usd > 2 * spent
    # One row per role, expected and bound each.
    assert [r.role for r in forecast.roles] == ["planner", "worker", "reducer"]
    assert all(r.expected_usd is not None and r.bound_usd is not None
               for r in forecast.roles)
