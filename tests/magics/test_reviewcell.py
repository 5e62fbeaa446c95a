"""``%%swarm --review`` and a notebook's ``confirm_over`` in a real IPython shell: the review
widget driven as a frontend drives it (values set, buttons clicked, between cells),
against a FakeServer that records what was sent."""

from __future__ import annotations

import copy
import json
import pickle
import threading
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

from swarmkit.api.planning import Plan
from swarmkit.api.result import Run
from swarmkit.display.reviewwidget import ReviewView
from swarmkit.magics import SwarmMagics
from swarmkit.magics.reviewcell import Review, WatchedTasks
from swarmkit.testing import FakeServer, Fault, FaultRule, wait_until
from tests.support.fakekey import swarm_line
from tests.support.interrupts import sigint_when

line_for = partial(swarm_line, flags="--workers 3")
TASK = "Name three rivers"
PROPOSED = [f"Sub-task {i} of {TASK}" for i in (1, 2, 3)]


@pytest.fixture(autouse=True)
def _no_review_left(shell: InteractiveShell, magics: SwarmMagics) -> Iterator[None]:
    """No review, plan or run of another test in sight; no run of this one left going."""
    magics.pending_review = None
    for name in ("_swarm", "_swarm_plan", "_swarm_handle", "r"):
        shell.user_ns.pop(name, None)
    yield
    for handle in list(magics.background):
        if not handle.done():
            handle.cancel_and_collect("test teardown")
    magics.background = {}


def review_cell(shell: InteractiveShell, magics: SwarmMagics, server: FakeServer,
                extra: str = "--review") -> Review:
    """Run a ``--review`` cell; it returns with the review on screen, nothing run."""
    with capture_output() as captured:
        result = shell.run_cell_magic("swarm", line_for(server, extra), TASK)
    assert result is None and captured.stdout == ""
    (shown,) = captured.outputs  # the widget, once
    assert shown.data["text/plain"].startswith("<swarmkit review")
    review = magics.pending_review
    assert review is not None and shell.user_ns["_swarm_plan"] is review.plan
    assert server.counts_by_step() == {"planner": 1}
    return review


def sent_subtasks(server: FakeServer) -> list[str]:
    """What each worker was asked, in order (the text after its "sub-task (i of n):")."""
    return [request.body["messages"][-1]["content"].split("): ", 1)[1]
            for request in sorted(server.requests, key=lambda r: r.step)
            if request.step.startswith("worker-")]


def click_run(shell: InteractiveShell, view: ReviewView) -> Run:
    with capture_output():
        view.run_button.click()
        run = shell.user_ns["_swarm_handle"].result()
    assert isinstance(run, Run) and shell.user_ns["_swarm"] is run
    return run


# -- edit, untick, add, run -------------------------------------------------------------------


def test_edited_unticked_and_added_subtasks_run_exactly_with_no_second_planner_call(
    shell: InteractiveShell, magics: SwarmMagics, server: FakeServer
) -> None:
    review = review_cell(shell, magics, server)
    view = review.view
    assert [box.value for box in view.boxes] == PROPOSED
    assert view.run_button.description == "Run 3 workers"
    assert "3 sub-tasks proposed" in view.header.value
    assert "expected" in view.forecast.value and "at most" in view.forecast.value

    view.boxes[0].value = "The Nile, its length"
    view.keeps[1].value = False
    assert view.run_button.description == "Run 2 workers" and view.boxes[1].disabled
    view.add_button.click()
    assert view.run_button.description == "Run 2 workers"  # a blank box is not a worker
    view.boxes[-1].value = "The Amazon, its basin"
    assert view.run_button.description == "Run 3 workers"
    assert "forecast for 3 workers" in view.forecast.value
    assert ("3 sub-tasks proposed · 1 edited · 1 dropped · 1 added · 3 to run"
            in view.header.value)  # what the run's review will record
    # The boxes write the Plan's list as they change.
    assert shell.user_ns["_swarm_plan"].tasks == [
        "The Nile, its length", PROPOSED[2], "The Amazon, its basin"]
    assert server.counts_by_step() == {"planner": 1}  # nothing sent before Run

    run = click_run(shell, view)
    assert sent_subtasks(server) == ["The Nile, its length", PROPOSED[2],
                                     "The Amazon, its basin"]
    assert server.count("planner") == 1
    assert run.status == "completed" and run.review is not None
    assert run.review.approved_by == "review"
    # The plan's planner call is the run's: one run, under the plan's id.
    assert run.run_id == review.plan.run_id
    assert [c.role for c in run.calls].count("planner") == 1
    assert (run.review.edited, run.review.dropped, run.review.added) == (1, 1, 1)
    assert run.review.line().startswith(
        "plan reviewed: 3 proposed · 1 edited · 1 dropped · 1 added")


