"""A run's step ids: what every model call is filed under (``CallRecord.step``), the
``X-Swarm-Step`` header it is sent with, and the key of its retries and drill-down.

``planner``; ``worker-<id>``, where a worker's id is its index in the plan (``worker-7``)
or, in a tree (depth > 1), its dotted id (``worker-2.1``, ``worker-2.1.3``); ``reducer``
and the parts of a tree reduction, ``reducer-<level>.<i>``; ``reducer-of-<id>``, the
reducer of worker ``<id>``'s child swarm; ``judge-<i>``. Each is unique in a run and
the same on every retry and every re-run of the same plan.
"""

from __future__ import annotations

__all__ = [
    "InTree",
    "child_reducer_step",
    "owner_of_step",
    "reducer_part_of_step",
    "split_owner_of_step",
    "worker_depth",
    "worker_id",
    "worker_id_of_step",
    "worker_of_step",
    "worker_step",
]

_CHILD_REDUCER = "reducer-of-"


def worker_id(parent: str | None, index: int) -> str:
    """The dotted id of worker ``index`` (its place among its siblings, from 1) under the
    worker ``parent`` (None at the top level): ``"2"``, ``"2.1"``, ``"2.1.3"``."""
    return str(index) if parent is None else f"{parent}.{index}"


def worker_depth(parent: str | None) -> int:
    """The depth of a worker whose parent's dotted id is ``parent`` (1: no parent)."""
    return 1 if parent is None else parent.count(".") + 2


class InTree:
    """A base for a worker's views (its live row, its turn loop's context): its dotted
    ``id`` and ``depth``, from its ``index`` and its ``parent``'s dotted id. No state of
    its own (empty slots), so a slotted dataclass stays slotted."""

    __slots__ = ()
    index: int
    parent: str | None

    @property
    def id(self) -> str:
        """The dotted worker id: ``"2"``, ``"2.1"``."""
        return worker_id(self.parent, self.index)

    @property
    def depth(self) -> int:
        return worker_depth(self.parent)


def worker_of_step(step: str) -> int | None:
    """The worker index of a step id such as ``worker-7``; None for planner and reducer."""
    if step.startswith("worker-") and step[7:].isdigit():
        return int(step[7:])
    return None


def worker_step(worker_id: str) -> str:
    """The step id of worker ``worker_id``'s calls: ``worker-2``, ``worker-2.1``."""
    return f"worker-{worker_id}"


def worker_id_of_step(step: str) -> str | None:
    """The dotted worker id of a worker step (``worker-2.1`` -> ``"2.1"``, ``worker-7``
    -> ``"7"``); None for any other step. ``worker_of_step`` is its top-level-only form."""
    if not step.startswith("worker-"):
        return None
    parts = step[7:].split(".")
    return step[7:] if all(part.isdigit() for part in parts) else None


def child_reducer_step(worker_id: str) -> str:
    """The step id of the reducer that merges worker ``worker_id``'s child swarm:
    ``reducer-of-2``, ``reducer-of-2.1``. Its role is ``reducer``; it is no
    ``reducer_part_of_step`` (a tree reduction's ``reducer-<level>.<i>``)."""
    return f"{_CHILD_REDUCER}{worker_id}"


def split_owner_of_step(step: str) -> str | None:
    """The dotted id of the worker whose child swarm a ``reducer-of-<id>`` step merges;
    None for any other step. ``child_reducer_step``'s inverse."""
    if not step.startswith(_CHILD_REDUCER):
        return None
    rest = step[len(_CHILD_REDUCER):]
    return rest if rest and all(part.isdigit() for part in rest.split(".")) else None


def owner_of_step(step: str) -> str | None:
    """The dotted id of the worker a call of ``step`` belongs to: ``worker-2.1`` ->
    ``2.1``, a split's reducer ``reducer-of-2`` -> ``2``; None for the planner, the
    final reducer and its parts, the judge."""
    worker_id = worker_id_of_step(step)
    return split_owner_of_step(step) if worker_id is None else worker_id


def reducer_part_of_step(step: str) -> tuple[int, int] | None:
    """``(level, index)`` of a reducer part such as ``reducer-1.3`` (a tree reduction's
    step); None for any other step, the final ``reducer`` included."""
    if not step.startswith("reducer-"):
        return None
    level, dot, index = step[8:].partition(".")
    if dot and level.isdigit() and index.isdigit():
        return int(level), int(index)
    return None
