"""Which rows a display shows of a long table, and the note that says what it left out.

A display shows at most ``DISPLAY_ROWS`` rows of a table, as pandas does
(display.max_rows): the first and the last few, and every row that needs attention (a
worker that did not complete, a tool call that failed), so a large run's display stays
small in the notebook and quick to build (benchmarks/README.md). The whole table is one
call away: ``run.tables().worker_table()``.

A tree's rows (each child under its parent) are cut the same way, and every row shown
brings the rows of its ancestors: a child is never shown without the parent it belongs
under, and a notable row whose ancestors no longer fit is left out with them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["DISPLAY_ROWS", "Cut", "displayed_rows", "rows_with_gaps"]

DISPLAY_ROWS = 60
_HEAD_ROWS = 20
_TAIL_ROWS = 5


def displayed_rows(count: int, notable: Sequence[int],
                   parents: Sequence[int | None] | None = None) -> list[int] | None:
    """Which of ``count`` rows a display shows, in order; None when it shows them all.

    Past DISPLAY_ROWS: the first and the last few, then the ``notable`` ones (in order)
    while there is room. ``parents`` (a tree's rows): each row's parent row, None at the
    top; a row is shown with its ancestors.
    """
    if count <= DISPLAY_ROWS:
        return None

    def line(index: int) -> set[int]:
        found = {index}
        parent = None if parents is None else parents[index]
        while parent is not None:
            found.add(parent)
            parent = parents[parent] if parents is not None else None
        return found

    keep: set[int] = set()
    for index in [*range(_HEAD_ROWS), *range(count - _TAIL_ROWS, count)]:
        keep |= line(index)
    for index in notable:
        if len(keep) >= DISPLAY_ROWS:
            break
        wanted = line(index) - keep
        if len(keep) + len(wanted) <= DISPLAY_ROWS:
            keep |= wanted
    return sorted(keep)


def rows_with_gaps(
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
class Cut:
    """How a display shows one table: the rows it keeps (None: all) and its title."""

    what: str  # "workers", "tool calls"
    count: int
    shown: list[int] | None
    note: str | None  # says what was left out and how to print it all, when cut

    @classmethod
    def of(cls, what: str, count: int, notable_verb: str, method: str,
           notable: Sequence[int], parents: Sequence[int | None] | None = None) -> Cut:
        shown = displayed_rows(count, notable, parents)
        ancestors = "" if parents is None else ", each with its parents"
        note = None if shown is None else (
            f"{what}: {len(shown)} of {count:,} shown (the first {_HEAD_ROWS}, the last "
            f"{_TAIL_ROWS} and those that {notable_verb}{ancestors}); "
            f"run.tables().{method}() has them all"
        )
        return cls(what, count, shown, note)

    @property
    def title(self) -> str:
        """What the display writes above the table."""
        return self.note or f"{self.what} ({self.count})"
