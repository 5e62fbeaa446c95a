"""What must hold for every RunRecord, however it ended: a check for tests and for bug reports.

    from swarmkit.testing import run_problems
    assert run_problems(run) == []

A run that was cancelled, ran out of budget or met a storm of faults is still a
complete record: every planned worker has exactly one final row, every failure says why
on one line, and the run's totals are exactly the sum of its calls. In a tree (depth >
1) every worker of every level is checked the same way, with its own calls (its turns
and its split's reducer, ``reducer-of-<id>``), and its children numbered 1..n under it.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import TYPE_CHECKING

from ..record.steps import child_reducer_step, worker_step
from ..record.usage import Usage

if TYPE_CHECKING:
    from ..record.rows import WorkerRecord
    from ..record.runrecord import RunRecord

__all__ = ["run_problems"]

_FINAL_STATUSES = frozenset({"completed", "failed", "skipped", "cancelled"})
_TAG = re.compile(r"<\s*/?\s*[a-zA-Z][^>]*>")


def _readable(text: str | None) -> bool:
    """One line, no markup: what a person can read in a table cell."""
    return bool(text) and "\n" not in (text or "") and _TAG.search(text or "") is None


def run_problems(run: RunRecord) -> list[str]:
    """Everything inconsistent about ``run``; an empty list means none."""
    problems: list[str] = []
    indexes = [w.index for w in run.workers]
    if run.plan and sorted(indexes) != list(range(1, len(run.plan) + 1)):
        problems.append(f"{len(run.plan)} planned workers but worker rows {sorted(indexes)}")
    if not run.plan and run.workers:
        problems.append(f"{len(run.workers)} worker rows but no plan")
    tree = [w for top in run.workers for w in top.walk()]
    for worker in tree:
        problems += _tree_problems(worker)
        name = f"worker {worker.id}"
        if worker.status not in _FINAL_STATUSES:
            problems.append(f"{name} ended as {worker.status!r}, not a final status")
        if worker.status == "completed" and worker.output is None:
            problems.append(f"{name} completed without output")
        if worker.status in ("failed", "skipped") and not _readable(worker.error):
            problems.append(f"{name} is {worker.status_label} with unreadable error "
                            f"{worker.error!r}")
        own = (worker_step(worker.id), child_reducer_step(worker.id))
        calls = [c for c in run.calls if c.step in own]
        if len(calls) != worker.calls:
            problems.append(f"{name} counts {worker.calls} calls but the run has {len(calls)}")
        if worker.attempts != sum(c.attempts for c in calls):
            problems.append(f"{name} counts {worker.attempts} attempts, its calls "
                            f"{sum(c.attempts for c in calls)}")
        spent = sum((c.usage for c in calls), Usage())
        if worker.usage.to_dict() != spent.to_dict():
            problems.append(f"{name} usage {worker.usage} is not the sum of its calls")
        if worker.cost_usd != spent.cost:
            problems.append(f"{name} cost {worker.cost_usd} is not the sum of its calls")
    for call in run.calls:
        if call.error is not None and not _readable(call.error):
            problems.append(f"call {call.step} has an unreadable error {call.error!r}")
        if call.attempts < 1 and call.source != "cache":  # a cache hit sends nothing
            problems.append(f"call {call.step} records {call.attempts} attempts")
    live = [c for c in run.calls if c.source != "cache"]  # a replay re-announces its retries
    retried = sum(c.attempts - 1 for c in live)
    # A call cancelled while backing off had its last attempt's retry announced already.
    backing_off = sum(1 for c in live if (c.error or "").startswith("cancelled"))
    if not retried <= len(run.retries) <= retried + backing_off:
        problems.append(f"calls record {retried} retried attempts, the run {len(run.retries)}")
    if run.cost_usd is not None and run.cost_usd != sum(
        (c.cost_usd or Decimal(0) for c in run.calls), Decimal(0)
    ):
        problems.append("run cost is not the sum of its calls")
    if run.status == "running":
        problems.append("run never finished")
    if run.status in ("failed", "cancelled") and not _readable(run.error):
        problems.append(f"run is {run.status} with unreadable error {run.error!r}")
    if run.status in ("completed", "partial"):
        if run.answer is None:
            problems.append(f"run is {run.status} without an answer")
        completed = sorted(w.index for w in run.workers if w.status == "completed")
        if not set(run.reduced) <= set(completed):
            problems.append(f"reducer got workers {run.reduced}, completed were {completed}")
    return problems


def _tree_problems(worker: WorkerRecord) -> list[str]:
    """A worker's children: numbered 1..n, each one level down, naming it as parent."""
    indexes = [child.index for child in worker.children]
    problems = []
    if indexes != list(range(1, len(indexes) + 1)):
        problems.append(f"worker {worker.id}'s children are numbered {indexes}")
    for child in worker.children:
        if child.parent != worker.id or child.depth != worker.depth + 1:
            problems.append(f"worker {child.id} is under worker {worker.id} at depth "
                            f"{child.depth}")
    return problems