def test_a_review_with_nothing_kept_cannot_run(
    shell: InteractiveShell, magics: SwarmMagics, server: FakeServer
) -> None:
    view = review_cell(shell, magics, server).view
    for keep in view.keeps:
        keep.value = False
    assert view.run_button.disabled and view.run_button.description == "Run 0 workers"
    view.run_button.click()
    assert "_swarm_handle" not in shell.user_ns and server.count("worker-*") == 0


# -- Cancel and interrupts spend nothing --------------------------------------------------------


def test_cancel_spends_nothing_and_leaves_one_line(
    shell: InteractiveShell, magics: SwarmMagics, server: FakeServer
) -> None:
    review = review_cell(shell, magics, server)
    with capture_output() as captured:
        review.view.cancel_button.click()
    (line,) = captured.outputs
    assert line.data["text/plain"] == (
        "review cancelled: nothing was sent after the planner's call; the plan (3 sub-tasks, "
        f"{review.plan.run_id} in the history) stays in _swarm_plan")
    review.run()  # a late click on the closed view does nothing
    assert server.counts_by_step() == {"planner": 1}
    assert "_swarm" not in shell.user_ns and "_swarm_handle" not in shell.user_ns


def test_an_interrupt_while_planning_spends_nothing_more(
    shell: InteractiveShell, magics: SwarmMagics, server: FakeServer
) -> None:
    server.latency = 5.0
    trigger = sigint_when(lambda: server.in_flight >= 1)
    with capture_output() as captured:
        shell.run_cell_magic("swarm", line_for(server, "--review"), TASK)
    trigger.join()
    assert captured.stdout == ("review interrupted while planning; nothing was sent after "
                               "the planner's call\n")
    assert captured.outputs == [] and magics.pending_review is None
    assert "_swarm_plan" not in shell.user_ns
    assert wait_until(lambda: server.in_flight == 0)
    assert server.counts_by_step() == {"planner": 1}


def test_an_interrupt_while_the_review_waits_spends_nothing_and_the_review_still_runs(
    shell: InteractiveShell, magics: SwarmMagics, server: FakeServer
) -> None:
    review = review_cell(shell, magics, server)
    # The kernel is free: another cell runs, and the user interrupts it.
    ready = threading.Event()
    trigger = sigint_when(ready.is_set)
    with capture_output():
        shell.user_ns["_ready"] = ready
        shell.run_cell("_ready.set()\nimport time\nfor _ in range(100): time.sleep(0.05)")
    trigger.join()
    assert server.counts_by_step() == {"planner": 1}
    run = click_run(shell, review.view)
    assert sent_subtasks(server) == PROPOSED and server.count("planner") == 1
    assert run.review is not None and not run.review.changed


# -- _swarm_plan edited from code ------------------------------------------------------------


def test_swarm_plan_tasks_edited_from_code_show_in_the_boxes_and_run(
    shell: InteractiveShell, magics: SwarmMagics, server: FakeServer
) -> None:
    view = review_cell(shell, magics, server).view
    shell.run_cell("_swarm_plan.tasks[0] = 'From code'\n"
                   "del _swarm_plan.tasks[1]\n"
                   "_swarm_plan.tasks.append('Appended from code')")
    assert [box.value for box in view.boxes] == ["From code", PROPOSED[2],
                                                 "Appended from code"]
    assert view.run_button.description == "Run 3 workers"
    view.keeps[2].value = False  # then a tick in the widget: one list, the later edit wins
    assert shell.user_ns["_swarm_plan"].tasks == ["From code", PROPOSED[2]]
    click_run(shell, view)
    assert sent_subtasks(server) == ["From code", PROPOSED[2]]


