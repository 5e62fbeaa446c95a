"""The repeats block of a comparison's view: each variant's cost and wall time per run
over its repeats, from real repeated comparisons against FakeServer."""

from __future__ import annotations

import re
import statistics
from decimal import Decimal
from functools import partial

import pytest

import swarmkit
from swarmkit.comparison.repeatview import REPEATS_NOTE, repeat_spend
from swarmkit.display.tablefmt import format_cost
from swarmkit.testing import FakeServer
from tests.support.fakekey import QUICK_RETRIES, run_options

pytestmark = pytest.mark.usefixtures("fake_key")

options = partial(run_options, **QUICK_RETRIES, history=False, workers=2)
VARIANTS = [{"reducer_prompt": "One line."}, {"reducer_prompt": "A table."}]


def test_a_repeated_comparison_shows_each_variants_cost_and_time_over_its_repeats() -> None:
    with FakeServer(plan_tasks=2) as server:
        comparison = swarmkit.compare_sync("Summarise", variants=VARIANTS, repeat=3,
                                           **options(server))
    rows = repeat_spend(comparison.labels, comparison.repeats)
    for row, group in zip(rows, comparison.repeats, strict=True):
        costs = [run.cost_usd for run in group]
        assert all(cost is not None for cost in costs)
        assert row.repeats == 3 and row.total == sum(costs, Decimal(0))  # type: ignore[arg-type]
        assert row.cost_mean == row.total / 3  # type: ignore[operator]
        assert row.seconds_mean == pytest.approx(statistics.mean(r.duration for r in group))
        assert row.seconds_spread == pytest.approx(statistics.stdev(r.duration for r in group))
    text = comparison.view().text()
    block = text[text.index("\nrepeats\n"):text.index(REPEATS_NOTE)]
    line = next(ln for ln in block.splitlines() if ln.startswith(comparison.labels[0]))
    assert line.split()[-1] == format_cost(rows[0].total) and " 3 " in line
    page = comparison.view().html()
    assert "<h4>repeats" in page and "3 per variant" in page
    # JupyterLab typesets the text between two "$" as math: never two in one cell.
    assert all(cell.count("$") <= 1 for cell in re.findall(r"<td[^>]*>(.*?)</td>", page))


def test_without_repeats_there_is_no_repeats_block() -> None:
    with FakeServer(plan_tasks=2) as server:
        comparison = swarmkit.compare_sync("Summarise", variants=VARIANTS, **options(server))
    assert "\nrepeats\n" not in comparison.view().text()
    assert "<h4>repeats" not in comparison.view().html()


def test_an_unknown_cost_in_any_repeat_leaves_the_variants_cost_unknown() -> None:
    with FakeServer(plan_tasks=2) as server:
        comparison = swarmkit.compare_sync("Summarise", variants=VARIANTS, repeat=2,
                                           **{**options(server), "model": "no-such-price"})
    rows = repeat_spend(comparison.labels, comparison.repeats)
    assert all(row.cost_mean is None and row.total is None for row in rows)
    assert "unknown" in comparison.view().text().split("\nrepeats\n")[1].splitlines()[2]
