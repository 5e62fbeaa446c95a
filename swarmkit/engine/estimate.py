"""The dry-run estimate: what running a plan could cost at most, before it runs.

The bound is the price table × each planned worker's (prompt bound + max_tokens), plus
the reducer over that many worker outputs (past the reducer's input limit, every call of
its tree of parts): the same worst case the budget reserves, so a run under a budget at
least this large is never cut short by the cap. The planner's
row is what it really spent (it ran).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal

from ..config.swarmconfig import SwarmConfig
from ..record.rows import CallRecord
from ..record.usage import Usage
from .budgetedcalls import build_request
from .prices import PriceTable
from .reducerinput import input_limit, reducer_prompts, reducer_request
from .worker import worker_messages

__all__ = ["Estimate", "RoleEstimate", "estimate"]


@dataclass(frozen=True, slots=True)
class RoleEstimate:
    role: str
    model: str
    calls: int
    tokens: int | None
    cost_usd: Decimal | None  # None: no price known for the model
    measured: bool  # True for the planner (it ran), False for an upper bound


@dataclass(frozen=True, slots=True)
class Estimate:
    """The plan and a cost bound for running it, one row per role."""

    task: str
    plan: tuple[str, ...]
    roles: tuple[RoleEstimate, ...]

    @property
    def cost_usd(self) -> Decimal | None:
        """The total bound; unknown when any role's model has no price."""
        return sum((Usage(cost=role.cost_usd) for role in self.roles), Usage()).cost


def estimate(
    config: SwarmConfig,
    prices: PriceTable,
    planner_calls: Sequence[CallRecord],
    task: str,
    plan: tuple[str, ...],
) -> Estimate:
    """Bound the cost of the fan-out and the reducer for ``plan``; the planner's row sums
    ``planner_calls``, the calls it made."""
    spent = sum((call.usage for call in planner_calls), Usage())
    roles = [RoleEstimate("planner", config.planner.model, len(planner_calls),
                          spent.total_tokens, spent.cost, measured=True)]

    worker_tokens = 0
    for index, subtask in enumerate(plan, start=1):
        messages = worker_messages(config.system_prompt, task, index, subtask, len(plan),
                                   config.output_schema)
        request = build_request(config, "worker", messages)
        worker_tokens += request.prompt_token_bound() + (request.max_tokens or 0)
    roles.append(_bound(prices, "worker", config.worker.model, len(plan), worker_tokens,
                        completion=len(plan) * config.worker.max_tokens))

    if not config.reduce:  # --no-reduce: no reducer call to bound
        return Estimate(task, plan, tuple(roles))
    # The reducer reads every worker's output: at most max_tokens each.
    skeleton = reducer_request(config, task, [(i, t, "") for i, t in enumerate(plan, 1)])
    reducer_tokens = (skeleton.prompt_token_bound() + len(plan) * config.worker.max_tokens
                      + (skeleton.max_tokens or 0))
    answer = skeleton.max_tokens or 0
    prompts = reducer_prompts(config, task, plan, config.worker.max_tokens, answer,
                              input_limit(config, prices).tokens)
    if len(prompts) > 1:  # past the input limit: a tree of parts, then the final merge
        roles.append(_bound(prices, "reducer", config.reducer.model, len(prompts),
                            sum(prompts) + answer * len(prompts),
                            completion=answer * len(prompts)))
        return Estimate(task, plan, tuple(roles))
    roles.append(_bound(prices, "reducer", config.reducer.model, 1 if plan else 0,
                        reducer_tokens, completion=answer))
    return Estimate(task, plan, tuple(roles))


def _bound(
    prices: PriceTable, role: str, model: str, calls: int, tokens: int, *, completion: int
) -> RoleEstimate:
    price = prices.lookup(model)
    cost = None if price is None else price.bound(tokens - completion, completion)
    return RoleEstimate(role, model, calls, tokens, cost, measured=False)
