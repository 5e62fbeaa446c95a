"""``WorkerDispatch``: the seam where a run's workers may be sent somewhere else.

By default the engine runs every worker in its own event loop. A dispatch (the shards of
a cluster run, ``swarmkit.cluster``) takes the whole fan-out instead, as batch mode
does: it is given the run's step context and the plan, and must leave one WorkerRecord
per sub-task in ``records`` (emitting each as a WorkerFinished through the context, so
the Run is built from events as always). The planner, the reducer and the budget stay
with the engine.
"""

from __future__ import annotations

from typing import Protocol

from ..record.rows import WorkerRecord
from .context import StepContext

__all__ = ["WorkerDispatch"]


class WorkerDispatch(Protocol):
    """Runs the workers of ``plan`` (1-based indexes) somewhere, under ``context``.

    Cancelled, it stops every worker it started before returning, and records the
    ones that never finished as cancelled, with ``context.halt``'s reason."""

    async def __call__(self, context: StepContext, task: str, plan: tuple[str, ...],
                       records: dict[int, WorkerRecord]) -> None: ...
