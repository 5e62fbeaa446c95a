"""Static output of a Run: per-worker spend, tool calls, totals, answer and timeline.

``RunTables.mime_bundle()`` is the one display a finished ``%%swarm`` cell leaves: HTML
(answer as Markdown, tables, totals, timeline SVG) and a tabulate ``text/plain`` that
terminal IPython and nbval's text comparison see, plus provenance metadata. Everything
here is a pure function of the Run, so a replayed run renders byte-identical output.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from functools import cached_property
from typing import TYPE_CHECKING, Any

from tabulate import tabulate

try:  # what tabulate measures cell widths with when it is installed (wide characters)
    from wcwidth import wcswidth as _text_width
except ImportError:  # pragma: no cover - tabulate then measures with len too
    _text_width = len

if TYPE_CHECKING:
    from .calls import Usage
    from .records import ToolCallRecord, WorkerRecord
    from .run import Run

__all__ = [
    "DISPLAY_ROWS", "RunTables", "clip", "displayed_rows", "format_cost", "format_tokens",
    "render_table",
]

_TASK_WIDTH = 48
_CELL_WIDTH = 60
_TASK_HEADER_WIDTH = 200
# Past this many rows a table scrolls inside the output instead of growing the page.
_SCROLL_ROWS = 30
_SCROLL_BOX = '<div style="max-height:420px;overflow:auto">{}</div>'
# A display shows at most this many rows of a table, as pandas does (display.max_rows):
# the first and the last few, and every row that needs attention (a worker that did not
# complete, a tool call that failed). A 1,000-worker run's display was otherwise ~450 KB
# of HTML and text in the notebook, and most of the time the cell's end took. The whole
# table is one call away: run.tables().worker_table().
DISPLAY_ROWS = 60
_HEAD_ROWS = 20
_TAIL_ROWS = 5


def format_cost(cost: Decimal | None) -> str:
    if cost is None:
        return "unknown"
    if cost == 0:
        return "$0"
    return f"${cost:.6f}" if cost < 1 else f"${cost:.4f}"


def format_tokens(value: int | None) -> str:
    return "?" if value is None else f"{value:,}"


def clip(text: str | None, width: int) -> str:
    """``text`` on one line, cut to ``width`` characters with an ellipsis."""
    flat = " ".join((text or "").split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


class RunTables:
    """Renders one Run. ``text()`` is what terminals and nbval's text/plain see."""

    WORKER_HEADERS = (
        "worker", "task", "status", "calls", "attempts", "tokens in", "tokens out", "cost",
        "latency", "tools",
    )
    TOOL_HEADERS = ("worker", "hop", "tool", "arguments", "result", "error", "duration")

    def __init__(self, run: Run) -> None:
        self.run = run

    @cached_property
    def usage(self) -> Usage:
        """The run's usage, summed once per render (a sum over every call)."""
        return self.run.usage

    def worker_rows(self, shown: Sequence[int] | None = None) -> list[tuple[Any, ...]]:
        """One row per worker; with ``shown``, those workers' rows and a row for each gap."""
        workers = self.run.workers
        return _rows_with_gaps(len(workers), shown, lambda i: _worker_row(workers[i]),
                               len(self.WORKER_HEADERS))

    def tool_rows(self, shown: Sequence[int] | None = None) -> list[tuple[Any, ...]]:
        """One row per tool call; with ``shown``, those calls' rows and a row per gap."""
        calls = self.run.tool_calls
        return _rows_with_gaps(len(calls), shown, lambda i: _tool_row(calls[i]),
                               len(self.TOOL_HEADERS))

    def totals(self) -> str:
        """The one-line summary; both the text and the HTML open with it."""
        return self._totals

    @cached_property
    def _totals(self) -> str:
        run = self.run
        usage = self.usage
        counts = ", ".join(f"{n} {label}" for label, n in sorted(run.status_counts().items()))
        cached = sum(1 for c in run.calls if c.source == "cache")
        cached_note = f" ({cached} cached)" if cached else ""
        return (
            f"run {run.run_id} · {run.status} · {len(run.workers)} workers ({counts or 'none'})"
            f" · {len(run.calls)} calls{cached_note} · tokens "
            f"{format_tokens(usage.prompt_tokens)} in / {format_tokens(usage.completion_tokens)}"
            f" out · cost {format_cost(run.cost_usd)} · {run.duration:.2f}s"
        )

    def worker_table(self, fmt: str = "simple", shown: Sequence[int] | None = None) -> str:
        """Every worker's row (``shown``: only those, as the display does)."""
        return render_table(self.worker_rows(shown), self.WORKER_HEADERS, fmt)

    def tool_table(self, fmt: str = "simple", shown: Sequence[int] | None = None) -> str:
        """Every tool call's row (``shown``: only those, as the display does)."""
        return render_table(self.tool_rows(shown), self.TOOL_HEADERS, fmt)

    @cached_property
    def _worker_cut(self) -> _Cut:
        workers = self.run.workers
        return _Cut.of("workers", len(workers), "did not complete", "worker_table",
                       [i for i, w in enumerate(workers) if w.status != "completed"])

    @cached_property
    def _tool_cut(self) -> _Cut:
        calls = self.run.tool_calls
        return _Cut.of("tool calls", len(calls), "failed", "tool_table",
                       [i for i, t in enumerate(calls) if t.error])

    def text(self) -> str:
        """Totals, tables (long ones cut to DISPLAY_ROWS) and the answer, as plain text."""
        run = self.run
        parts = [self.totals(), ""]
        if run.error:
            parts += [f"error: {run.error}", ""]
        if run.workers:
            cut = self._worker_cut
            parts += [*([cut.note] if cut.note else []),
                      self.worker_table(shown=cut.shown), ""]
        if run.tool_calls:
            cut = self._tool_cut
            parts += [cut.note or "tool calls", self.tool_table(shown=cut.shown), ""]
        if run.answer is not None:
            parts += ["answer", run.answer]
        return "\n".join(parts).rstrip() + "\n"

    def html(self) -> str:
        """Totals, answer (Markdown), worker table, tool-call table and timeline."""
        from .mdhtml import markdown_html
        from .timeline import timeline_svg

        run = self.run
        parts = [
            '<div class="swarmkit-run">',
            f"<p><b>{html.escape(self.totals())}</b></p>",
            f"<p>task: {html.escape(clip(run.task, _TASK_HEADER_WIDTH))}</p>",
        ]
        if run.error:
            parts.append(f'<p style="color:#b00">error: {html.escape(run.error)}</p>')
        if run.answer is not None:
            parts += [
                "<p><b>answer</b></p>",
                f'<div class="swarmkit-answer">{markdown_html(run.answer)}</div>',
            ]
        if run.workers:
            parts += self._worker_cut.html(self.worker_table("html", self._worker_cut.shown))
        if run.tool_calls:
            parts += self._tool_cut.html(self.tool_table("html", self._tool_cut.shown))
        if run.calls:
            parts += ["<p><b>timeline</b></p>", timeline_svg(run)]
        parts.append("</div>")
        return "\n".join(parts)

    def metadata(self) -> dict[str, Any]:
        """Provenance for the display's metadata: no secrets, only key variable names."""
        from . import __version__

        run = self.run
        return {
            "version": __version__,
            "run_id": run.run_id,
            "status": run.status,
            "models": run.models,
            "parameters": run.config,
            "usage": {k: ("unknown" if v is None else str(v))
                      for k, v in self.usage.to_dict().items()},
            "cost_usd": "unknown" if run.cost_usd is None else str(run.cost_usd),
        }

    def mime_bundle(self) -> tuple[dict[str, str], dict[str, Any]]:
        """``(data, metadata)`` for ``IPython.display.display(data, metadata=..., raw=True)``."""
        data = {"text/html": self.html(), "text/plain": self.text()}
        return data, {"swarmkit": self.metadata()}


