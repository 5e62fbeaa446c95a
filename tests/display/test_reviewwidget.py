"""The review widget with real ipywidgets (headless): what it shows, what it hands on,
and that it closes every model it made."""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal

import pytest

from swarmkit.config.swarmconfig import SwarmConfig
from swarmkit.display.reviewwidget import ReviewView, review_label
from swarmkit.display.tablefmt import format_cost
from swarmkit.engine.forecast import Forecast, forecast
from swarmkit.engine.prices import PriceTable

PLAN = ["Rivers of Africa", "Rivers of Asia", "Rivers of <Europe> & co"]


class Calls:
    """What the view handed on: each edit's kept list, and the buttons pressed."""

    def __init__(self) -> None:
        self.edits: list[list[str]] = []
        self.pressed: list[object] = []

    def forecast_for(self, tasks: Sequence[str]) -> Forecast:
        config = SwarmConfig().with_options(model="gpt-4.1-mini", workers=8)
        return forecast(config, PriceTable(), (), "Name rivers", tuple(tasks))


def view_of(calls: Calls, tasks: Sequence[str] = PLAN, reason: str | None = None
            ) -> ReviewView:
    return ReviewView(task="Name rivers", tasks=tasks, forecast_for=calls.forecast_for,
                      on_edit=calls.edits.append, on_run=lambda: calls.pressed.append("run"),
                      on_replan=lambda note: calls.pressed.append(("replan", note)),
                      on_cancel=lambda: calls.pressed.append("cancel"), plan_id="abc123",
                      reason=reason)


@pytest.mark.parametrize(("count", "label"), [(0, "Run 0 workers"), (1, "Run 1 worker"),
                                              (8, "Run 8 workers")])
def test_the_run_button_counts_workers_in_english(count: int, label: str) -> None:
    assert review_label(count) == label


def test_each_change_hands_on_what_is_kept_and_updates_the_count_and_forecast() -> None:
    calls = Calls()
    view = view_of(calls)
    assert [box.value for box in view.boxes] == PLAN and all(k.value for k in view.keeps)
    assert "Rivers of &lt;Europe&gt;" not in view.header.value  # the boxes hold the text
    assert "abc123" in view.header.value and "3 to run" in view.header.value
    assert "forecast for 3 workers" in view.forecast.value
    view.keeps[0].value = False
    view.boxes[1].value = "  "  # a blank box is not a sub-task
    assert calls.edits[-1] == [PLAN[2]]
    assert view.run_button.description == "Run 1 worker"
    assert "forecast for 1 worker" in view.forecast.value
    assert view.boxes[0].disabled and not view.boxes[1].disabled


def test_show_tasks_redraws_without_handing_anything_on() -> None:
    calls = Calls()
    view = view_of(calls)
    old_box = view.boxes[0]
    view.show_tasks(["Only one"], plan_id="def456")
    assert [box.value for box in view.boxes] == ["Only one"] and calls.edits == []
    assert old_box.comm is None  # the rows it replaced are closed
    assert "1 sub-task proposed" in view.header.value and "def456" in view.header.value


def test_the_buttons_call_back_and_busy_disables_them_until_ready() -> None:
    calls = Calls()
    view = view_of(calls, reason="the forecast is over confirm_over $0.01")
    assert "held for review: the forecast is over confirm_over $0.01" in view.header.value
    view.note.value = "  only long rivers "
    view.replan_button.click()
    assert calls.pressed == [("replan", "only long rivers")]
    assert view.run_button.disabled and view.replan_button.disabled
    view.run_button.click()  # disabled while re-planning
    assert calls.pressed == [("replan", "only long rivers")]
    view.ready("re-plan failed: 500", error=True)
    assert "sk-error" in view.status.value and not view.run_button.disabled
    view.run_button.click()
    view.cancel_button.click()
    assert calls.pressed[1:] == ["run", "cancel"]


def test_nothing_kept_disables_run_and_discard_closes_every_model() -> None:
    calls = Calls()
    view = view_of(calls, tasks=["One"])
    view.keeps[0].value = False
    assert view.run_button.disabled
    view.run_button.click()
    assert calls.pressed == []
    view.add_button.click()
    assert len(view.boxes) == 2 and view.boxes[1].value == ""
    view.discard()
    assert view.widget.comm is None and all(box.comm is None for box in view.boxes)


def test_the_forecast_shows_expected_and_bound_per_role() -> None:
    calls = Calls()
    html = view_of(calls).forecast.value
    for role in ("planner", "worker", "reducer", "total"):
        assert f"<td>{role}</td>" in html
    assert "at most" in html and "expected" in html
    bound = calls.forecast_for(PLAN).bound_usd
    assert bound is not None and bound > Decimal(0)
    assert format_cost(bound) in html  # the total's bound, as every table writes a cost
