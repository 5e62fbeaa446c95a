"""``swarmkit.run`` / ``run_sync`` as the user calls them: a run, a reviewed plan's run
(``plan=``), or a run held for review when its forecast is over ``confirm_over``.

The run itself is :func:`swarmkit.api.entry.run`; this module decides, before it, whether
the planner's plan is looked at first.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from ..config.swarmconfig import SwarmConfig
from ..config.wording import counted, kind_of
from ..display.tablefmt import format_cost
from ..engine.background import run_blocking
from ..engine.forecast import Forecast
from ..errors import ConfigError, ConfirmationNeeded
from .entry import run as run_now
from .planning import Plan, plan
from .result import Run

__all__ = ["confirm_threshold", "over_threshold", "run", "run_sync"]

# With these the plan is given, not made: there is no planner's plan to stop for.
_GIVEN_PLAN = ("tasks", "plan_from", "resume", "replay")


def confirm_threshold(options: Mapping[str, Any],
                      env: Mapping[str, str] | None = None) -> Decimal | None:
    """The ``confirm_over`` these options set (config, environment, keyword), or None."""
    config = options.get("config")
    base = config if isinstance(config, SwarmConfig) else None
    return SwarmConfig.from_options(base, env=env,
                                    confirm_over=options.get("confirm_over")).confirm_over


def over_threshold(forecast: Forecast, limit: Decimal) -> str | None:
    """The one-line reason ``forecast`` is over ``limit``, or None when it is not.

    The figure is the expected cost when the history gives one, else the bound; an
    unknown figure (a model with no price) is over any limit."""
    figure, which = forecast.figure()
    workers = counted(forecast.workers, "worker")
    if figure is None:
        return (f"the forecast for {workers} is unknown (a model has no price), so it may "
                f"be over confirm_over {format_cost(limit)}")
    if figure <= limit:
        return None
    return (f"the forecast for {workers} is {which} {format_cost(figure)} "
            f"({forecast.basis}), over confirm_over {format_cost(limit)}")


async def run(task: str = "", *, plan: Plan | None = None, **options: Any) -> Run:
    """Run a planner → workers → reducer swarm and return its Run.

    Options are the public names (``model=``, ``workers=``, ``concurrency=``,
    ``budget=``, ``base_url=``, ``api_key_env=``, per-role ``planner_model=`` ...; the
    README's options table). Every run is kept in the history database
    (``history_path``, default ``.swarmkit/history.db``; ``history=False`` turns it off).
    ``cache=True`` serves identical requests from it at $0; ``record=`` writes a
    cassette, ``replay=`` replays one with no network. ``resume=RUN`` continues an
    earlier run. ``checks=[...]`` and ``judge=MODEL`` score the answer (``Run.scores``).

    ``plan=``: run a :class:`~swarmkit.api.planning.Plan` (``swarmkit.plan``), exactly its
    ``tasks``, with no second planner call: the run carries the plan's planner calls (its
    cost, tables and budget count them) and takes the plan's run id; a Plan runs once.
    ``confirm_over=USD``: when the forecast of the planner's plan is over it, raise
    :class:`~swarmkit.errors.ConfirmationNeeded` with the Plan as ``err.plan``; only the
    planner's call has been made."""
    if plan is not None:
        if not isinstance(plan, Plan):
            raise ConfigError(f"plan= takes a swarmkit.Plan (from swarmkit.plan), not "
                              f"{kind_of(plan)}")
        if task.strip() and task.strip() != plan.task.strip():
            raise ConfigError("run: plan= runs the plan's own task; leave the task out")
        return await plan.run(**options)
    limit = confirm_threshold(options, options.get("env"))
    # A given plan has no planner's plan to stop for; a refused repeat= is refused
    # before the planner's call, as without a threshold.
    if (limit is None or any(options.get(name) is not None for name in _GIVEN_PLAN)
            or options.get("repeat") not in (None, 1)):
        return await run_now(task, **{k: v for k, v in options.items()
                                        if k != "confirm_over"})
    made = await _plan(task, options)
    reason = over_threshold(made.forecast, limit)
    if reason is not None:
        raise ConfirmationNeeded(f"{reason}; review err.plan (edit err.plan.tasks), then "
                                 "err.plan.run_sync()", made)
    return await made.run(approved_by=None)  # under the threshold: nobody reviewed it


async def _plan(task: str, options: dict[str, Any]) -> Plan:
    if not task.strip():
        raise ConfigError("run: the task is empty; give one (or resume=RUN to continue "
                          "an earlier run)")
    return await plan(task, **options)


def run_sync(task: str = "", **options: Any) -> Run:
    """``run`` for synchronous code, including inside a running loop (a notebook cell)."""
    return run_blocking(lambda: run(task, **options))
