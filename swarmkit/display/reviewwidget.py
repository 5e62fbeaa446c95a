"""``ReviewView``: the notebook's review of a plan before the fan-out (``%%swarm --review``).

One editable box and one keep checkbox per sub-task, a button that adds one, the
forecast of what is kept (expected and bound, per role), a note for the planner, and
the buttons ``Run N workers``, ``Re-plan`` and ``Cancel``. N and the forecast follow
every keystroke and tick.

The view knows no Plan and runs nothing: what is kept goes to ``on_edit`` at each change
(the magic writes it into the Plan's ``tasks``), the buttons call ``on_run`` /
``on_replan(note)`` / ``on_cancel``, and ``show_tasks`` redraws the boxes from a list
(an edit made from code, a new plan). Like ``display.widget``, it imports ipywidgets
inside its methods, so ``import swarmkit`` stays light.
"""

from __future__ import annotations

import contextlib
import html
from collections.abc import Callable, Sequence
from functools import cache
from typing import Any

from ..config.wording import counted
from ..engine.forecast import Forecast
from ..record.review import review_of
from .forecastview import FORECAST_HEADERS, forecast_rows, forecast_summary
from .tablefmt import html_table
from .theme import STYLE
from .widget import close_widget_tree

__all__ = ["ReviewView", "review_label"]

ForecastFor = Callable[[Sequence[str]], Forecast]

# The forecast's figures sit right, as the other tables' numbers do; the review's own
# classes (its header and status line) keep the theme's colours (theme.STYLE).
_REVIEW_CSS = ("<style>.swarmkit table.sk-forecast td:nth-child(n+3),"
               ".swarmkit table.sk-forecast th:nth-child(n+3){text-align:right;"
               "font-variant-numeric:tabular-nums}"
               # an HTML widget's text is one 28 px line by default: these parts wrap
               ".swarmkit.sk-review-part{line-height:1.45;white-space:normal;"
               "overflow-wrap:anywhere}"
               ".sk-review-html>.jupyter-widget-html-content,.sk-review-html>"
               ".widget-html-content{min-width:0;overflow:hidden}"
               ".swarmkit .sk-review-task{overflow:hidden;text-overflow:ellipsis;"
               "white-space:nowrap;max-width:100%}"
               # the boxes in the page's own font, as tall as their text (where the
               # browser can size a box to its content; elsewhere ``rows`` does)
               ".sk-review-box textarea{font-family:var(--jp-ui-font-family,sans-serif);"
               "field-sizing:content;min-height:2.1em;max-height:9em;resize:vertical}"
               "</style>")
_ROW_CHARS = 60  # about what a box shows per line: a longer text gets more rows


def review_label(count: int) -> str:
    """The Run button's words: ``Run 3 workers``, ``Run 1 worker``."""
    return f"Run {counted(count, 'worker')}"


@cache
def _review_box_class() -> type:
    """A VBox whose text/plain says what it is, for a frontend with no widgets (a
    terminal, or a notebook saved without widget state)."""
    import ipywidgets as widgets

    class ReviewBox(widgets.VBox):  # type: ignore[misc]
        def __repr__(self) -> str:
            return ("<swarmkit review: needs a Jupyter widget frontend; edit _swarm_plan.tasks"
                    " and run _swarm_plan.run_sync(approved_by='review') instead>")

    return ReviewBox


def _html(widgets: Any) -> Any:
    """An HTML part no wider than the review, however long its text: the task's line is
    cut, the forecast's table scrolls sideways (min-width 0 on it and its content)."""
    part = widgets.HTML(layout=widgets.Layout(min_width="0"))
    part.add_class("sk-review-html")
    return part


