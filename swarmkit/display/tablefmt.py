"""Table layout: tabulate's text for the text views, a themed HTML table, and how a cost
and a token count are written in every view (``format_cost``, ``format_tokens``).

``render_table`` is ``tabulate(..., disable_numparse=True)`` for the text views.
``html_table`` is the HTML the displays show: CSS classes for the theme
(``swarmkit.display.theme``), text columns left-aligned and numbers right-aligned
(JupyterLab right-aligns every cell otherwise), rows classed by status, and cells that
may carry pre-rendered HTML.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from tabulate import tabulate

from ..credentials.scrub import one_line

__all__ = ["NUMERIC", "Markup", "clipped", "format_cost", "format_tokens", "html_table",
           "render_table"]

# Columns (by header) that hold numbers: right-aligned.
NUMERIC = frozenset({"worker", "calls", "attempts", "retries", "tokens in", "tokens out",
                     "cost", "latency", "tools", "hop", "duration", "time",
                     "wall time", "p50", "p95", "mean", "spread", "range", "repeats",
                     "not scored"})
# Columns whose text is clipped on one line, with the whole text on hover.
_CLIPPED = {"task": "sk-task", "why": "sk-why"}


@dataclass(frozen=True, slots=True)
class Markup:
    """A cell that is HTML already (built from escaped parts); ``text`` is its plain form."""

    html: str
    text: str = ""


def clipped(text: str | None, width: int) -> Markup:
    """``text`` on one line cut to ``width``, with the whole text on hover (``title``)."""
    flat = one_line(text, len(text or ""))  # collapsing never lengthens: not cut
    short = one_line(flat, width)
    if short == flat:
        return Markup(html.escape(flat, quote=True), flat)
    return Markup(f'<span title="{html.escape(flat, quote=True)}">'
                  f"{html.escape(short, quote=True)}</span>", short)


def _cell_class(header: str, value: object) -> str:
    if header in NUMERIC:
        return "sk-num"
    if header in _CLIPPED:
        return _CLIPPED[header]
    if header == "status" and isinstance(value, str) and value:
        return f"sk-st-{value.split(' ', 1)[0]}"
    return ""


def html_table(
    rows: Sequence[Sequence[Any]], headers: Sequence[str],
    row_classes: Sequence[str] | None = None, css: str = "", tall: bool = False,
) -> str:
    """A ``<table class="sk-table">`` in a sideways-scrolling box; plain cells escaped.

    ``tall``: the box also scrolls down past 420 px instead of growing the page.
    """
    head = "".join(
        f'<th class="sk-num">{html.escape(h)}</th>' if h in NUMERIC
        else f"<th>{html.escape(h)}</th>" for h in headers)
    classes = f"sk-table {css}".strip()
    box = ' style="max-height:420px;overflow:auto"' if tall else ""
    lines = [f'<div class="sk-scroll"{box}><table class="{classes}">',
        f"<thead><tr>{head}</tr></thead><tbody>"]
    for n, row in enumerate(rows):
        cls = row_classes[n] if row_classes is not None else ""
        cells = []
        for header, value in zip(headers, row, strict=False):
            klass = _cell_class(header, value)
            attr = f' class="{klass}"' if klass else ""
            if isinstance(value, Markup):
                cells.append(f"<td{attr}>{value.html}</td>")
                continue
            cells.append(f"<td{attr}>{html.escape(str(value), quote=True)}</td>")
        row_attr = f' class="{cls}"' if cls else ""
        lines.append(f"<tr{row_attr}>{''.join(cells)}</tr>")
    lines.append("</tbody></table></div>")
    return "\n".join(lines)


def render_table(rows: Sequence[Sequence[Any]], headers: Sequence[str], fmt: str) -> str:
    """The text views' layout: every cell as written (numbers are not parsed)."""
    return str(tabulate(rows, headers=headers, tablefmt=fmt, disable_numparse=True))


def format_cost(cost: Decimal | None) -> str:
    if cost is None:
        return "unknown"
    if cost == 0:
        return "$0"
    return f"${cost:.6f}" if cost < 1 else f"${cost:.4f}"


def format_tokens(value: int | None) -> str:
    return "?" if value is None else f"{value:,}"
