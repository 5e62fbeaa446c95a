"""What the magics put on screen: the run's final bundle and small tables.

Each cell ends with exactly one display of the run's static bundle, so a replayed
notebook's outputs equal the recorded ones (nbval drops display updates).
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..comparison.result import Comparison
from ..display.rendered import Bundle, Rendered

if TYPE_CHECKING:
    from ..api.result import Run

__all__ = ["SmallTable", "publish", "publish_widget", "run_bundle"]

def run_bundle(run: Run | Comparison) -> Bundle:
    """The run's static MIME bundle and its output metadata (a comparison's: its
    side-by-side view)."""
    if isinstance(run, Comparison):
        data, metadata = run.view().mime_bundle()
        return dict(data), dict(metadata)
    tables = run.tables()
    mime_bundle = getattr(tables, "mime_bundle", None)
    if mime_bundle is not None:
        data, metadata = mime_bundle()
        return dict(data), dict(metadata)
    return {"text/plain": tables.text(), "text/html": tables.html()}, {}


def publish(bundle: Bundle, display_id: str | None = None, *, update: bool = False) -> None:
    """Display a bundle (or replace the output that has ``display_id``)."""
    from IPython.display import display, update_display

    data, metadata = bundle
    if update and display_id is not None:
        update_display(data, raw=True, metadata=metadata, display_id=display_id)
    else:
        display(data, raw=True, metadata=metadata, display_id=display_id)


def publish_widget(view: Any, display_id: str | None = None, *, update: bool = False) -> None:
    """Display a widget (or put it in place of the output that has ``display_id``)."""
    from IPython.display import display

    display(view, display_id=display_id, update=update)


class SmallTable(Rendered):
    """A titled table that renders as text in terminals and HTML in notebooks."""

    def __init__(
        self, title: str, headers: Sequence[str], rows: Sequence[Sequence[Any]], note: str = ""
    ) -> None:
        self.title = title
        self.headers = tuple(headers)
        self.rows = [tuple(row) for row in rows]
        self.note = note

    def text(self) -> str:
        from tabulate import tabulate

        body = tabulate(self.rows, headers=self.headers, tablefmt="simple",
                        disable_numparse=True)
        parts = [self.title, body]
        if self.note:
            parts.append(self.note)
        return "\n".join(parts)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(self.text())

    def html(self) -> str:
        from tabulate import tabulate

        body = tabulate(
            [[html.escape(str(cell)) for cell in row] for row in self.rows],
            headers=[html.escape(h) for h in self.headers],
            tablefmt="unsafehtml",
            disable_numparse=True,
        )
        note = f"<p><small>{html.escape(self.note)}</small></p>" if self.note else ""
        return f"<p><b>{html.escape(self.title)}</b></p>\n{body}\n{note}"
