"""``%%swarm --dry-run``: run only the planner, then bound what the fan-out would cost.

The bound is the price table × each planned worker's (prompt bound + max_tokens), plus
the reducer over that many worker outputs: the same worst case the budget reserves, so
a run under a budget at least this large is never cut short by the cap.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from ..display.tables import format_cost, format_tokens
from ..engine.reducer import reducer_request
from ..engine.worker import worker_messages
from ..records import sum_costs
from .display import SmallTable

if TYPE_CHECKING:
    from ..engine.swarm import Engine

__all__ = ["DryRun", "RoleEstimate", "dry_run", "estimate"]


@dataclass(frozen=True, slots=True)
class RoleEstimate:
    role: str
    model: str
    calls: int
    tokens: int | None
    cost_usd: Decimal | None  # None: no price known for the model
    measured: bool  # True for the planner (it ran), False for an upper bound


@dataclass(frozen=True, slots=True)
class DryRun:
    """The plan and a cost bound for running it. Displays as a small table."""

    task: str
    plan: tuple[str, ...]
    roles: tuple[RoleEstimate, ...]

    @property
    def cost_usd(self) -> Decimal | None:
        return sum_costs([role.cost_usd for role in self.roles])

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
    config = engine.config
    run = engine.run
    planner_calls = [] if run is None else [c for c in run.calls if c.role == "planner"]
    planner_tokens: int | None = 0
    for call in planner_calls:
        total = call.usage.total_tokens
        planner_tokens = None if planner_tokens is None or total is None else planner_tokens + total
    planner_cost = sum_costs([call.cost_usd for call in planner_calls])
    roles = [RoleEstimate("planner", config.planner.model, len(planner_calls), planner_tokens,
                          planner_cost, measured=True)]

    worker_tokens = 0
    for index, subtask in enumerate(plan, start=1):
        messages = worker_messages(config.system_prompt, task, index, subtask, len(plan))
        request = engine.request("worker", messages)
        worker_tokens += request.prompt_token_bound() + (request.max_tokens or 0)
    roles.append(_bound(engine, "worker", config.worker.model, len(plan), worker_tokens,
                        completion=len(plan) * config.worker.max_tokens))

    # The reducer reads every worker's output: at most max_tokens each.
    skeleton = reducer_request(engine, task, [(i, t, "") for i, t in enumerate(plan, 1)])
    reducer_tokens = (skeleton.prompt_token_bound() + len(plan) * config.worker.max_tokens
                      + (skeleton.max_tokens or 0))
    roles.append(_bound(engine, "reducer", config.reducer.model, 1 if plan else 0,
                        reducer_tokens, completion=skeleton.max_tokens or 0))
    return DryRun(task, plan, tuple(roles))


def _bound(
    engine: Engine, role: str, model: str, calls: int, tokens: int, *, completion: int
) -> RoleEstimate:
    price = engine.prices.lookup(model)
    cost = None if price is None else price.bound(tokens - completion, completion)
    return RoleEstimate(role, model, calls, tokens, cost, measured=False)


async def dry_run(engine: Engine, task: str) -> DryRun:
    """Plan ``task`` with ``engine`` and estimate the rest; closes the engine's caller."""
    try:
        plan = await engine.plan_only(task)
        return estimate(engine, task, plan)
    finally:
        await engine.caller.aclose()
