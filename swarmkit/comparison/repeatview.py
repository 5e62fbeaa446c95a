"""The repeats block of a comparison's static view: what each variant's runs cost and
how long they took, over its repeats (``repeat=K``).

The figures at the head of the view are each variant's first repeat (its answer and
plan are shown, so its figures must match them); this block adds, per variant, the
cost and the wall time of one run as mean ± spread (the sample standard deviation, as
for the scores) and the cost of all its runs. A cost that is unknown in any run (a
model with no price) leaves that variant's cost unknown. Without repeats there is no
block, so an unrepeated view reads as it always did.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING

from ..display.rendered import Rendered
from ..display.tablefmt import format_cost, html_table, render_table
from ..display.theme import STYLE
from .scores import sample_spread

if TYPE_CHECKING:
    from ..record.runrecord import RunRecord

__all__ = ["REPEATS_NOTE", "RepeatSpend", "RepeatsView", "repeat_spend"]

REPEATS_NOTE = ("the figures above are each variant's first repeat; here, one run's "
                "cost and wall time as mean ± spread over all its repeats")
_HEADERS = ("variant", "repeats", "cost per run", "time per run", "total cost")
# Specific enough to outrank the theme's nowrap cells, whose STYLE a later block repeats.
_CSS = ("<style>.swarmkit table.sk-table.sk-repeats td,.swarmkit table.sk-table.sk-repeats th"
        "{white-space:normal}</style>")


@dataclass(frozen=True, slots=True)
class RepeatSpend:
    """One variant's runs: their count, cost per run and wall time per run (mean and
    spread; the costs None when any is unknown) and their total cost."""

    variant: str
    repeats: int
    cost_mean: Decimal | None
    cost_spread: Decimal | None
    seconds_mean: float
    seconds_spread: float
    total: Decimal | None


def repeat_spend(labels: Sequence[str], repeats: Sequence[Sequence[RunRecord]]
                 ) -> list[RepeatSpend]:
    """One row per variant (``labels``, one per group of ``repeats``)."""
    rows = []
    for label, group in zip(labels, repeats, strict=True):
        seconds = [run.duration for run in group]
        seconds_mean = math.fsum(seconds) / len(seconds)
        costs = [run.cost_usd for run in group]
        if any(cost is None for cost in costs):
            cost_mean = cost_spread = total = None
        else:
            known = [cost for cost in costs if cost is not None]
            total = sum(known, Decimal(0))
            cost_mean = total / len(known)
            cost_spread = Decimal(str(sample_spread([float(c) for c in known],
                                                    float(cost_mean))))
        rows.append(RepeatSpend(label, len(group), cost_mean, cost_spread, seconds_mean,
                                sample_spread(seconds, seconds_mean), total))
    return rows


def _cells(row: RepeatSpend) -> tuple[str, ...]:
    # One "$" per cell: JupyterLab typesets the text between two of them as math.
    spread = "" if row.cost_spread is None else f"{row.cost_spread:.6f}".rstrip("0")
    cost = ("unknown" if row.cost_mean is None else
            f"{format_cost(row.cost_mean)} ± {spread.rstrip('.') or '0'}")
    return (row.variant, str(row.repeats), cost,
            f"{row.seconds_mean:.2f}s ± {row.seconds_spread:.2f}s", format_cost(row.total))


class RepeatsView(Rendered):
    """The repeats block, from ``repeat_spend``'s rows."""

    def __init__(self, rows: Sequence[RepeatSpend]) -> None:
        self.rows = tuple(rows)

    def text(self) -> str:
        table = render_table([_cells(row) for row in self.rows], _HEADERS, "simple")
        return "\n".join(["repeats", table, REPEATS_NOTE])

    def html(self) -> str:
        """Narrow: the repeats go to the heading when every variant has as many, and a
        cell wraps at its "±" rather than push the table past a notebook column."""
        counts = {row.repeats for row in self.rows}
        same = len(counts) == 1
        keep = [i for i in range(len(_HEADERS)) if i != 1 or not same]
        rows = [tuple(_cells(row)[i] for i in keep) for row in self.rows]
        table = html_table(rows, [_HEADERS[i] for i in keep], css="sk-repeats")
        each = f" · {counts.pop()} per variant" if same else ""
        return (f'<div class="swarmkit">{STYLE}{_CSS}<h4>repeats'
                f'<span class="sk-note">{html.escape(each)}</span></h4>{table}'
                f'<p class="sk-note">{html.escape(REPEATS_NOTE)}</p></div>')
