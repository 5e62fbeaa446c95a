"""The dry-run estimate: what running a plan could cost at most, before it runs.

The bound is the price table × each planned worker's (prompt bound + max_tokens), plus
the reducer over that many worker outputs (past the reducer's input limit, every call of
its tree of parts): the same worst case the budget reserves, so a run under a budget at
least this large is never cut short by the cap. The planner's
row is what it really spent (it ran).

In a tree (depth > 1) every level is bounded as if every worker that may split did, into
``max_children`` (within ``max_total_workers``): a splitting worker's every turn (its
``max_tool_hops`` turns and its answer, each prompt grown by a turn's arguments and its
capped tool result), its child swarm's reducer, and each leaf's one call with a
sub-task as long as a worker's answer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from ..config.swarmconfig import SwarmConfig
from ..record.rows import CallRecord
from ..record.usage import Usage
from .budgetedcalls import build_request
from .prices import PriceTable
from .reducerinput import input_limit, reducer_prompts, reducer_request
from .worker import worker_messages

__all__ = ["Estimate", "RoleEstimate", "estimate", "tree_levels"]


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
    split_tool: Mapping[str, Any] | None = None,
) -> Estimate:
    """Bound the cost of the fan-out and the reducer for ``plan``; the planner's row sums
    ``planner_calls``, the calls it made. At depth > 1, ``split_tool`` is the
    ``split_task`` entry the workers above the depth are offered (``tools.split_spec``)."""
    spent = sum((call.usage for call in planner_calls), Usage())
    roles = [RoleEstimate("planner", config.planner.model, len(planner_calls),
                          spent.total_tokens, spent.cost, measured=True)]

    worker_tokens = 0
    for index, subtask in enumerate(plan, start=1):
        messages = worker_messages(config.system_prompt, task, index, subtask, len(plan),
                                   config.output_schema)
        request = build_request(config, "worker", messages)
        worker_tokens += request.prompt_token_bound() + (request.max_tokens or 0)
    worker_calls, child_reducers = len(plan), (0, 0)
    if config.depth > 1 and plan:
        worker_calls, worker_tokens, child_reducers = _tree_bound(config, task, plan,
                                                                  split_tool)
    roles.append(_bound(prices, "worker", config.worker.model, worker_calls, worker_tokens,
                        completion=worker_calls * config.worker.max_tokens))
    if child_reducers[0]:
        roles.append(_bound(prices, "reducer (splits)", config.reducer.model, child_reducers[0],
                            child_reducers[1],
                            completion=child_reducers[0] * config.reducer.max_tokens))

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


def tree_levels(config: SwarmConfig, planned: int) -> list[int]:
    """The most workers each level of a tree may hold: the plan's, then every worker
    above ``depth`` splitting into ``max_children``, within ``max_total_workers``."""
    levels, total = [planned], planned
    for _ in range(config.depth - 1):
        count = levels[-1] * config.max_children
        if config.max_total_workers is not None:
            count = min(count, max(0, config.max_total_workers - total))
        levels.append(count)
        total += count
    return levels


def _tree_bound(
    config: SwarmConfig, task: str, plan: tuple[str, ...],
    split_tool: Mapping[str, Any] | None,
) -> tuple[int, int, tuple[int, int]]:
    """Worker calls and tokens of a whole tree, and its child reducers' calls and tokens."""
    worker = config.worker.max_tokens
    tools = (dict(split_tool),) if split_tool is not None else ()
    longest = max(plan, key=len)
    first = build_request(config, "worker", worker_messages(
        config.system_prompt, longest, len(plan), longest, len(plan), config.output_schema),
        tools=tools)
    # A child's sub-task is at most a worker's answer long; so is its parent's.
    child_bound = first.prompt_token_bound() + 2 * worker
    turns = config.max_tool_hops + 1
    # Each turn adds its arguments (an answer) and a tool result (capped in characters).
    grown = child_bound + config.max_tool_hops * (worker + config.max_tool_result_chars)
    splitter_tokens = turns * (grown + worker)
    levels = tree_levels(config, len(plan))
    splitters = sum(levels[:-1])
    calls = splitters * turns + levels[-1]
    tokens = splitters * splitter_tokens + levels[-1] * (child_bound + worker)
    skeleton = reducer_request(config, longest, [(i, longest, "")
                                                 for i in range(1, config.max_children + 1)])
    merge = (skeleton.prompt_token_bound() + config.max_children * worker
             + config.reducer.max_tokens)
    return calls, tokens, (splitters, splitters * merge)


def _bound(
    prices: PriceTable, role: str, model: str, calls: int, tokens: int, *, completion: int
) -> RoleEstimate:
    price = prices.lookup(model)
    cost = None if price is None else price.bound(tokens - completion, completion)
    return RoleEstimate(role, model, calls, tokens, cost, measured=False)
