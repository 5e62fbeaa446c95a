"""``swarmkit.plan``: the planner's plan, to look at, edit and forecast before the fan-out.

``plan(task, **options)`` makes only the planner's call, with the run's own options
(models, base URLs, budget, cache, history), and returns a :class:`Plan`. Its ``tasks``
are edited in place; ``Plan.run`` then runs exactly them, with no second planner call,
and the run records the review (``Run.review``).

The planner's calls belong to the run: the run carries them (``Engine(carried=...)``),
so its record, cost, tables, budget and cassette hold them as a run that planned itself
would, and it takes the plan's run id, so the plan's ``planned`` history row becomes the
run (one row per plan and its run). A plan that is never run (or is replanned: the new
Plan has a row and id of its own) stays ``planned``. A Plan runs once: its calls and id
go to one run, and a second ``run`` is refused in one line naming ``resume=`` and
``plan_from=``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..config.swarmconfig import SwarmConfig
from ..config.tasks import given_tasks
from ..config.wording import counted
from ..display.forecastview import forecast_lines, plan_html
from ..engine.background import run_blocking
from ..engine.forecast import CompletionHistory, Forecast, forecast
from ..engine.prices import PriceTable
from ..errors import ConfigError
from ..record.events import Event, RunStarted
from ..record.review import APPROVERS, ApprovedBy, PlanReview, review_of
from ..record.rows import CallRecord
from ..store.callstore import CallStore
from ..store.cassette import RecordedCall
from ..store.completions import completion_history
from ..tools.split import split_spec
from .entry import create_engine, run
from .result import Run

__all__ = ["Plan", "plan", "plan_sync"]

# Options a plan's run cannot take: they would make another plan than the one reviewed.
_REPLANNING = ("tasks", "plan_from", "resume", "task_template", "replay", "plan")
# What the plan gives its run (run_options): never an override.
_CARRIED = ("carried", "run_id", "started_at", "review")


class _Started:
    """A sink that notes whether the run began (its RunStarted was emitted)."""

    def __init__(self) -> None:
        self.seen = False

    def on_event(self, event: Event) -> None:
        if isinstance(event, RunStarted):
            self.seen = True


@dataclass(eq=False)
class Plan:
    """A plan made by the planner, not yet run. What a front end (the notebook's review
    widget, the terminal's prompt, a user's code) may use, from any thread:

    - ``task``; ``proposed``, the planner's sub-tasks (a tuple: edits never change it);
    - ``tasks``, a plain ``list`` of str: edit it in place (assign, ``del``, ``append``),
      from any cell, until the run starts; the run reads it once, when it starts;
    - ``forecast`` (of the current ``tasks``) and ``forecast_for(tasks)`` (of any list,
      e.g. a widget's boxes as they are typed): pure, cheap, no call made;
    - ``review(approved_by)``: the :class:`PlanReview` the current ``tasks`` would record;
    - ``await run(approved_by=..., **overrides)`` / ``run_sync(...)``: run ``tasks`` and
      return the ``Run``; ``approved_by`` is ``"python"`` (the default), ``"review"``
      (the notebook's widget) or ``"yes"`` (the terminal); ``overrides`` are run options
      (``concurrency=``, ``sinks=``, ...), never ones that would make another plan;
      ``approved_by=None`` runs it unreviewed (no ``Run.review``);
    - ``run_options(approved_by, **overrides)``: the same run as ``create_engine``'s
      keywords (``tasks=`` the approved sub-tasks, ``review=`` the PlanReview,
      ``carried=`` the planner's calls, ``run_id=`` / ``started_at=`` the plan's), for a
      front end that builds the engine itself (the magic's live view, the terminal);
      it raises a one-line ConfigError for blank sub-tasks or a refused override. It
      hands the plan to one run: a second call (or ``run``) is refused (``ran_as``);
    - ``replan(note=None)`` / ``await areplan(note)``: ask the planner again (the note
      added to its prompt) and return a new Plan; this one is left as it is;
    - ``run_id``: the plan's record in the history (``planned``; ``plan_from=`` takes it),
      which its run takes over; ``ran_as``: that run's id once the plan was handed to
      it (None before);
    - ``options``: the options the plan was made with, which its run uses too.
    """

    task: str
    proposed: tuple[str, ...]
    tasks: list[str]
    run_id: str
    config: SwarmConfig
    prices: PriceTable
    planner_calls: tuple[CallRecord, ...] = ()
    history: CompletionHistory = field(default_factory=CompletionHistory)
    options: Mapping[str, Any] = field(default_factory=dict)
    note: str | None = None  # the note the plan was asked again with (replan)
    # The planner's calls as the plan's store recorded them: its run carries them.
    carried: tuple[RecordedCall, ...] = ()
    started_at: str | None = None
    ran_as: str | None = field(default=None, init=False)

    @property
    def plan(self) -> tuple[str, ...]:
        """The sub-tasks as they stand (what ``plan_from=`` reads)."""
        return tuple(self.tasks)

    @property
    def forecast(self) -> Forecast:
        return self.forecast_for(self.tasks)

    def forecast_for(self, tasks: Sequence[str]) -> Forecast:
        """The forecast of running ``tasks`` (blank ones left out, as a run would refuse
        them) under this plan's options."""
        kept = tuple(t.strip() for t in tasks if isinstance(t, str) and t.strip())
        split = (split_spec(self.config.max_children) if self.config.depth > 1
                 else None)
        return forecast(self.config, self.prices, self.planner_calls, self.task, kept,
                        self.history, split_tool=split)

    def approved(self) -> tuple[str, ...]:
        """The current ``tasks``, checked as a run takes them (one-line ConfigError)."""
        return given_tasks(list(self.tasks))

    def review(self, approved_by: ApprovedBy = "python") -> PlanReview:
        if approved_by not in APPROVERS:
            raise ConfigError(f"approved_by must be one of {', '.join(APPROVERS)}, "
                              f"not {approved_by!r}")
        return review_of(self.proposed, self.approved(), approved_by)

    def run_options(self, approved_by: ApprovedBy | None = "python", **overrides: Any
                    ) -> dict[str, Any]:
        """The options of the run of ``tasks`` (``create_engine``'s keywords): the plan's
        own, ``overrides``, the approved sub-tasks and their review."""
        if self.ran_as is not None:
            # Its planner's calls are in that run already: another would charge them
            # twice, and the id is that run's.
            raise ConfigError(f"Plan.run: plan {self.run_id} has run already (run "
                              f"{self.ran_as}); resume=\"{self.ran_as}\" finishes that run, "
                              f"plan_from=\"{self.ran_as}\" runs its sub-tasks again as a "
                              "new run, plan.replan() asks the planner again")
        refused = [name for name in _REPLANNING if name in overrides]
        if refused:
            raise ConfigError(f"Plan.run: {refused[0]}= would make another plan; edit "
                              "plan.tasks (or plan.replan()) instead")
        taken = [name for name in _CARRIED if name in overrides]
        if taken:
            raise ConfigError(f"Plan.run: {taken[0]}= is the plan's own (its run carries "
                              "the planner's calls, id and review); leave it out")
        review = None if approved_by is None else self.review(approved_by)
        approved = self.approved() if review is None else review.approved
        options = {k: v for k, v in self.options.items() if k not in _REPLANNING}
        options.pop("confirm_over", None)  # this plan is the confirmation
        self.ran_as = self.run_id
        return {**options, **overrides, "tasks": list(approved), "review": review,
                "carried": self.carried, "run_id": self.run_id,
                "started_at": self.started_at}

    async def run(self, *, approved_by: ApprovedBy | None = "python", **overrides: Any
                  ) -> Run:
        """Run exactly ``tasks``; the planner is not asked again, its calls are carried
        into the run (the run's id is ``run_id``). ``approved_by=None``: the plan was not
        looked at (a forecast under ``confirm_over``), no review is recorded. A second
        run is refused (``run_options``), unless the first was refused before it began."""
        options = self.run_options(approved_by, **overrides)
        started = _Started()
        options["sinks"] = (*options.get("sinks", ()), started)
        try:
            return await run(self.task, **options)
        except BaseException:
            if not started.seen:  # refused before it began: the plan is still to run
                self.ran_as = None
            raise

    def run_sync(self, *, approved_by: ApprovedBy | None = "python", **overrides: Any
                 ) -> Run:
        return run_blocking(lambda: self.run(approved_by=approved_by, **overrides))

    async def areplan(self, note: str | None = None) -> Plan:
        return await plan(self.task, note=note, **self.options)

    def replan(self, note: str | None = None) -> Plan:
        """A new plan of the same task, the planner told ``note`` as well."""
        return run_blocking(lambda: self.areplan(note))

    def __repr__(self) -> str:
        return plan_text(self)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(plan_text(self))

    def _repr_html_(self) -> str:
        return plan_html(_title(self), self.tasks, self.forecast)


def _title(plan: Plan) -> str:
    edited = "" if plan.plan == plan.proposed else f" (edited from {len(plan.proposed)})"
    return f"plan {plan.run_id}: {counted(len(plan.tasks), 'sub-task')}{edited}"


def plan_text(plan: Plan) -> str:
    """The plan and its forecast as text (the terminal's prompt shows this)."""
    lines = [_title(plan),
             *(f"{i}. {t}" for i, t in enumerate(plan.tasks, start=1)), "",
             *forecast_lines(plan.forecast)]
    return "\n".join(lines)


def _noted(options: dict[str, Any], note: str | None) -> dict[str, Any]:
    """``options`` with ``note`` added to the planner's prompt."""
    if not note or not note.strip():
        return options
    base = options.get("planner_prompt")
    if base is None:
        config = options.get("config")
        base = (config if isinstance(config, SwarmConfig) else SwarmConfig()).planner_prompt
    extra = note.strip().replace("{", "{{").replace("}", "}}")
    return {**options, "planner_prompt": f"{base}\n\nThe user's note on an earlier plan: "
                                         f"{extra}"}


async def plan(task: str, *, note: str | None = None, **options: Any) -> Plan:
    """Ask the planner only, with the run's options; return the :class:`Plan`.

    Nothing else is sent: no worker, no reducer. ``note``: text added to the planner's
    prompt (what ``Plan.replan`` passes). ``Plan.run`` runs the (edited) plan."""
    if not task.strip():
        raise ConfigError("plan: the task is empty; give one")
    kept = {k: v for k, v in options.items() if k != "confirm_over"}
    engine = await create_engine(task=task, **_noted(kept, note))
    try:
        proposed = await engine.plan_only(task)
    finally:
        await engine.caller.aclose()
    record = engine.run
    calls = () if record is None else tuple(c for c in record.calls if c.role == "planner")
    history = (await asyncio.to_thread(completion_history, engine.config.history_file())
               if engine.config.history else CompletionHistory())
    store = engine.caller
    recorder = store.recorder if isinstance(store, CallStore) else None
    carried = () if recorder is None else recorder.calls
    return Plan(task, tuple(proposed), list(proposed), engine.run_id, engine.config,
                engine.prices, calls, history, dict(options), note, carried,
                engine.started_at)


def plan_sync(task: str, **options: Any) -> Plan:
    """``plan`` for synchronous code, including inside a running loop (a notebook)."""
    return run_blocking(lambda: plan(task, **options))
