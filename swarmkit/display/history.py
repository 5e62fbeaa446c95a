"""Views over the history: the recent-runs table and a side-by-side diff of two runs.

Both render as text (terminals, nbval's text/plain) and HTML, from plain data only.
"""

from __future__ import annotations

import html
from abc import abstractmethod
from collections.abc import Sequence
from typing import Any

from tabulate import tabulate

try:  # wraps by display width (wide characters take two columns)
    from wcwidth import wrap
except ImportError:  # pragma: no cover - an old wcwidth, or none: wrap by characters
    from textwrap import wrap

from ..config.wording import counted
from ..credentials.scrub import one_line
from ..record.runrecord import RunRecord
from ..store.history import RunSummary
from .rendered import Rendered
from .tablefmt import format_cost, format_tokens
from .treelayout import flat_tree, tree_key

__all__ = ["RunDiff", "RunListing"]

_TASK_WIDTH = 48
_ANSWER_WIDTH = 50


def _wrapped(value: Any, width: int) -> str:
    """A cell's text wrapped to ``width`` display columns, blank lines dropped.

    Done here, not with tabulate's ``maxcolwidths``: that path parses cells as numbers
    even with ``disable_numparse`` (tabulate 0.10 crashes on "1,127" and prints "False"
    as "True").
    """
    text = "" if value is None else str(value)
    return "\n".join("\n".join(wrap(line, width)) for line in text.splitlines() if line.strip())


class _Sections(Rendered):
    """A title and titled tables: ``text()``/``html()`` come from ``sections()``."""

    @abstractmethod
    def sections(self) -> list[tuple[str, Sequence[str], list[tuple[Any, ...]]]]:
        """Each table: its heading ("" for none), its headers and its rows."""

    @abstractmethod
    def title(self) -> str:
        """The line above the tables."""

    def text(self) -> str:
        parts = [self.title(), ""]
        for heading, headers, rows in self.sections():
            if heading:
                parts.append(heading)
            wrapped = [tuple(_wrapped(cell, _ANSWER_WIDTH) for cell in row) for row in rows]
            parts += [tabulate(wrapped, headers=list(headers), disable_numparse=True), ""]
        return "\n".join(parts).rstrip() + "\n"

    def html(self) -> str:
        parts = [f'<div class="swarmkit-history"><p><b>{html.escape(self.title())}</b></p>']
        for heading, headers, rows in self.sections():
            if heading:
                parts.append(f"<p><b>{html.escape(heading)}</b></p>")
            parts.append(tabulate(rows, headers=list(headers), tablefmt="html",
                                  disable_numparse=True))
        parts.append("</div>")
        return "\n".join(parts)


class RunListing(_Sections):
    """``%swarm history``: the most recent runs, newest first."""

    HEADERS = ("run", "started", "status", "workers", "calls", "tokens in", "tokens out",
               "cost", "duration", "task")

    def __init__(self, runs: Sequence[RunSummary], source: str = "") -> None:
        self.runs = list(runs)
        self.source = source

    def title(self) -> str:
        where = f" in {self.source}" if self.source else ""
        if not self.runs:
            return f"no runs yet{where}"
        return f"{counted(len(self.runs), 'recent run')}{where}"

    def sections(self) -> list[tuple[str, Sequence[str], list[tuple[Any, ...]]]]:
        if not self.runs:
            return []
        rows = [
            (r.run_id, r.started_at.replace("T", " ").removesuffix("+00:00"), r.status,
             r.workers, r.calls, format_tokens(r.prompt_tokens),
             format_tokens(r.completion_tokens), format_cost(r.cost_usd),
             f"{r.duration:.2f}s", one_line(r.task, _TASK_WIDTH))
            for r in self.runs
        ]
        return [("", self.HEADERS, rows)]


class RunDiff(_Sections):
    """``%swarm diff A B``: plan, per-worker spend and outputs, and answers side by side."""

    def __init__(self, a: RunRecord, b: RunRecord) -> None:
        self.a, self.b = a, b

    def title(self) -> str:
        return f"run {self.a.run_id} (A) vs run {self.b.run_id} (B)"

    def sections(self) -> list[tuple[str, Sequence[str], list[tuple[Any, ...]]]]:
        edits = [(f"plan edits in {label} ({run.review.line()})",
                  ("#", "proposed", "approved", ""),
                  [(i, one_line(p, _TASK_WIDTH), one_line(a, _TASK_WIDTH), what)
                   for i, (p, a, what) in enumerate(run.review.edits(), start=1)])
                 for label, run in (("A", self.a), ("B", self.b))
                 if run.review is not None and run.review.changed]
        return [
            ("", ("", "A", "B"), self._summary_rows()),
            ("plan", ("#", "A", "B", ""), self._plan_rows()),
            *edits,
            ("workers", ("#", "A status", "A cost", "A tokens", "B status", "B cost",
                         "B tokens", "output"), self._worker_rows()),
            ("answer", ("A", "B"), [(self.a.answer or "", self.b.answer or "")]),
        ]

    def _summary_rows(self) -> list[tuple[Any, ...]]:
        def facts(run: RunRecord) -> list[str]:
            cached = sum(1 for c in run.calls if c.source == "cache")
            usage = run.usage
            return [
                run.status, run.started_at, one_line(run.task, _TASK_WIDTH),
                " / ".join(run.models.values()),
                f"{len(run.calls)} ({cached} cached)" if cached else str(len(run.calls)),
                f"{format_tokens(usage.prompt_tokens)} / "
                f"{format_tokens(usage.completion_tokens)}",
                format_cost(run.cost_usd), f"{run.duration:.2f}s",
            ]

        labels = ["status", "started", "task", "models (planner / worker / reducer)",
                  "calls", "tokens in / out", "cost", "duration"]
        return list(zip(labels, facts(self.a), facts(self.b), strict=True))

    def _plan_rows(self) -> list[tuple[Any, ...]]:
        size = max(len(self.a.plan), len(self.b.plan))
        rows = []
        for i in range(size):
            left = self.a.plan[i] if i < len(self.a.plan) else ""
            right = self.b.plan[i] if i < len(self.b.plan) else ""
            rows.append((i + 1, one_line(left, _TASK_WIDTH), one_line(right, _TASK_WIDTH),
                         "same" if left == right else "differs"))
        return rows

    def _worker_rows(self) -> list[tuple[Any, ...]]:
        """A row per worker of either run, a tree's children under their parent (by
        dotted id: ``2.1`` of one run against ``2.1`` of the other)."""
        left = {w.id: w for w in flat_tree(self.a.workers)}
        right = {w.id: w for w in flat_tree(self.b.workers)}
        rows = []
        for index in sorted(set(left) | set(right), key=tree_key):
            a, b = left.get(index), right.get(index)
            if a is None or b is None:
                output = "only in A" if b is None else "only in B"
            else:
                output = "same" if a.output == b.output else "differs"
            # A top-level worker's index stays a number, so a flat run's diff reads as
            # before (tabulate right-aligns a column of numbers).
            row: list[Any] = [int(index) if index.isdigit() else index]
            for w in (a, b):
                row += ([w.status_label, format_cost(w.cost_usd),
                         format_tokens(w.usage.total_tokens)] if w else ["-", "-", "-"])
            rows.append((*row, output))
        return rows