def _worker_row(w: WorkerRecord) -> tuple[Any, ...]:
    calls = f"{w.calls} ({w.cached_calls} cached)" if w.cached_calls else str(w.calls)
    return (
        w.index,
        clip(w.task, _TASK_WIDTH),
        w.status_label,
        calls,
        w.attempts,
        format_tokens(w.usage.prompt_tokens),
        format_tokens(w.usage.completion_tokens),
        format_cost(w.cost_usd),
        f"{w.latency:.2f}s",
        w.tool_calls,
    )


def _tool_row(t: ToolCallRecord) -> tuple[Any, ...]:
    return (
        t.worker,
        t.hop,
        t.tool,
        clip(t.arguments, _CELL_WIDTH),
        clip(t.result, _CELL_WIDTH),
        clip(t.error, _CELL_WIDTH) or "",
        f"{t.duration:.3f}s",
    )


def displayed_rows(count: int, notable: Sequence[int]) -> list[int] | None:
    """Which of ``count`` rows a display shows, in order; None when it shows them all.

    Past DISPLAY_ROWS: the first and the last few, then the ``notable`` ones (in order)
    while there is room.
    """
    if count <= DISPLAY_ROWS:
        return None
    keep = set(range(_HEAD_ROWS)) | set(range(count - _TAIL_ROWS, count))
    for index in notable:
        if len(keep) >= DISPLAY_ROWS:
            break
        keep.add(index)
    return sorted(keep)