def test_a_list_assigned_to_swarm_plan_tasks_is_what_run_runs(
    shell: InteractiveShell, magics: SwarmMagics, server: FakeServer
) -> None:
    view = review_cell(shell, magics, server).view
    shell.run_cell("_swarm_plan.tasks = ['Only this one']")
    run = click_run(shell, view)
    assert [box.value for box in view.boxes] == ["Only this one"]  # shown at the click
    assert sent_subtasks(server) == ["Only this one"]
    assert run.review is not None and run.review.approved == ("Only this one",)


# -- Re-plan ---------------------------------------------------------------------------------


def test_replan_asks_the_planner_again_with_the_note_and_runs_the_new_plan(
    shell: InteractiveShell, magics: SwarmMagics, server: FakeServer
) -> None:
    review = review_cell(shell, magics, server)
    first = review.plan
    review.view.note.value = "only rivers in Africa"
    review.view.replan_button.click()
    assert wait_until(lambda: review.state == "waiting", timeout=30)
    assert server.count("planner") == 2
    planners = [r for r in server.requests if r.step == "planner"]
    assert "only rivers in Africa" in planners[1].body["messages"][0]["content"]
    new = shell.user_ns["_swarm_plan"]
    assert isinstance(new, Plan) and new is review.plan and new is not first
    first.tasks.append("An edit of the old plan")  # no longer the review's
    assert [box.value for box in review.view.boxes] == new.tasks
    assert new.run_id in review.view.header.value, (first.run_id, new.run_id)
    assert not review.view.run_button.disabled
    click_run(shell, review.view)
    assert server.count("planner") == 2 and server.count("worker-*") == 3


def test_a_planner_that_fails_is_one_line_and_no_review(
    shell: InteractiveShell, magics: SwarmMagics, server: FakeServer
) -> None:
    server.add_fault(FaultRule(Fault.status(400), step="planner"))
    with pytest.raises(UsageError) as caught:
        shell.run_cell_magic("swarm", line_for(server, "--review"), TASK)
    assert "\n" not in str(caught.value) and "400" in str(caught.value)
    assert magics.pending_review is None and "_swarm_plan" not in shell.user_ns
    assert server.count("worker-*") == 0


# -- confirm_over, --background, refusals -----------------------------------------------------


def test_confirm_over_under_the_forecast_runs_at_once_without_a_review(
    shell: InteractiveShell, magics: SwarmMagics, server: FakeServer
) -> None:
    with capture_output() as captured:
        shell.run_cell_magic("swarm", line_for(server, "--confirm-over 5"), TASK)
    run = shell.user_ns["_swarm"]
    assert magics.pending_review is None and run.status == "completed"
    assert run.review is None  # nobody looked at it
    assert [c.role for c in run.calls].count("planner") == 1  # carried, not asked again
    assert server.count("planner") == 1 and server.count("worker-*") == 3
    assert captured.outputs[-1].data["text/plain"] == run.tables().text()


def test_confirm_over_above_the_forecast_holds_the_run_for_review(
    shell: InteractiveShell, magics: SwarmMagics, server: FakeServer
) -> None:
    shell.run_line_magic("swarm", "config confirm_over=0.0000001")
    review = review_cell(shell, magics, server, extra="")
    header = review.view.header.value
    held = header.split("held for review: ", 1)[1].split("</div>", 1)[0]
    assert held.startswith("the forecast for 3 workers is ") and "$" in held, held
    assert held.endswith("over confirm_over $0.000000"), held
    run = click_run(shell, review.view)
    assert run.review is not None and run.review.approved_by == "review"
    assert server.count("planner") == 1 and server.count("worker-*") == 3


def test_background_review_reviews_first_then_runs_in_the_background(
    shell: InteractiveShell, magics: SwarmMagics, server: FakeServer
) -> None:
    review = review_cell(shell, magics, server, extra="--background --review --out r")
    review.view.keeps[0].value = False
    with capture_output() as captured:
        review.view.run_button.click()
        handle = shell.user_ns["_swarm_handle"]
        run = handle.result()
    assert shell.user_ns["r"] is run and shell.user_ns["_swarm"] is run
    # The same output: a line while it starts, one while it runs, then the tables.
    starting, placeholder, final = captured.outputs
    assert starting.data["text/plain"] == "starting 2 workers…"
    assert placeholder.data["text/plain"].startswith("swarm running in the background")
    assert final.data["text/plain"] == run.tables().text()
    assert sent_subtasks(server) == PROPOSED[1:]


