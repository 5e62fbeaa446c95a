"""``%%swarm --dry-run``: run only the planner, then show what the fan-out could cost.

The estimate itself is ``swarmkit.engine.estimate``; this module renders it.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any

from ..display.tables import format_cost, format_tokens
from ..engine.estimate import Estimate, RoleEstimate
from ..engine.estimate import estimate as estimate_plan
from ..engine.swarm import Engine
from .display import SmallTable

__all__ = ["DryRun", "RoleEstimate", "dry_run", "estimate"]


@dataclass(frozen=True, slots=True)
class DryRun(Estimate):
    """The plan and a cost bound for running it. Displays as a small table."""

    def table(self) -> SmallTable:
        rows = [
            (r.role, r.model, r.calls, format_tokens(r.tokens), format_cost(r.cost_usd),
             "spent" if r.measured else "at most")
            for r in self.roles
        ]
        rows.append(("total", "", sum(r.calls for r in self.roles), "",
                     format_cost(self.cost_usd), "at most"))
        unpriced = sorted({r.model for r in self.roles if r.cost_usd is None})
        note = (f"no price for {', '.join(unpriced)}: add one with %swarm prices MODEL IN OUT"
                if unpriced else "")
        return SmallTable(
            f"dry run: {len(self.plan)} workers planned",
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
    bound = estimate_plan(engine.config, engine.prices, planner_calls, task, plan)
    return DryRun(bound.task, bound.plan, bound.roles)


async def dry_run(engine: Engine, task: str) -> DryRun:
    """Plan ``task`` with ``engine`` and estimate the rest; closes the engine's caller."""
    try:
        plan = await engine.plan_only(task)
        return estimate(engine, task, plan)
    finally:
        await engine.caller.aclose()