def _rows_with_gaps(
    count: int, shown: Sequence[int] | None, row: Callable[[int], tuple[Any, ...]],
    width: int,
) -> list[tuple[Any, ...]]:
    """``row(i)`` for every ``i`` (or each shown one), with "…" rows where rows are left out."""
    if shown is None:
        return [row(i) for i in range(count)]
    rows: list[tuple[Any, ...]] = []
    previous = -1
    for index in [*shown, count]:
        if index > previous + 1:
            rows.append(("…", f"({index - previous - 1} more)", *[""] * (width - 2)))
        if index < count:
            rows.append(row(index))
        previous = index
    return rows


@dataclass(frozen=True, slots=True)
class _Cut:
    """How a display shows one table: the rows it keeps (None: all) and its title."""

    what: str  # "workers", "tool calls"
    count: int
    shown: list[int] | None
    note: str | None  # says what was left out and how to print it all, when cut

    @classmethod
    def of(cls, what: str, count: int, notable_verb: str, method: str,
           notable: Sequence[int]) -> _Cut:
        shown = displayed_rows(count, notable)
        note = None if shown is None else (
            f"{what}: {len(shown)} of {count:,} shown (the first {_HEAD_ROWS}, the last "
            f"{_TAIL_ROWS} and those that {notable_verb}); run.tables().{method}() has "
            "them all"
        )
        return cls(what, count, shown, note)

    def html(self, table: str) -> list[str]:
        title = self.note or f"{self.what} ({self.count})"
        rows = self.count if self.shown is None else len(self.shown)
        return [f"<p><b>{html.escape(title)}</b></p>", _scrolling(table, rows)]


def render_table(rows: Sequence[Sequence[Any]], headers: Sequence[str], fmt: str) -> str:
    """``tabulate(rows, headers, tablefmt=fmt, disable_numparse=True)``, byte for byte.

    tabulate infers a type for every cell, which is most of the time a 1,000-worker
    run's final display takes. Cells that it prints as they are (one printable line, no
    whitespace at either end) in the ``simple`` and ``html`` formats are laid out here,
    measured as tabulate measures them; anything else goes to tabulate.
    """
    cells = _verbatim_cells(rows)
    if cells is None or fmt not in ("simple", "html"):
        return str(tabulate(rows, headers=headers, tablefmt=fmt, disable_numparse=True))
    # Every column is text (numbers are not parsed), so everything is left-aligned;
    # tabulate pads the headers by two.
    widths = [len(header) + 2 for header in headers]
    for row in cells:
        for column, (_, width) in enumerate(row):
            widths[column] = max(widths[column], width)

    def line(row: list[tuple[str, int]], cell: str, sep: str) -> str:
        return sep.join(cell.format(text + " " * (widths[i] - width))
                        for i, (text, width) in enumerate(row))

    head = [(h, len(h)) for h in headers]
    if fmt == "simple":
        lines = [line(head, "{}", "  ").rstrip(), "  ".join("-" * w for w in widths)]
        lines += [line(row, "{}", "  ").rstrip() for row in cells]
        return "\n".join(lines)
    escaped = [[(html.escape(text, quote=True), width) for text, width in row] for row in cells]
    lines = [f"<table>\n<thead>\n<tr>{line(head, '<th>{}</th>', '')}</tr>\n</thead>\n<tbody>"]
    lines += [f"<tr>{line(row, '<td>{}</td>', '')}</tr>" for row in escaped]
    lines.append("</tbody>\n</table>")
    return "\n".join(lines)


def _verbatim_cells(rows: Sequence[Sequence[Any]]) -> list[list[tuple[str, int]]] | None:
    """Each cell's text and display width, or None if tabulate would change any cell."""
    cells = []
    for row in rows:
        texts = []
        for value in row:
            if not isinstance(value, str | int) or isinstance(value, bool):
                return None
            text = str(value)
            if not text.isprintable() or text != text.strip():
                return None
            # Printable ASCII is one column a character; only the rest needs wcwidth.
            width = len(text) if text.isascii() else _text_width(text)
            if width < 0:
                return None
            texts.append((text, width))
        cells.append(texts)
    return cells


def _scrolling(table: str, rows: int) -> str:
    return _SCROLL_BOX.format(table) if rows > _SCROLL_ROWS else table
