"""``%%swarm --dry-run``: run only the planner, then show what the fan-out could cost.

The estimate itself is ``swarmkit.engine.estimate``; this module renders it. With
``--compare``, every variant's planner runs (identical planner requests are made once,
through one :class:`~swarmkit.provider.sharedcalls.SharedCalls`) and one table prices them all.
"""

from __future__ import annotations

import asyncio
import html
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..api.entry import create_engine
from ..comparison.variants import Variant
from ..config.swarmconfig import SwarmConfig
from ..config.wording import counted
from ..display.tablefmt import format_cost, format_tokens
from ..engine.engine import Engine
from ..engine.estimate import Estimate, RoleEstimate
from ..engine.estimate import estimate as estimate_plan
from ..provider.sharedcalls import SharedCalls
from ..record.usage import Usage
from ..tools.split import split_spec
from .output import SmallTable

__all__ = ["CompareDryRun", "DryRun", "RoleEstimate", "dry_run", "dry_run_variants",
           "estimate"]


@dataclass(frozen=True, slots=True)
class DryRun(Estimate):
    """The plan and a cost bound for running it. Displays as a small table.

    ``run_id`` is the dry run's own id: the history keeps it as ``planned``
    (``kept``), and ``--plan-from`` / ``plan_from=`` take this object or that id to make
    its calls."""

    run_id: str = ""
    kept: bool = False

    def next_step(self) -> str:
        """The line that says how to make the planned calls."""
        how = f"%%swarm --plan-from {self.run_id if self.kept else '_swarm'}"
        where = "kept in the history as planned; " if self.kept else ""
        return f"run {self.run_id}: {where}to make its calls: {how}"

    def table(self) -> SmallTable:
        rows = [
            (r.role, r.model, r.calls, format_tokens(r.tokens), format_cost(r.cost_usd),
             "spent" if r.measured else "at most")
            for r in self.roles
        ]
        rows.append(("total", "", sum(r.calls for r in self.roles), "",
                     format_cost(self.cost_usd), "at most"))
        unpriced = sorted({r.model for r in self.roles if r.cost_usd is None})
        notes = [f"no price for {', '.join(unpriced)}: add one with %swarm prices MODEL IN "
                 "OUT"] if unpriced else []
        note = "\n".join([*notes, *([self.next_step()] if self.run_id else [])])
        return SmallTable(
            f"dry run: {counted(len(self.plan), 'worker')} planned",
            ("role", "model", "calls", "tokens", "cost", ""), rows, note,
        )

    def __repr__(self) -> str:
        plan = "\n".join(f"{i}. {t}" for i, t in enumerate(self.plan, start=1))
        return f"{self.table()!r}\n\nplan\n{plan}"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(repr(self))

    def _repr_html_(self) -> str:
        items = "".join(f"<li>{html.escape(t)}</li>" for t in self.plan)
        return f"{self.table()._repr_html_()}\n<ol>{items}</ol>"


def estimate(engine: Engine, task: str, plan: tuple[str, ...]) -> DryRun:
    """Bound the cost of the fan-out and the reducer for ``plan``."""
    run = engine.run
    planner_calls = [] if run is None else [c for c in run.calls if c.role == "planner"]
    split = split_spec(engine.config.max_children) if engine.config.depth > 1 else None
    bound = estimate_plan(engine.config, engine.prices, planner_calls, task, plan, split)
    return DryRun(bound.task, bound.plan, bound.roles, run_id=engine.run_id,
                  kept=engine.config.history)


async def dry_run(engine: Engine, task: str) -> DryRun:
    """Plan ``task`` with ``engine`` and estimate the rest; closes the engine's caller."""
    try:
        plan = await engine.plan_only(task)
        return estimate(engine, task, plan)
    finally:
        await engine.caller.aclose()


@dataclass(frozen=True, slots=True)
class CompareDryRun:
    """Each variant's plan and cost bound (``estimates[i]`` is variant ``i``'s)."""

    labels: tuple[str, ...]
    estimates: tuple[DryRun, ...]

    @property
    def cost_usd(self) -> Any:
        """The bound of the whole comparison; unknown when any variant's is."""
        return sum((Usage(cost=e.cost_usd) for e in self.estimates), Usage()).cost

    def table(self) -> SmallTable:
        rows = []
        for label, est in zip(self.labels, self.estimates, strict=True):
            planner = est.roles[0]
            rows.append((label, len(est.plan), format_cost(planner.cost_usd),
                         format_cost(est.cost_usd)))
        spent = sum((Usage(cost=e.roles[0].cost_usd) for e in self.estimates), Usage()).cost
        rows.append(("total", sum(len(e.plan) for e in self.estimates), format_cost(spent),
                     format_cost(self.cost_usd)))
        unpriced = sorted({r.model for e in self.estimates for r in e.roles
                           if r.cost_usd is None})
        note = (f"no price for {', '.join(unpriced)}: add one with %swarm prices MODEL IN OUT"
                if unpriced else "")
        return SmallTable(
            f"dry run: {len(self.labels)} variants, "
            f"{counted(sum(len(e.plan) for e in self.estimates), 'worker')} planned",
            ("variant", "workers", "planner spent", "at most"), rows, note)

    def __repr__(self) -> str:
        return repr(self.table())

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(repr(self))

    def _repr_html_(self) -> str:
        return self.table()._repr_html_()


async def dry_run_variants(
    task: str, config: SwarmConfig, variants: Sequence[Variant],
    engine_options: Mapping[str, Any],
) -> CompareDryRun:
    """Plan ``task`` once per variant, concurrently; an identical planner request is
    made once and served to the other variants ($0 there, as a cached call)."""
    shared = SharedCalls()
    engines: list[Engine] = []
    try:
        for variant in variants:
            engines.append(await create_engine(config=config, shared=shared,
                                               **{**engine_options, **variant.as_dict()}))
    except BaseException:
        for engine in engines:
            await engine.caller.aclose()
        raise
    estimates = await asyncio.gather(*(dry_run(engine, task) for engine in engines))
    return CompareDryRun(tuple(v.label for v in variants), tuple(estimates))
