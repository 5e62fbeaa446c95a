"""Table layout: tabulate's text and HTML byte for byte, fast, and a themed HTML table.

``render_table`` is ``tabulate(..., disable_numparse=True)`` for the text views.
``html_table`` is the HTML the displays show: CSS classes for the theme
(``swarmkit.display.theme``),
text columns left-aligned and numbers right-aligned (JupyterLab right-aligns every cell
otherwise), rows classed by status, and cells that may carry pre-rendered HTML.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tabulate import tabulate

try:  # what tabulate measures cell widths with when it is installed (wide characters)
    from wcwidth import wcswidth as _text_width
except ImportError:  # pragma: no cover - tabulate then measures with len too
    _text_width = len

__all__ = ["NUMERIC", "Markup", "clipped", "html_table", "render_table"]

# Columns (by header) that hold numbers: right-aligned.
NUMERIC = frozenset({"worker", "calls", "attempts", "retries", "tokens in", "tokens out",
                     "cost", "latency", "tools", "hop", "duration", "time"})
# Columns whose text is clipped on one line, with the whole text on hover.
_CLIPPED = {"task": "sk-task", "why": "sk-why"}


@dataclass(frozen=True, slots=True)
class Markup:
    """A cell that is HTML already (built from escaped parts); ``text`` is its plain form."""

    html: str
    text: str = ""


def clipped(text: str | None, width: int) -> Markup:
    """``text`` on one line cut to ``width``, with the whole text on hover (``title``)."""
    flat = " ".join((text or "").split())
    if len(flat) <= width:
        return Markup(html.escape(flat, quote=True), flat)
    short = flat[: width - 1] + "…"
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
