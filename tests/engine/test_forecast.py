"""The forecast's arithmetic: what the history teaches (cut replies included), the basis
in words, and the expected figure next to the bound, with no server."""

from __future__ import annotations

from decimal import Decimal

from swarmkit.config.swarmconfig import SwarmConfig
from swarmkit.engine.forecast import (
    CompletionHistory,
    Learned,
    expected_prompt_tokens,
    forecast,
)
from swarmkit.engine.prices import PriceTable
from swarmkit.record.modelcall import ChatRequest

MODEL = "gpt-4.1-mini"
CONFIG = SwarmConfig.from_options(SwarmConfig(), model=MODEL)


def test_the_mean_cuts_each_reply_to_this_runs_cap() -> None:
    learned = Learned((100, 300, 500), runs=2)
    assert learned.mean(None) == 300
    assert learned.mean(200) == (100 + 200 + 200) / 3


def test_a_reply_cut_below_this_runs_cap_counts_as_the_replies_that_went_past_it() -> None:
    # Two replies asked under 1,000 (300 and 700); two cut at 128 under a cap of 128.
    learned = Learned((300, 700, 128, 128), runs=2, caps=(1000, 1000, 128, 128))
    assert learned.mean(1000) == (300 + 700 + 500 + 500) / 4
    assert learned.mean(128) == 128  # under the same cap they are what they were
    alone = Learned((128,), runs=1, caps=(128,))
    assert alone.mean(1000) == 128  # nothing known past the cut: the cut itself


def test_no_history_means_no_expected_figure_and_says_so() -> None:
    result = forecast(CONFIG, PriceTable(), [], "Task", ("a", "b"))
    assert result.expected_usd is None and result.bound_usd is not None
    assert result.basis == (f"no earlier run of {MODEL} as the workers and the reducer in "
                            "this history: the bound only")
    assert result.figure() == (result.bound_usd, "at most")
    off = SwarmConfig.from_options(CONFIG, history=False)
    assert forecast(off, PriceTable(), [], "Task", ("a",)).basis == (
        "no history kept (history off): the bound only")


def test_the_expected_figure_is_built_from_the_history_per_role() -> None:
    history = CompletionHistory({("worker", MODEL): Learned((200,) * 6, runs=3),
                                 ("reducer", MODEL): Learned((400,) * 3, runs=3)})
    result = forecast(CONFIG, PriceTable(), [], "Task", ("a", "b", "c"), history)
    assert result.basis == f"from 3 earlier runs of {MODEL} in this history"
    worker = result.roles[1]
    assert worker.expected_tokens is not None and worker.bound_tokens is not None
    assert worker.expected_tokens < worker.bound_tokens
    assert result.expected_usd is not None and result.bound_usd is not None
    assert Decimal(0) < result.expected_usd < result.bound_usd
    assert result.figure() == (result.expected_usd, "expected")
    only_workers = CompletionHistory({("worker", MODEL): Learned((200,), runs=1)})
    partial = forecast(CONFIG, PriceTable(), [], "Task", ("a",), only_workers)
    assert partial.expected_usd is None and "as the reducer" in partial.basis


def test_a_prompt_is_expected_at_four_characters_a_token() -> None:
    request = ChatRequest(model=MODEL, messages=({"role": "user", "content": "x" * 400},))
    assert expected_prompt_tokens(request) == 100 + 4 + 3
    assert expected_prompt_tokens(request) < request.prompt_token_bound()
