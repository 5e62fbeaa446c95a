"""``swarmkit.plan``: the planner's plan edited in place, then run exactly, against the
loopback FakeServer with the real openai client; the review recorded in the Run, its
JSON, the history and the cassette."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest

import swarmkit
from swarmkit.errors import ConfigError
from swarmkit.record.review import review_of
from swarmkit.store import Cassette
from swarmkit.store.history import History
from tests.support.fakekey import QUICK_RETRIES, run_options

pytestmark = pytest.mark.usefixtures("fake_key")

options = partial(run_options, **QUICK_RETRIES)


def _worker_tasks(server: swarmkit.testing.FakeServer) -> list[str]:
    """The sub-task each worker request carried (the last user message)."""
    return sorted(r.body["messages"][-1]["content"] for r in server.requests
                  if r.step.startswith("worker-"))


def test_an_edited_plan_runs_exactly_its_approved_tasks_with_no_second_planner_call(
        tmp_path: Path) -> None:
    history = str(tmp_path / "h.db")
    with swarmkit.testing.FakeServer(plan_tasks=4) as server:
        plan = swarmkit.plan_sync("Name rivers", **options(server, history_path=history))
        assert server.count("planner") == 1 and server.count("worker-*") == 0
        proposed = list(plan.proposed)
        plan.tasks[1] = "The Danube, in one line"
        del plan.tasks[2]
        plan.tasks.append("The Mekong")
        assert plan.proposed == tuple(proposed)  # edits never touch the proposal
        run = plan.run_sync()
    assert server.count("planner") == 1  # still the one call: no second planner call
    assert server.count("worker-*") == 4 and server.count("reducer") == 1
    sent = " ".join(_worker_tasks(server))
    assert "The Danube, in one line" in sent and "The Mekong" in sent
    assert proposed[2] not in sent and proposed[1] not in sent
    assert run.plan == plan.tasks and run.status == "completed"
    review = run.review
    assert review is not None
    assert (review.edited, review.dropped, review.added) == (1, 1, 1)
    assert review.proposed == tuple(proposed) and review.approved == tuple(plan.tasks)
    assert review.approved_by == "python"
    assert review.line().startswith("plan reviewed: 4 proposed · 1 edited · 1 dropped · "
                                    "1 added")
    # JSON and the history keep it; the plan's planned row became the run.
    assert swarmkit.Run.from_json(run.to_json()).review == review
    assert run.run_id == plan.run_id
    with History(history) as kept:
        assert kept.load_run(run.run_id).review == review
        assert [(r.run_id, r.status) for r in kept.recent(10)] == [(run.run_id, "completed")]


def test_run_sync_takes_the_plan_and_a_run_without_review_has_no_review_key() -> None:
    with swarmkit.testing.FakeServer(plan_tasks=2) as server:
        plan = swarmkit.plan_sync("Name lakes", **options(server, history=False))
        plan.tasks[:] = ["Lake Titicaca"]
        run = swarmkit.run_sync(plan=plan)
        plain = swarmkit.run_sync("Name lakes", **options(server, history=False))
    assert server.count("planner") == 2  # the plan's, and the plain run's own
    assert run.plan == ["Lake Titicaca"] and run.review is not None
    assert (run.review.edited, run.review.dropped, run.review.added) == (1, 1, 0)
    assert plain.review is None and "review" not in plain.to_dict()


def test_the_cassette_holds_the_approved_plan_and_replays_with_no_question(
        tmp_path: Path) -> None:
    cassette = tmp_path / "run.swarm.json"
    with swarmkit.testing.FakeServer(plan_tasks=3) as server:
        plan = swarmkit.plan_sync("Name seas", **options(server, history=False))
        del plan.tasks[0]
        run = plan.run_sync(record=str(cassette))
        server.clear()
    recorded = Cassette.load(cassette)
    assert recorded.review == run.review and recorded.run["config"]["tasks"] == plan.tasks
    replayed = swarmkit.run_sync("Name seas", replay=str(cassette), history=False)
    assert replayed.review == run.review and replayed.plan == run.plan
    assert str(replayed) == str(run) and replayed._repr_html_() == run._repr_html_()


def test_a_plan_refuses_options_that_would_make_another_plan_and_blank_tasks() -> None:
    with swarmkit.testing.FakeServer(plan_tasks=2) as server:
        plan = swarmkit.plan_sync("Name hills", **options(server, history=False))
        with pytest.raises(ConfigError, match="tasks= would make another plan"):
            plan.run_sync(tasks=["x"])
        plan.tasks.append("   ")
        with pytest.raises(ConfigError, match="empty"):
            plan.run_sync()
        with pytest.raises(ConfigError, match="approved_by"):
            plan.run_sync(approved_by="someone")  # type: ignore[arg-type]
        with pytest.raises(ConfigError, match="run_id= is the plan's own"):
            plan.run_sync(run_id="mine")
    assert server.count("worker-*") == 0
    assert plan.ran_as is None  # refused before it ran: still to run


def test_replan_adds_the_note_to_the_planner_prompt() -> None:
    with swarmkit.testing.FakeServer(plan_tasks=2) as server:
        plan = swarmkit.plan_sync("Name caves", **options(server, history=False))
        again = plan.replan("only caves in Europe")
    planners = [r for r in server.requests if r.step == "planner"]
    assert len(planners) == 2
    system = planners[1].body["messages"][0]["content"]
    assert "only caves in Europe" in system and "only caves" not in (
        planners[0].body["messages"][0]["content"])
    assert again is not plan and again.note == "only caves in Europe"


def test_review_counts_align_edits_drops_and_additions() -> None:
    review = review_of(["a", "b", "c", "d"], ["a", "B", "d", "e"], "review")
    assert (review.edited, review.dropped, review.added) == (1, 1, 1)
    same = review_of(["a", "b"], ["a", "b"], "yes")
    assert not same.changed and "approved as proposed" in same.line()


def test_the_review_is_one_line_in_the_tables_jswarm_show_and_diff(tmp_path: Path) -> None:
    import subprocess
    import sys

    from swarmkit.testing import swarm_shell
    from tests.cli.test_cli import ROOT, child_env

    history = str(tmp_path / "h.db")
    with swarmkit.testing.FakeServer(plan_tasks=4) as server:
        plan = swarmkit.plan_sync("Name rivers", **options(server, history_path=history))
        plan.tasks[1] = "The Danube"
        del plan.tasks[2]
        plan.tasks.append("The Mekong")
        run = plan.run_sync(approved_by="review")
        plain = swarmkit.run_sync("Name rivers", **options(server, history_path=history))
    line = "plan reviewed: 4 proposed · 1 edited · 1 dropped · 1 added"
    assert line in str(run) and line in run._repr_html_()
    assert "approved in the review" in str(run)
    assert "plan reviewed" not in str(plain) + plain._repr_html_()
    shown = subprocess.run([sys.executable, "-m", "swarmkit", "show", run.run_id,
                            "--history-path", history], capture_output=True, text=True,
                           env=child_env(), cwd=ROOT, timeout=120, check=True)
    assert line in shown.stdout
    shell = swarm_shell()
    shell.run_line_magic("swarm", f"config history_path={history}")
    try:
        diff = shell.run_line_magic("swarm", f"diff {plain.run_id} {run.run_id}")
    finally:
        shell.run_line_magic("swarm", "config history_path=none")
    text = diff.text()
    assert f"plan edits in B ({line}" in text
    for what in ("kept", "edited", "dropped", "added"):
        assert what in text
    assert "The Mekong" in text and "plan edits in A" not in text


def test_a_plan_shows_its_sub_tasks_and_forecast_as_text_and_html() -> None:
    with swarmkit.testing.FakeServer(plan_tasks=2) as server:
        plan = swarmkit.plan_sync("Name <b>rivers</b>", **options(server, history=False))
    plan.tasks.append("A <script> sub-task")
    text, page = repr(plan), plan._repr_html_()
    assert f"plan {plan.run_id}: 3 sub-tasks (edited from 2)" in text
    assert "3. A <script> sub-task" in text and "at most" in text
    assert "no history kept (history off): the bound only" in text
    assert "&lt;script&gt;" in page and "<script>" not in page
    forecast = plan.forecast_for(["one", "  ", "two"])  # blank boxes are left out
    assert forecast.workers == 2 and plan.forecast.workers == 3
