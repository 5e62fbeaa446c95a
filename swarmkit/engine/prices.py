"""The model table: USD per million tokens and context windows, from package data plus
user price overrides.

Lookup strips a vendor prefix (``moonshot/kimi-k2.5`` finds ``kimi-k2.5``). A model not
in the table has unknown cost (``None``), never $0, and an unknown context (``None``).
The Batch API's price is a fraction of the model's (``batch`` per vendor in prices.json:
0.5 for OpenAI's); a model whose vendor has no known fraction has an unknown batch
price, like any unknown price.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from functools import cache
from importlib import resources
from typing import TypeVar

from ..errors import ConfigError
from ..record.usage import Usage

__all__ = ["ModelPrice", "PriceTable"]

_MILLION = Decimal(1_000_000)
_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class ModelPrice:
    """USD per 1M tokens. ``cached_input`` None bills cached tokens at the input price."""

    input: Decimal
    output: Decimal
    cached_input: Decimal | None = None
    # What the Batch API bills, as a fraction of these prices; None: not known.
    batch: Decimal | None = None

    def batched(self) -> ModelPrice | None:
        """The price of the same call through the Batch API, None when not known."""
        if self.batch is None:
            return None
        cached = None if self.cached_input is None else self.cached_input * self.batch
        return ModelPrice(self.input * self.batch, self.output * self.batch, cached)

    def cost(self, usage: Usage) -> Decimal | None:
        if usage.prompt_tokens is None or usage.completion_tokens is None:
            return None
        cached = min(usage.cached_tokens or 0, usage.prompt_tokens)
        cached_price = self.input if self.cached_input is None else self.cached_input
        total = (
            (usage.prompt_tokens - cached) * self.input
            + cached * cached_price
            + usage.completion_tokens * self.output
        )
        return total / _MILLION

    def bound(self, prompt_tokens: int, completion_tokens: int) -> Decimal:
        """Worst-case cost: every prompt token uncached."""
        return (prompt_tokens * self.input + completion_tokens * self.output) / _MILLION


def _decimal(value: object, what: str) -> Decimal:
    try:
        amount = Decimal(str(value).strip().lstrip("$"))
    except InvalidOperation:
        raise ConfigError(f"{what} must be a USD amount per 1M tokens, got {value!r}") from None
    if not amount.is_finite() or amount < 0:
        raise ConfigError(f"{what} must be a non-negative USD amount, got {value!r}")
    return amount


@cache
def _rows() -> Mapping[str, Mapping[str, object]]:
    text = resources.files("swarmkit").joinpath("engine/prices.json").read_text(encoding="utf-8")
    return {model.lower(): row for model, row in json.loads(text)["models"].items()}


@cache
def _batch_shares() -> Mapping[str, Decimal]:
    """What the Batch API bills per vendor, as a fraction of the model's prices."""
    text = resources.files("swarmkit").joinpath("engine/prices.json").read_text(encoding="utf-8")
    return {vendor: Decimal(share) for vendor, share in json.loads(text).get("batch", {}).items()}


@cache
def _builtin() -> Mapping[str, ModelPrice]:
    table: dict[str, ModelPrice] = {}
    for model, row in _rows().items():
        cached = row.get("cached_input")
        table[model] = ModelPrice(
            input=Decimal(str(row["input"])),
            output=Decimal(str(row["output"])),
            cached_input=None if cached is None else Decimal(str(cached)),
            batch=_batch_shares().get(str(row.get("vendor", ""))),
        )
    return table


@cache
def _contexts() -> Mapping[str, int]:
    """Each model's published context window in tokens, where the table states one."""
    return {model: int(str(row["context"])) for model, row in _rows().items()
            if row.get("context") is not None}


def _find(table: Mapping[str, _T], model: str) -> _T | None:
    key = model.lower()
    if key in table:
        return table[key]
    # A GGUF swarmkit serves itself ("local:PATH", "local:hf:...") is priced and sized as
    # the embedded model: $0, and the same slots of the same context.
    if key.startswith("local:"):
        return table.get("local")
    # Gateways prefix vendors (openrouter's "deepseek/deepseek-v3.2"); try the tail.
    if "/" in key:
        return table.get(key.rsplit("/", 1)[1])
    return None


class PriceTable:
    """Built-in prices plus overrides; immutable, so runs can share one safely."""

    def __init__(self, overrides: Mapping[str, ModelPrice] | None = None) -> None:
        builtin = _builtin()
        self._prices: dict[str, ModelPrice] = dict(builtin)
        for model, price in (overrides or {}).items():
            known = builtin.get(model.lower())
            if price.batch is None and known is not None and known.batch is not None:
                # A new price for a known model keeps its vendor's batch discount.
                price = ModelPrice(price.input, price.output, price.cached_input, known.batch)
            self._prices[model.lower()] = price

    @classmethod
    def with_overrides(cls, rows: Iterable[tuple[str, ...]]) -> PriceTable:
        """Rows of ``(model, input, output[, cached_input])`` in USD per 1M tokens."""
        overrides: dict[str, ModelPrice] = {}
        for row in rows:
            if len(row) not in (3, 4):
                raise ConfigError(f"a price needs MODEL INPUT OUTPUT [CACHED], got {row!r}")
            model = row[0]
            cached = _decimal(row[3], f"cached price of {model}") if len(row) == 4 else None
            overrides[model] = ModelPrice(
                input=_decimal(row[1], f"input price of {model}"),
                output=_decimal(row[2], f"output price of {model}"),
                cached_input=cached,
            )
        return cls(overrides)

    def lookup(self, model: str) -> ModelPrice | None:
        return _find(self._prices, model)

    def context(self, model: str) -> int | None:
        """``model``'s context window in tokens (input and output), None when unknown."""
        return _find(_contexts(), model)

    def cost(self, model: str, usage: Usage) -> Decimal | None:
        price = self.lookup(model)
        return None if price is None else price.cost(usage)

    def batch_lookup(self, model: str) -> ModelPrice | None:
        """``model``'s price through the Batch API, None when not known."""
        price = self.lookup(model)
        return None if price is None else price.batched()

    def batch_cost(self, model: str, usage: Usage) -> Decimal | None:
        price = self.batch_lookup(model)
        return None if price is None else price.cost(usage)

    def require_batch(self, model: str) -> ModelPrice:
        price = self.batch_lookup(model)
        if price is None:
            raise ConfigError(
                f"no Batch API price known for model {model!r}, so a budget cannot be "
                "enforced in batch mode; drop the budget, or use a model whose vendor's "
                "batch discount is in the price table (swarmkit/engine/prices.json)"
            )
        return price

    def require(self, model: str) -> ModelPrice:
        price = self.lookup(model)
        if price is None:
            raise ConfigError(
                f"no price known for model {model!r}, so a budget cannot be enforced; add one "
                f"with %swarm prices {model} IN OUT or prices=[({model!r}, IN, OUT)] "
                "(USD per 1M tokens)"
            )
        return price

    def rows(self) -> list[tuple[str, ModelPrice]]:
        return sorted(self._prices.items())