def _box_rows(text: str) -> int:
    return max(1, min(4, -(-len(text) // _ROW_CHARS)))


class ReviewView:
    """The review widget. Display ``.widget``; ``discard()`` once it is replaced.

    ``tasks``: the sub-tasks to show; ``forecast_for(kept)``: the forecast of a list
    (cheap, no call); ``reason``: why the run stopped for review (``--confirm-over``),
    shown above the boxes; ``plan_id``: the plan's record in the history."""

    def __init__(
        self, *, task: str, tasks: Sequence[str], forecast_for: ForecastFor,
        on_edit: Callable[[list[str]], None], on_run: Callable[[], None],
        on_replan: Callable[[str | None], None], on_cancel: Callable[[], None],
        plan_id: str = "", reason: str | None = None,
    ) -> None:
        import ipywidgets as widgets

        self.task = task
        self.plan_id = plan_id
        self.reason = reason
        self._forecast_for = forecast_for
        self._on_edit = on_edit
        self._on_run = on_run
        self._on_replan = on_replan
        self._on_cancel = on_cancel
        self._proposed = tuple(tasks)
        self._redrawing = False
        self._busy = False  # between a Re-plan or Cancel click and its outcome
        self.keeps: list[Any] = []  # one Checkbox per row
        self.boxes: list[Any] = []  # one Textarea per row
        self.header = _html(widgets)
        self.rows = widgets.VBox(layout=widgets.Layout(width="100%"))
        self.add_button = widgets.Button(
            description="Add a sub-task", icon="plus", tooltip="Add an empty sub-task below",
            layout=widgets.Layout(width="auto", align_self="flex-start", margin="2px 0 6px 0"))
        self.add_button.on_click(self._add_clicked)
        self.forecast = _html(widgets)
        self.note = widgets.Text(
            placeholder="a note for the planner (Re-plan)",
            layout=widgets.Layout(flex="1 1 16em", width="auto", min_width="12em"))
        self.run_button = widgets.Button(
            button_style="primary", icon="play", tooltip="Run the kept sub-tasks",
            layout=widgets.Layout(width="auto", flex="0 0 auto"))
        self.run_button.on_click(self._run_clicked)
        self.replan_button = widgets.Button(
            description="Re-plan", icon="refresh",
            tooltip="Ask the planner again, with the note if there is one",
            layout=widgets.Layout(width="auto", flex="0 0 auto"))
        self.replan_button.on_click(self._replan_clicked)
        self.cancel_button = widgets.Button(
            description="Cancel", icon="times", tooltip="Send nothing more; keep the plan",
            layout=widgets.Layout(width="auto", flex="0 0 auto"))
        self.cancel_button.on_click(self._cancel_clicked)
        self.status = _html(widgets)
        wrap = widgets.Layout(flex_flow="row wrap", align_items="center", width="100%",
                              grid_gap="4px")
        actions = widgets.HBox(
            [self.run_button, self.replan_button, self.cancel_button, self.note], layout=wrap)
        self.widget = _review_box_class()(
            [self.header, self.rows, self.add_button, self.forecast, actions, self.status],
            layout=widgets.Layout(width="100%", max_width="64em"))
        self.show_tasks(tasks)

    # -- what is kept ------------------------------------------------------------------

    def kept(self) -> list[str]:
        """The ticked, non-blank boxes' texts, in order: what Run runs."""
        return [box.value for keep, box in zip(self.keeps, self.boxes, strict=True)
                if keep.value and box.value.strip()]

    def show_tasks(self, tasks: Sequence[str], *, plan_id: str | None = None,
                   forecast_for: ForecastFor | None = None) -> None:
        """Redraw the boxes from ``tasks``, every one kept (a new plan: its id and
        forecast too). Nothing is written back: the list is already what is kept."""
        import ipywidgets as widgets

        if plan_id is not None:
            self.plan_id, self._proposed = plan_id, tuple(tasks)
        if forecast_for is not None:
            self._forecast_for = forecast_for
        self._redrawing = True
        try:
            old = list(self.rows.children)
            self.keeps, self.boxes = [], []
            self.rows.children = [self._row(text, widgets) for text in tasks]
            for row in old:
                close_widget_tree(row)
        finally:
            self._redrawing = False
        self._refresh()

    def _row(self, text: str, widgets: Any) -> Any:
        number = len(self.boxes) + 1
        keep = widgets.Checkbox(value=True, indent=False, description="",
                                tooltip="keep this sub-task",
                                layout=widgets.Layout(width="auto", flex="0 0 auto"))
        label = widgets.HTML(f"{number}.", layout=widgets.Layout(
            width="2.2em", flex="0 0 auto", margin="0 2px 0 0"))
        box = widgets.Textarea(value=text, rows=_box_rows(text), placeholder="a sub-task",
                               layout=widgets.Layout(flex="1 1 auto", width="auto"))
        box.add_class("sk-review-box")
        keep.observe(self._edited, names="value")
        box.observe(self._edited, names="value")
        self.keeps.append(keep)
        self.boxes.append(box)
        return widgets.HBox([keep, label, box], layout=widgets.Layout(
            width="100%", align_items="flex-start"))

    def _edited(self, _change: Any = None) -> None:
        if self._redrawing:
            return
        for keep, box in zip(self.keeps, self.boxes, strict=True):
            box.disabled = not keep.value  # an unticked box reads as dropped
        self._on_edit(self.kept())
        self._refresh()

    def _refresh(self) -> None:
        kept = self.kept()
        self.run_button.description = review_label(len(kept))
        self.run_button.disabled = not kept or self._busy
        self.header.value = self._header_html(kept)
        self.forecast.value = _forecast_html(self._forecast_for(kept))

    def _header_html(self, kept: list[str]) -> str:
        """The counts a run's review will record (``record.review``), as they stand."""
        edits = review_of(self._proposed, kept, "review")
        figures = [f"{counted(len(self._proposed), 'sub-task')} proposed",
                   *(f"{count} {what}" for what, count in (
                       ("edited", edits.edited), ("dropped", edits.dropped),
                       ("added", edits.added)) if count),
                   f"{len(kept)} to run"]
        plan = f" · plan <code>{html.escape(self.plan_id)}</code>" if self.plan_id else ""
        reason = ("" if not self.reason else
                  f'<div class="sk-warn">held for review: {html.escape(self.reason)}</div>')
        task = html.escape(" ".join(self.task.split()), quote=True)
        return (f'{STYLE}{_REVIEW_CSS}<div class="swarmkit sk-review-part">'
                f"<b>Review the plan</b> · {' · '.join(figures)}{plan}{reason}"
                f'<div class="sk-note sk-review-task" title="{task}">task: {task}</div>'
                "</div>")

    # -- the buttons -------------------------------------------------------------------

    def _add_clicked(self, _button: Any = None) -> None:
        import ipywidgets as widgets

        row = self._row("", widgets)
        self.rows.children = [*self.rows.children, row]
        self._refresh()
        with contextlib.suppress(Exception):  # a frontend without focus: the box is there
            self.boxes[-1].focus()

    def _run_clicked(self, _button: Any = None) -> None:
        if self.run_button.disabled:
            return
        self._on_run()

    def _replan_clicked(self, _button: Any = None) -> None:
        if self.replan_button.disabled:
            return
        note = self.note.value.strip() or None
        self.busy("asking the planner again" + (" with your note" if note else "") + "…")
        self._on_replan(note)

    def _cancel_clicked(self, _button: Any = None) -> None:
        if self.cancel_button.disabled:
            return
        self.busy("cancelling…")
        self._on_cancel()

    # -- state shown -------------------------------------------------------------------

    def busy(self, text: str) -> None:
        """Disable every control and say what is going on."""
        self._busy = True
        for control in (self.run_button, self.replan_button, self.cancel_button,
                        self.add_button, self.note, *self.keeps, *self.boxes):
            control.disabled = True
        self.say(text)

    def ready(self, text: str = "", *, error: bool = False) -> None:
        """Enable the controls again (after a re-plan, or a refused Run)."""
        self._busy = False
        for control in (self.replan_button, self.cancel_button, self.add_button, self.note,
                        *self.keeps):
            control.disabled = False
        for keep, box in zip(self.keeps, self.boxes, strict=True):
            box.disabled = not keep.value
        self._refresh()
        self.say(text, error=error)

    def say(self, text: str, *, error: bool = False) -> None:
        klass = "sk-error" if error else "sk-note"
        self.status.value = ("" if not text else
                             f'<div class="swarmkit sk-review-part"><span class="{klass}">'
                             f"{html.escape(text)}</span></div>")

    def discard(self) -> None:
        """Close every widget model, once the view is replaced in its output: a saved
        notebook keeps no widget state and the kernel no comms."""
        close_widget_tree(self.widget)


def _forecast_html(forecast: Forecast) -> str:
    table = html_table(forecast_rows(forecast), FORECAST_HEADERS, css="sk-forecast")
    return (f'<div class="swarmkit sk-review-part">{table}'
            f'<div class="sk-note">{html.escape(forecast_summary(forecast))}</div></div>')

