"""``%%swarm --review`` and a notebook's ``confirm_over``: the plan looked at, edited and
approved in the cell's output before any worker runs.

The cell asks the planner only (``swarmkit.plan``), shows the review widget
(``display.reviewwidget``) and returns, so the kernel is free while the review waits;
the Plan is ``_swarm_plan``. The buttons' clicks arrive as comm messages on the kernel's
main thread, between cells:

- Run starts exactly the approved sub-tasks (no second planner call, the review
  recorded as ``approved_by="review"``) on the background loop, in the same output: the
  live dashboard, then the tables, as ``--background`` does (the cell has returned, so
  there is nothing to block); ``%swarm cancel`` and the dashboard's buttons reach it.
- Re-plan asks the planner again (with the note, if any) and shows the new plan.
- Cancel sends nothing more: the output becomes one line; the Plan stays in
  ``_swarm_plan``.

The boxes and ``_swarm_plan.tasks`` are one list: each edit in a box writes the list,
and an edit of the list from code (in place) redraws the boxes at once. A list assigned
anew (``_swarm_plan.tasks = [...]``) is taken at the next click: the later edit wins.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Protocol

from IPython.core.error import UsageError

from ..api.gate import over_threshold
from ..api.planning import Plan, plan
from ..config.swarmconfig import SwarmConfig
from ..config.wording import counted
from ..display.reviewwidget import ReviewView
from ..engine.background import background_loop
from ..errors import ConfigError
from .bridge import SwarmHandle
from .flags import COMPARE_WHY, SwarmArgs
from .output import publish, publish_widget

if TYPE_CHECKING:
    import concurrent.futures

__all__ = ["PLAN_VARIABLE", "Review", "ReviewHost", "WatchedTasks", "holds_for_review",
           "plan_handle", "plan_in_cell"]

PLAN_VARIABLE = "_swarm_plan"

# What a cancelled or interrupted review leaves: the one figure a user asks, "what did it
# spend?", answered.
_NOTHING_MORE = "nothing was sent after the planner's call"


class WatchedTasks(list[str]):
    """A Plan's ``tasks`` that tell the review when code edits them in place (it is a
    ``list``: the Plan and the run read it as one)."""

    def __init__(self, items: Iterable[str] = (),
                 on_change: Callable[[list[str]], None] | None = None) -> None:
        super().__init__(items)
        self._on_change = on_change

    def replace(self, items: Iterable[str]) -> None:
        """Set the whole list without telling anyone (the review's own write)."""
        list.__setitem__(self, slice(None), list(items))

    def _changed(self) -> None:
        if self._on_change is not None:
            self._on_change(list(self))

    def __reduce__(self) -> tuple[Any, ...]:
        return (list, (list(self),))  # a copy or a pickle is a plain list


def _notifying(name: str) -> Callable[..., Any]:
    base = getattr(list, name)

    def method(self: WatchedTasks, *args: Any, **kwargs: Any) -> Any:
        result = base(self, *args, **kwargs)
        self._changed()
        return result

    method.__name__ = name
    return method


for _name in ("__setitem__", "__delitem__", "__iadd__", "__imul__", "append", "extend",
              "insert", "pop", "remove", "clear", "sort", "reverse"):
    setattr(WatchedTasks, _name, _notifying(_name))


def plan_handle(task: str, options: dict[str, Any]) -> SwarmHandle:
    """The handle of a Plan's run (``Plan.run_options``: the approved sub-tasks, their
    review), so the live view's buttons and ``%swarm cancel`` reach its engine."""
    engine_options = dict(options)
    config = engine_options.pop("config").with_options(tasks=engine_options.pop("tasks"))
    return SwarmHandle(task, config, engine_options=engine_options)


def holds_for_review(args: SwarmArgs, config: SwarmConfig,
                     engine_options: Mapping[str, Any]) -> bool:
    """Whether the cell stops after its planner: ``--review``, or ``confirm_over`` set,
    when there is a planner's plan to stop for (not a replay: its cassette holds the
    approved plan; not given tasks or ``--plan-from``)."""
    if (config.replay is not None or config.tasks
            or engine_options.get("plan_from") is not None):
        return False
    if args.review:
        return True
    if config.confirm_over is None:
        return False
    if args.compare:  # the same reason as --review's refusal (flags.parse_line)
        raise UsageError(f"%%swarm: confirm_over cannot hold a --compare cell: {COMPARE_WHY}; "
                         "or unset it: %swarm config confirm_over=none")
    return True


def plan_in_cell(task: str, config: SwarmConfig, engine_options: Mapping[str, Any]
                 ) -> Plan | None:
    """The planner's plan, made in the cell (an interrupt lands in the wait); None when
    interrupted, after one line saying nothing more was sent."""
    bridge = background_loop()
    future = bridge.submit(plan(task, config=config, **engine_options))
    try:
        return bridge.wait(future)
    except KeyboardInterrupt:
        future.cancel()
        print(f"review interrupted while planning; {_NOTHING_MORE}")
        return None


class ReviewHost(Protocol):
    """What a review needs of the magics: the notebook's namespace, where the pending
    review is kept, and a run started in the background in a given output."""

    pending_review: Review | None

    @property
    def namespace(self) -> dict[str, Any]: ...

    def run_in_output(self, handle: SwarmHandle, names: tuple[str, ...], display_id: str,
                      live: bool) -> SwarmHandle: ...


class Review:
    """One review in one cell's output: its Plan, its widget, and what its buttons do."""

    def __init__(
        self, magics: ReviewHost, *, task: str, config: SwarmConfig,
        engine_options: Mapping[str, Any], names: tuple[str, ...], made: Plan,
        live: bool, reason: str | None = None,
    ) -> None:
        self.magics = magics
        self.task = task
        self.config = config
        self.engine_options = dict(engine_options)
        self.names = names
        self.live = live
        self.plan = made
        self.state = "waiting"  # then: replanning, running or cancelled
        self.handle: SwarmHandle | None = None
        self.display_id = uuid.uuid4().hex
        self.view = ReviewView(
            task=task, tasks=list(made.tasks), forecast_for=made.forecast_for,
            on_edit=self._edited, on_run=self.run, on_replan=self.replan,
            on_cancel=self.cancel, plan_id=made.run_id, reason=reason)
        self._watch(made)

    @classmethod
    def held(cls, magics: ReviewHost, made: Plan, limit: Decimal, **kwargs: Any
             ) -> Review | None:
        """The review of a run whose forecast is over ``limit`` (``confirm_over``), or
        None when it is not over: the run goes ahead, nobody asked."""
        reason = over_threshold(made.forecast, limit)
        return None if reason is None else cls(magics, made=made, reason=reason, **kwargs)

    def show(self) -> None:
        self.magics.namespace[PLAN_VARIABLE] = self.plan
        self.magics.pending_review = self
        publish_widget(self.view.widget, self.display_id)

    # -- the list ------------------------------------------------------------------------

    def _watch(self, made: Plan) -> None:
        made.tasks = WatchedTasks(made.tasks, lambda tasks: self._code_edited(made, tasks))

    def _code_edited(self, made: Plan, tasks: list[str]) -> None:
        # A plan replaced by Re-plan (still in a user's variable) no longer draws here.
        if self.state == "waiting" and made is self.plan:
            self.view.show_tasks(tasks)

    def _edited(self, kept: list[str]) -> None:
        tasks = self.plan.tasks
        if isinstance(tasks, WatchedTasks):
            tasks.replace(kept)
        else:  # assigned anew from code, then edited here: this edit is the later one
            self.plan.tasks = list(kept)
            self._watch(self.plan)

    def _adopt_assigned(self) -> None:
        """A list assigned to ``_swarm_plan.tasks`` since the last edit here: show it."""
        if not isinstance(self.plan.tasks, WatchedTasks):
            self._watch(self.plan)
            self.view.show_tasks(self.plan.tasks)

    # -- the buttons -----------------------------------------------------------------------

    def run(self) -> None:
        """Run the approved sub-tasks in this output, on the background loop."""
        if self.state != "waiting":
            return
        self._adopt_assigned()
        try:
            options = self.plan.run_options("review")
        except ConfigError as exc:  # e.g. every box blank: say it, keep the review
            self.view.ready(str(exc), error=True)
            return
        self.state = "running"
        # A line between the review and the dashboard: JupyterLab renders a widget put
        # in place of another widget with the same renderer, which the review's closing
        # would then dispose of, taking the dashboard with it.
        workers = counted(len(options["tasks"]), "worker")
        publish(({"text/plain": f"starting {workers}…"}, {}), self.display_id, update=True)
        self.view.discard()
        self.handle = self.magics.run_in_output(
            plan_handle(self.task, options), self.names, self.display_id, self.live)

    def replan(self, note: str | None) -> None:
        if self.state != "waiting":
            return
        self.state = "replanning"
        future = background_loop().submit(self.plan.areplan(note))
        future.add_done_callback(self._replanned)

    def _replanned(self, future: concurrent.futures.Future[Plan]) -> None:
        """On the loop thread: show the new plan (widget updates are sent from any
        thread), or say why there is none and keep this one."""
        if self.state != "replanning":
            return
        try:
            made = future.result()
        except Exception as exc:
            self.state = "waiting"
            self.view.ready(f"re-plan failed: {exc}; this plan is kept", error=True)
            return
        self.plan = made
        self._watch(made)
        self.magics.namespace[PLAN_VARIABLE] = made
        self.view.show_tasks(made.tasks, plan_id=made.run_id, forecast_for=made.forecast_for)
        self.view.ready(f"new plan {made.run_id}: {counted(len(made.tasks), 'sub-task')}")
        self.state = "waiting"

    def cancel(self) -> None:
        if self.state not in ("waiting", "replanning"):
            return
        self.state = "cancelled"
        size = counted(len(self.plan.tasks), "sub-task")
        line = (f"review cancelled: {_NOTHING_MORE}; the plan ({size}, "
                f"{self.plan.run_id} in the history) stays in {PLAN_VARIABLE}")
        publish(({"text/plain": line}, {}), self.display_id, update=True)
        self.view.discard()
