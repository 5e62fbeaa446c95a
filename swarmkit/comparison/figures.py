"""A comparison's figures, one row per variant: status, answer, tokens, cost, wall time,
the latency of its live calls, workers by status, plan, and each score's mean.

``comparison_rows`` is the comparison as plain rows (one per variant), the one source of
``ComparisonTable`` (``Comparison.table()``), of ``Comparison.to_dataframe()`` and of the
figures the side-by-side view (``comparison.view``) heads each variant with.
Each variant's figures include its wall time (the run's duration; in a replay, the
recorded one) and the latency of its model calls, p50 and p95 by nearest rank over the
calls it made live that answered (:func:`live_latencies`). Calls served from the cache or
from another variant's identical call took no model time of their own, so they are left
out; a variant with no live call shows ``—``. A replay counts the calls its recording
made live, with their recorded latencies, so it shows the same figures.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..credentials.scrub import one_line
from ..display.rendered import Rendered
from ..display.tablefmt import format_cost, format_tokens, html_table, render_table
from ..display.theme import STYLE, row_class
from ..errors import ConfigError

if TYPE_CHECKING:
    from ..record.runrecord import RunRecord
    from .scores import ScoreSummary

__all__ = ["FIGURE_HEADERS", "LATENCY_NOTE", "ComparisonTable", "check_labels",
           "comparison_rows", "figure_cells", "live_latencies", "percentile",
           "workers_by_status"]

_EXCERPT = 60
LATENCY_NOTE = ("p50 / p95: latency of the variant's model calls made live; calls served "
                "from the cache or shared with another variant are not counted (— when none)")


def check_labels(labels: Sequence[str], runs: Sequence[RunRecord]) -> None:
    if len(labels) != len(runs):
        raise ConfigError(f"a comparison needs one label per run: got {len(labels)} "
                          f"labels for {len(runs)} runs")


def _count(run: RunRecord, status: str) -> int:
    return sum(1 for worker in run.workers if worker.status == status)


def live_latencies(run: RunRecord) -> list[float]:
    """The latencies of ``run``'s model calls that were made live and answered, sorted.

    A replayed call (``replay``) was live when recorded and keeps its recorded latency; a
    call served from the cache, or from another variant's call, is ``cache``: not counted.
    A failed call is not counted either: its time is retries and backoff, not an answer;
    nor is a judge's call, which grades the variant's answer rather than making it.
    """
    return sorted(c.latency for c in run.calls
                  if c.source != "cache" and c.error is None and c.role != "judge")


def percentile(values: Sequence[float], p: float) -> float | None:
    """The ``p``-th percentile of sorted ``values`` by nearest rank; None when empty."""
    if not values:
        return None
    rank = max(1, math.ceil(p / 100 * len(values)))
    return values[rank - 1]


def comparison_rows(labels: Sequence[str], runs: Sequence[RunRecord]) -> list[dict[str, object]]:
    """One row per variant: its label, status, answer, tokens, cost (a ``Decimal``, None
    when unknown), wall time (``duration_s``), the p50 / p95 latency of its live calls
    (None without one) and how many there were, workers by status and plan."""
    check_labels(labels, runs)
    rows: list[dict[str, object]] = []
    for label, run in zip(labels, runs, strict=True):
        usage = run.usage
        latencies = live_latencies(run)
        rows.append({
            "variant": label,
            "status": run.status,
            "answer": run.answer,
            "prompt_tokens": usage.prompt_tokens,
            "completion_tokens": usage.completion_tokens,
            "cost_usd": usage.cost,
            "duration_s": run.duration,
            "latency_p50_s": percentile(latencies, 50),
            "latency_p95_s": percentile(latencies, 95),
            "live_calls": len(latencies),
            "workers": len(run.workers),
            "workers_ok": _count(run, "completed"),
            "workers_failed": _count(run, "failed"),
            "workers_skipped": _count(run, "skipped"),
            "workers_cancelled": _count(run, "cancelled"),
            "plan": list(run.plan),
        })
    return rows


def workers_by_status(row: dict[str, Any]) -> str:
    """``3 ok · 1 failed``: a row's workers by status, statuses with none left out."""
    if not row["workers"]:
        return "none"
    parts = [f"{row['workers_ok']} ok"]
    for status in ("failed", "skipped", "cancelled"):
        if row[f"workers_{status}"]:
            parts.append(f"{row[f'workers_{status}']} {status}")
    return " · ".join(parts)


def _seconds(value: object) -> str:
    return "—" if value is None else f"{value:.2f}s"


def figure_cells(row: dict[str, Any]) -> tuple[str, ...]:
    """Status, workers, tokens in, tokens out, cost, wall time, latency p50 and p95: as
    every table shows them."""
    return (str(row["status"]), workers_by_status(row), format_tokens(row["prompt_tokens"]),
            format_tokens(row["completion_tokens"]), format_cost(row["cost_usd"]),
            _seconds(row["duration_s"]), _seconds(row["latency_p50_s"]),
            _seconds(row["latency_p95_s"]))


FIGURE_HEADERS = ("status", "workers", "tokens in", "tokens out", "cost", "wall time",
                   "p50", "p95")


class ComparisonTable(Rendered):
    """One row per variant: its figures and an excerpt of its answer. ``p50`` / ``p95``
    are the latencies of its live calls (``LATENCY_NOTE``)."""

    HEADERS = ("variant", *FIGURE_HEADERS, "answer")

    def __init__(self, labels: Sequence[str], runs: Sequence[RunRecord],
                 scores: Sequence[ScoreSummary] = ()) -> None:
        self.rows = comparison_rows(labels, runs)
        # One column per score name, before the answer: its mean over the repeats.
        self.score_names = tuple(dict.fromkeys(s.name for s in scores))
        self.means = {(s.variant, s.name): s.mean for s in scores}

    @property
    def headers(self) -> tuple[str, ...]:
        return (*self.HEADERS[:-1], *(f"{name} mean" for name in self.score_names),
                self.HEADERS[-1])

    def table_rows(self) -> list[tuple[str, ...]]:
        return [(str(row["variant"]), *figure_cells(row),
                 *(self._mean(str(row["variant"]), name) for name in self.score_names),
                 one_line(row["answer"], _EXCERPT) if row["answer"] is not None else "")
                for row in self.rows]

    def _mean(self, variant: str, name: str) -> str:
        mean = self.means.get((variant, name))
        return "—" if mean is None else f"{mean:.2f}"

    def text(self) -> str:
        return render_table(self.table_rows(), self.headers, "simple") + "\n"

    def html(self) -> str:
        rows = self.table_rows()
        classes = [row_class(row[1]) for row in rows]
        table = html_table(rows, self.headers, classes, css="sk-compare")
        return f'<div class="swarmkit swarmkit-compare">{STYLE}{table}</div>'
