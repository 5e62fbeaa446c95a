"""A tree of workers (depth > 1) as the displays lay it out: one row per worker, each
child under its parent, depth first, and its task indented by its depth.

The order of rows is the order of dotted ids compared part by part (``2`` < ``2.1`` <
``2.1.3`` < ``2.2`` < ``10``), which is ``WorkerRecord.walk()``'s. A worker's calls are
``worker-<id>`` and, when it split, its child swarm's reducer ``reducer-of-<id>``:
both are its own (``WorkerRecord``'s contract), so both count on its row.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..config.wording import counted
from ..record.steps import owner_of_step
from .tablefmt import Markup

if TYPE_CHECKING:
    from ..record.rows import CallRecord, WorkerRecord

__all__ = ["ancestors", "flat_tree", "indented", "parent_positions", "tree_key", "tree_note",
           "worker_retries"]

_INDENT_EM = 1.2  # a level of the tree, in the task column


def tree_key(worker_id: str) -> tuple[int, ...]:
    """The sort key of a dotted id: rows in this order put children under parents."""
    return tuple(int(part) for part in worker_id.split("."))


def ancestors(worker_id: str) -> list[str]:
    """``2.1.3`` -> ``["2.1", "2"]``: its parent first."""
    found = []
    while "." in worker_id:
        worker_id = worker_id.rpartition(".")[0]
        found.append(worker_id)
    return found


def flat_tree(workers: Sequence[WorkerRecord]) -> list[WorkerRecord]:
    """Every worker of a run, each followed by its descendants (``workers`` itself when
    no worker split)."""
    if not any(worker.children for worker in workers):
        return list(workers)
    return [node for worker in workers for node in worker.walk()]


def parent_positions(rows: Sequence[WorkerRecord]) -> list[int | None]:
    """For each row of ``flat_tree``, the position of its parent's row (None at the top)."""
    position = {worker.id: n for n, worker in enumerate(rows)}
    return [None if worker.parent is None else position.get(worker.parent)
            for worker in rows]


def indented(depth: int, cell: Markup) -> Markup:
    """A task cell moved right by its depth (a top-level cell is returned as it is)."""
    if depth <= 1:
        return cell
    pad = f"{(depth - 1) * _INDENT_EM:.1f}em"
    return Markup(f'<div style="padding-left:{pad}">{cell.html}</div>', cell.text)


def tree_note(rows: Sequence[WorkerRecord]) -> str:
    """`` · tree: 9 workers, 2 splits, 7 leaves, depth 3`` for the totals line, from the
    rows of ``flat_tree``; empty when no worker split."""
    splits = sum(1 for worker in rows if worker.children)
    if not splits:
        return ""
    depth = max(worker.depth for worker in rows)
    return (f" · tree: {counted(len(rows), 'worker')}, {counted(splits, 'split')}, "
            f"{counted(len(rows) - splits, 'leaf', 'leaves')}, depth {depth}")


def worker_retries(calls: Sequence[CallRecord]) -> dict[str, int]:
    """Each worker's retries, its calls' ``CallRecord.retries`` summed (not attempts -
    calls, which a call served from the cache, with no attempt, would offset); by dotted
    id, a split's reducer call counted on its parent's row."""
    retries: dict[str, int] = {}
    for call in calls:
        if call.retries and (worker := owner_of_step(call.step)) is not None:
            retries[worker] = retries.get(worker, 0) + call.retries
    return retries
