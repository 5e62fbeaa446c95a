"""``Usage``: the tokens, requests and cost of one call or of a sum of calls.

``None`` means unknown: a server that did not report a count, a model with no price. A
sum with an unknown part is unknown, so an unknown total is never shown as a number
(and an unpriced call never as $0). ``+`` is the only place that rule is written.

The JSON form of a Usage holds the token counts and requests only: where a cost is
stored (a record's ``cost_usd``) it is written by its owner, so files keep their shape.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, TypeVar

from .fileshapes import Cost, Count

__all__ = ["Usage"]

_N = TypeVar("_N", int, Decimal)


def _plus(a: _N | None, b: _N | None) -> _N | None:
    return None if a is None or b is None else a + b


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts, requests and cost. ``Usage()`` is zero, the start of any sum."""

    prompt_tokens: Count | None = 0
    completion_tokens: Count | None = 0
    cached_tokens: Count | None = 0
    reasoning_tokens: Count | None = 0
    requests: Count = 0
    # USD; None: no price known for some part of it. Left out of the repr, which prints
    # as it always did (tutorials show it); a record prints its cost as cost_usd.
    cost: Cost = field(default=Decimal(0), repr=False)

    @property
    def total_tokens(self) -> int | None:
        return _plus(self.prompt_tokens, self.completion_tokens)

    def __add__(self, other: Usage) -> Usage:
        if not isinstance(other, Usage):
            return NotImplemented
        return Usage(
            prompt_tokens=_plus(self.prompt_tokens, other.prompt_tokens),
            completion_tokens=_plus(self.completion_tokens, other.completion_tokens),
            cached_tokens=_plus(self.cached_tokens, other.cached_tokens),
            reasoning_tokens=_plus(self.reasoning_tokens, other.reasoning_tokens),
            requests=self.requests + other.requests,
            cost=_plus(self.cost, other.cost),
        )

    @classmethod
    def total(cls, usages: Iterable[Usage]) -> Usage:
        """``sum(usages, Usage())``, field by field in the same order, without building a
        Usage per term: a run's totals are sums over every one of its calls."""
        prompt: int | None = 0
        completion: int | None = 0
        cached: int | None = 0
        reasoning: int | None = 0
        requests = 0
        cost: Decimal | None = Decimal(0)
        terms = 0
        only: Usage | None = None
        for usage in usages:
            terms += 1
            only = usage
            if prompt is not None:
                prompt = None if usage.prompt_tokens is None else prompt + usage.prompt_tokens
            if completion is not None:
                part = usage.completion_tokens
                completion = None if part is None else completion + part
            if cached is not None:
                cached = None if usage.cached_tokens is None else cached + usage.cached_tokens
            if reasoning is not None:
                part = usage.reasoning_tokens
                reasoning = None if part is None else reasoning + part
            requests += usage.requests
            if cost is not None:
                cost = None if usage.cost is None else cost + usage.cost
        # A sum of one is that usage (a worker of one call): the same value, kept once;
        # not when 0 + its cost is written otherwise (an exponent above 0: 1E+1 is 10).
        if terms == 1 and only is not None and type(only) is cls and (cost is None or (
                only.cost is not None and cost.as_tuple() == only.cost.as_tuple())):
            return only
        return cls(prompt, completion, cached, reasoning, requests, cost)

    def to_dict(self) -> dict[str, int | None]:
        """The stored form: token counts and requests (a cost is stored by its owner)."""
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cached_tokens": self.cached_tokens,
            "reasoning_tokens": self.reasoning_tokens,
            "requests": self.requests,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Usage:
        return cls(
            prompt_tokens=data.get("prompt_tokens"),
            completion_tokens=data.get("completion_tokens"),
            cached_tokens=data.get("cached_tokens"),
            reasoning_tokens=data.get("reasoning_tokens"),
            requests=int(data.get("requests", 1)),
        )
