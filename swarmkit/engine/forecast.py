"""The forecast of a plan: what running it is expected to cost, next to the worst case.

The bound is :mod:`estimate`'s (what the budget reserves: every prompt byte a token,
every call writing its ``max_tokens``). It is safe and several times the spend, so it
cannot tell a user whether to go ahead. The expected figure is built the same way, call
by call, from likelier sizes:

- completion tokens per call: the mean of the earlier calls of the same model in the
  same role in this history (``CompletionHistory``, read by the store), each first cut
  to this run's ``max_tokens`` (a call cannot write more);
- a worker's prompt tokens: its own request (the plan's sub-task in it), at
  ``CHARS_PER_TOKEN`` characters a token, plus a few tokens per message;
- the reducer's prompt: its request around the workers' outputs, each output the
  workers' expected completion.

A role whose model has no earlier call in the history has no expected figure, and
neither has the total: the basis says so, and the bound is all there is.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from ..config.swarmconfig import SwarmConfig
from ..config.wording import counted
from ..record.modelcall import ChatRequest, canonical_json
from ..record.rows import CallRecord
from ..record.usage import Usage
from .budgetedcalls import build_request
from .estimate import Estimate, RoleEstimate, estimate
from .prices import PriceTable
from .reducerinput import reducer_request
from .worker import worker_messages

__all__ = ["CHARS_PER_TOKEN", "CompletionHistory", "Forecast", "Learned", "RoleForecast",
           "expected_prompt_tokens", "forecast"]

# English text through OpenAI's tokenizers: about four characters a token.
CHARS_PER_TOKEN = 4
_PER_MESSAGE = 4  # the chat format's tokens around each message
_PER_REQUEST = 3


@dataclass(frozen=True, slots=True)
class Learned:
    """The completion tokens of earlier calls of one model in one role, newest first,
    each with the ``max_tokens`` it was asked under (None: not known), and how many
    earlier runs they come from."""

    completions: tuple[int, ...]
    runs: int
    caps: tuple[int | None, ...] = ()

    def mean(self, cap: int | None) -> float:
        """The mean completion of a call under ``cap`` (this run's max_tokens).

        A call that wrote its whole ``max_tokens`` was cut there: under a larger cap it
        would have written more, by an unknown amount. It counts as the mean of the
        calls known to have gone past that point (cut to ``cap``), or as its cut where
        there is none; every other call counts as it was, cut to ``cap``."""
        caps = self.caps or (None,) * len(self.completions)
        known: list[int] = []
        cut_short: list[int] = []  # cut below this run's cap: how far they went is unknown
        for value, asked in zip(self.completions, caps, strict=True):
            if asked is not None and value >= asked and (cap is None or asked < cap):
                cut_short.append(asked)
            else:
                known.append(value if cap is None else min(value, cap))
        values = list(known)
        for point in cut_short:
            beyond = [v for v in known if v >= point]
            values.append(sum(beyond) / len(beyond) if beyond else point)
        return sum(values) / len(values) if values else 0.0


@dataclass(frozen=True, slots=True)
class CompletionHistory:
    """What a history knows of completions: ``(role, model)`` -> :class:`Learned`.
    Empty when the run keeps no history (or the history has no finished run)."""

    learned: Mapping[tuple[str, str], Learned] = field(default_factory=dict)
    where: str = "this history"

    def of(self, role: str, model: str) -> Learned | None:
        found = self.learned.get((role, model))
        return found if found is not None and found.completions else None


@dataclass(frozen=True, slots=True)
class RoleForecast:
    """One role's calls: expected tokens and cost (None: no basis), and the bound."""

    role: str
    model: str
    calls: int
    expected_tokens: int | None
    expected_usd: Decimal | None
    bound_tokens: int | None
    bound_usd: Decimal | None
    measured: bool  # the planner: what it spent (it ran), in both figures


@dataclass(frozen=True, slots=True)
class Forecast:
    """What running ``tasks`` is expected to cost and can cost at most, a row per role.

    ``expected_usd`` is None when some role has no basis (``basis`` says why);
    ``bound_usd`` is None when some model has no price."""

    task: str
    tasks: tuple[str, ...]
    roles: tuple[RoleForecast, ...]
    basis: str

    @property
    def workers(self) -> int:
        return len(self.tasks)

    @property
    def expected_usd(self) -> Decimal | None:
        if any(r.expected_usd is None for r in self.roles):
            return None
        return sum((Usage(cost=r.expected_usd) for r in self.roles), Usage()).cost

    @property
    def bound_usd(self) -> Decimal | None:
        return sum((Usage(cost=r.bound_usd) for r in self.roles), Usage()).cost

    def figure(self) -> tuple[Decimal | None, str]:
        """The figure a threshold is held against, and its name: the expected cost when
        the history gives one, else the bound."""
        if self.expected_usd is not None:
            return self.expected_usd, "expected"
        return self.bound_usd, "at most"

    def estimate(self) -> Estimate:
        """The bound alone, as the dry run's ``Estimate``."""
        return Estimate(self.task, self.tasks, tuple(
            RoleEstimate(r.role, r.model, r.calls, r.bound_tokens, r.bound_usd, r.measured)
            for r in self.roles))


def _text_size(value: Any) -> int:
    return len(value) if isinstance(value, str) else len(canonical_json(value))


def expected_prompt_tokens(request: ChatRequest) -> int:
    """A likely prompt size of ``request`` (not a bound): its text at
    ``CHARS_PER_TOKEN`` characters a token, and the chat format's few per message."""
    chars = sum(_text_size(m.get("content") or "") for m in request.messages)
    if request.tools:
        chars += len(canonical_json(list(request.tools)))
    if request.response_format is not None:
        chars += len(canonical_json(request.response_format))
    return (math.ceil(chars / CHARS_PER_TOKEN) + _PER_MESSAGE * len(request.messages)
            + _PER_REQUEST)


def _cost(prices: PriceTable, model: str, prompt: int, completion: int) -> Decimal | None:
    price = prices.lookup(model)
    return None if price is None else price.bound(prompt, completion)


def forecast(
    config: SwarmConfig,
    prices: PriceTable,
    planner_calls: Sequence[CallRecord],
    task: str,
    tasks: Sequence[str],
    history: CompletionHistory | None = None,
    split_tool: Mapping[str, Any] | None = None,
) -> Forecast:
    """The forecast of running ``tasks`` under ``config``; the planner's row is what
    ``planner_calls`` (the calls it made) spent. At depth > 1, ``split_tool`` is the
    ``split_task`` entry the workers are offered (``estimate``'s); how many workers
    split is theirs to decide, so a tree's forecast is its bound only."""
    plan = tuple(tasks)
    bound = estimate(config, prices, planner_calls, task, plan, split_tool)
    history = history or CompletionHistory()
    by_role = {r.role: r for r in bound.roles}
    planner = by_role["planner"]
    rows = [RoleForecast("planner", planner.model, planner.calls, planner.tokens,
                         planner.cost_usd, planner.tokens, planner.cost_usd, measured=True)]
    worker_model = config.worker.model
    learned_worker = history.of("worker", worker_model)
    worker_out = (None if learned_worker is None
                  else learned_worker.mean(config.worker.max_tokens))
    worker = by_role["worker"]
    expected_tokens = expected_usd = None
    if worker_out is not None:
        prompts = sum(expected_prompt_tokens(build_request(config, "worker", worker_messages(
            config.system_prompt, task, index, subtask, len(plan), config.output_schema)))
            for index, subtask in enumerate(plan, start=1))
        completions = round(worker_out * len(plan))
        expected_tokens = prompts + completions
        expected_usd = _cost(prices, worker_model, prompts, completions)
    rows.append(RoleForecast("worker", worker_model, worker.calls, expected_tokens,
                             expected_usd, worker.tokens, worker.cost_usd, measured=False))
    learned_reducer = None
    if "reducer" in by_role:
        reducer, model = by_role["reducer"], config.reducer.model
        learned_reducer = history.of("reducer", model)
        expected_tokens = expected_usd = None
        if learned_reducer is not None and worker_out is not None and plan:
            skeleton = reducer_request(config, task, [(i, t, "") for i, t in
                                                      enumerate(plan, 1)])
            prompt = expected_prompt_tokens(skeleton) + round(worker_out * len(plan))
            completion = round(learned_reducer.mean(skeleton.max_tokens))
            # Past the reducer's input limit the bound counts its tree of parts; the
            # expected figure spreads the same prompt over that many calls.
            expected_tokens = prompt + completion * reducer.calls
            expected_usd = _cost(prices, model, prompt, completion * reducer.calls)
        elif not plan:
            expected_tokens, expected_usd = 0, Decimal(0)
        rows.append(RoleForecast("reducer", model, reducer.calls, expected_tokens,
                                 expected_usd, reducer.tokens, reducer.cost_usd,
                                 measured=False))
    # Rows only a tree's bound has (the child swarms' merges): no expected figure.
    rows.extend(RoleForecast(r.role, r.model, r.calls, None, None, r.tokens, r.cost_usd,
                             measured=False)
                for r in bound.roles if r.role not in ("planner", "worker", "reducer"))
    return Forecast(task, plan, tuple(rows), _basis(config, history, learned_worker,
                                                     learned_reducer))


def _basis(config: SwarmConfig, history: CompletionHistory, worker: Learned | None,
           reducer: Learned | None) -> str:
    """The forecast's basis in words."""
    needed = [("worker", config.worker.model, worker)]
    if config.reduce:
        needed.append(("reducer", config.reducer.model, reducer))
    missing = [(role, model) for role, model, learned in needed if learned is None]
    if config.depth > 1:
        return "a tree (depth > 1) splits as its workers decide: the bound only"
    if not config.history:
        return "no history kept (history off): the bound only"
    if missing:
        models = sorted({model for _, model in missing})
        roles = " and ".join(f"the {role}s" if role == "worker" else f"the {role}"
                             for role, _ in missing)
        return (f"no earlier run of {', '.join(models)} as {roles} in {history.where}: "
                "the bound only")
    runs: dict[str, int] = {}
    for _, model, learned in needed:
        if learned is not None:
            runs[model] = min(runs.get(model, learned.runs), learned.runs)
    if len(runs) == 1:
        (model, count), = runs.items()
        return f"from {counted(count, 'earlier run')} of {model} in {history.where}"
    parts = [f"{counted(count, 'earlier run')} of {model}" for model, count in runs.items()]
    return f"from {' and '.join(parts)} in {history.where}"
