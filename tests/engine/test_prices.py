"""Price table: package data, vendor prefixes, overrides; unknown is None, never $0."""

from __future__ import annotations

from decimal import Decimal

import pytest

from swarmkit.engine.prices import ModelPrice, PriceTable
from swarmkit.errors import ConfigError
from swarmkit.record.usage import Usage

REQUIRED = (
    "gpt-4.1", "gpt-4.1-mini", "gpt-4o-mini", "claude-sonnet-4.5", "gemini-2.5-flash",
    "deepseek-v3.2", "kimi-k2.5", "local",
)


def test_table_covers_the_required_models() -> None:
    table = PriceTable()
    for model in REQUIRED:
        assert table.lookup(model) is not None, model


def test_vendor_prefixed_ids_find_the_base_price() -> None:
    table = PriceTable()
    assert table.lookup("moonshot/kimi-k2.5") == table.lookup("kimi-k2.5")
    assert table.lookup("deepseek/deepseek-v3.2") == table.lookup("deepseek-v3.2")
    assert table.lookup("OpenAI/GPT-4.1") == table.lookup("gpt-4.1")


def test_cost_uses_cached_input_price_for_cached_tokens() -> None:
    usage = Usage(prompt_tokens=1_000_000, completion_tokens=1_000_000, cached_tokens=500_000)
    # gpt-4.1: 0.5M uncached x 2.00 + 0.5M cached x 0.50 + 1M out x 8.00
    assert PriceTable().cost("gpt-4.1", usage) == Decimal("1.00") + Decimal("0.25") + 8


def test_unknown_model_or_unknown_usage_is_none_not_zero() -> None:
    table = PriceTable()
    assert table.cost("my-finetune", Usage(10, 10)) is None
    assert table.cost("gpt-4.1", Usage(None, None)) is None
    assert table.cost("local", Usage(10, 10)) == 0


def test_overrides_add_and_replace_prices() -> None:
    table = PriceTable.with_overrides([("my-finetune", "1", "2"), ("gpt-4.1", "0", "0", "0")])
    assert table.cost("my-finetune", Usage(1_000_000, 1_000_000)) == Decimal(3)
    assert table.cost("gpt-4.1", Usage(5, 5)) == 0


@pytest.mark.parametrize("row", [("m", "x", "1"), ("m", "-1", "1"), ("m", "1")])
def test_bad_override_rows_are_config_errors(row: tuple[str, ...]) -> None:
    with pytest.raises(ConfigError):
        PriceTable.with_overrides([row])


def test_require_names_the_model_and_how_to_add_a_price() -> None:
    with pytest.raises(ConfigError, match=r"my-finetune.*%swarm prices"):
        PriceTable().require("my-finetune")


def test_batch_prices_are_the_vendors_discount_and_unknown_elsewhere() -> None:
    table = PriceTable()
    live, batch = table.lookup("openai/gpt-4.1-mini"), table.batch_lookup("openai/gpt-4.1-mini")
    assert live is not None and batch is not None
    assert (batch.input, batch.output, batch.cached_input) == (
        live.input / 2, live.output / 2, Decimal("0.05"))
    usage = Usage(prompt_tokens=1000, completion_tokens=500)
    assert table.batch_cost("gpt-4.1-mini", usage) == table.cost("gpt-4.1-mini", usage) / 2
    # No known discount (another vendor, or a model not in the table): unknown, not $0.
    assert table.batch_lookup("claude-sonnet-4.5") is None
    assert table.batch_cost("mystery-model", usage) is None
    with pytest.raises(ConfigError, match="no Batch API price known"):
        table.require_batch("kimi-k2.5")
    # A new price for an OpenAI model keeps OpenAI's batch discount.
    overridden = PriceTable.with_overrides([("gpt-4.1-mini", "1", "2")])
    assert overridden.batch_lookup("gpt-4.1-mini") == ModelPrice(Decimal("0.5"), Decimal("1"))