@pytest.mark.parametrize(("extra", "message"), [
    ("--review --dry-run", "--dry-run shows the plan and runs nothing; --review shows it"),
    ("--review --compare workers=2,3", "--review cannot --compare: its variants may each "
                                       "make another plan"),
    ("--review --plan-from abc123", "--plan-from gives the plan, so there is no planner's "
                                    "plan to --review"),
])
def test_review_refuses_what_has_no_single_planner_plan(
    shell: InteractiveShell, magics: SwarmMagics, server: FakeServer, extra: str, message: str
) -> None:
    with pytest.raises(UsageError, match=message.replace("-", r"\-").replace("'", ".")):
        shell.run_cell_magic("swarm", line_for(server, extra), TASK)
    assert server.requests == []


def test_the_magics_help_names_review(shell: InteractiveShell, magics: SwarmMagics) -> None:
    doc = " ".join(shell.find_cell_magic("swarm").__doc__.split())  # as one line
    assert "--review run only the planner, then show its plan to edit" in doc


def test_confirm_over_refuses_a_compare_cell_in_one_line(
    shell: InteractiveShell, magics: SwarmMagics, server: FakeServer
) -> None:
    shell.run_line_magic("swarm", "config confirm_over=0.01")
    with pytest.raises(UsageError, match="confirm_over cannot hold a --compare cell"):
        shell.run_cell_magic("swarm", line_for(server, "--compare workers=2,3"), TASK)
    assert server.requests == []


def test_the_watched_tasks_are_a_list_and_copy_as_a_plain_one() -> None:
    seen: list[list[str]] = []
    tasks = WatchedTasks(["a", "b"], seen.append)
    tasks += ["c"]
    tasks.sort(reverse=True)
    tasks.replace(["quiet"])  # the review's own write tells nobody
    assert seen == [["a", "b", "c"], ["c", "b", "a"]] and tasks == ["quiet"]
    assert type(copy.deepcopy(tasks)) is list and pickle.loads(pickle.dumps(tasks)) == ["quiet"]
    assert isinstance(tasks, list) and json.dumps(tasks) == '["quiet"]'


def test_a_reviewed_cells_recording_replays_with_no_widget_and_the_same_tables(
    shell: InteractiveShell, magics: SwarmMagics, server: FakeServer, tmp_path: Path
) -> None:
    cassette = tmp_path / "reviewed.swarm.json"
    view = review_cell(shell, magics, server, extra=f"--review --record {cassette}").view
    view.boxes[0].value = "The Nile, its length"
    with capture_output() as live:
        view.run_button.click()
        run = shell.user_ns["_swarm_handle"].result()
    magics.pending_review = None
    with capture_output() as replayed:  # --review on a replay cell: no widget, no question
        shell.run_cell_magic("swarm", f"--replay {cassette} --review", TASK)
    again = shell.user_ns["_swarm"]
    assert magics.pending_review is None and len(replayed.outputs) == 1
    assert again.review == run.review and again.review is not None
    assert [w.task for w in again.workers] == ["The Nile, its length", *PROPOSED[1:]]
    assert replayed.outputs[0].data == live.outputs[-1].data  # the same tables


def test_compare_plan_from_a_reviewed_run_runs_the_approved_plan_in_every_variant(
    shell: InteractiveShell, magics: SwarmMagics, server: FakeServer
) -> None:
    """What --compare --review's refusal points to, done."""
    view = review_cell(shell, magics, server).view
    view.boxes[0].value = "The Nile, its length"
    click_run(shell, view)
    server.clear()
    with capture_output():
        shell.run_cell_magic(
            "swarm", line_for(server, "--compare temperature=0,1 --plan-from _swarm"), TASK)
    compared = shell.user_ns["_swarm"]
    assert [[w.task for w in run.workers] for run in compared.runs] == [
        ["The Nile, its length", *PROPOSED[1:]]] * 2
    assert server.count("planner") == 0
