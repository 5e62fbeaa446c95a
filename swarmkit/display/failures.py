"""Why a worker did not complete: a one-line reason and a hint, for every view.

The reason is the worker's own error (``WorkerRecord.error``, one line already), and the
hint says what to do about it, chosen from the failure's kind (``reason``) and the HTTP
status of its last failed call: a 400-class answer is a set-up mistake, a 429 a rate
limit, a 5xx the server's trouble.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..provider.hints import advice
from ..record.steps import worker_id_of_step

if TYPE_CHECKING:
    from ..record.rows import CallRecord, WorkerRecord

__all__ = ["Failure", "failure_of", "failure_statuses", "hint_for"]

_HINTS = {
    "budget": "raise the budget or lower max_tokens",
    "tools": "see the tool calls of this worker",
    "timeout": "raise the run timeout",
    "replay": "the cassette no longer matches this cell: record it again",
    "error": "a bug in swarmkit: the traceback is in the 'swarmkit' log",
    # Either front end: a Ctrl-C in a terminal, or the kernel's interrupt in a notebook.
    "interrupt": "interrupted: resume the run to finish the rest",
    "stopped": "stopped early; the finished workers were merged",
}


def hint_for(reason: str | None, status: int | None) -> str:
    """What to do about a failure of kind ``reason`` whose last HTTP status was ``status``."""
    if reason == "provider" or (reason is None and status is not None):
        return advice(status).display
    return _HINTS.get(reason or "", "")


@dataclass(frozen=True, slots=True)
class Failure:
    """Why one worker did not complete."""

    worker: str  # its dotted id: "2", "2.1" in a tree
    label: str  # "failed (provider)"
    error: str  # one line; "" when the worker left none (a cancelled one)
    hint: str

    @property
    def line(self) -> str:
        """``error — hint`` (either may be missing)."""
        return " — ".join(part for part in (self.error, self.hint) if part)


def failure_statuses(calls: Iterable[CallRecord]) -> dict[str, int]:
    """Each worker's HTTP status of its last failed call (workers with one only), by its
    dotted id (``"7"``, ``"2.1"``)."""
    statuses: dict[str, int] = {}
    for call in calls:
        if call.error is None or call.status is None:
            continue
        worker_id = worker_id_of_step(call.step)
        if worker_id is not None:
            statuses[worker_id] = call.status
    return statuses


def failure_of(worker: WorkerRecord, status: int | None = None) -> Failure | None:
    """The failure of ``worker``, or None when it completed (or has not finished)."""
    if worker.status in ("completed", "pending", "running"):
        return None
    error = " ".join((worker.error or "").split())
    # Provider and budget errors end with their own advice ("...; try again later"), chosen
    # from the same status: a second hint would only repeat it in other words.
    advised = worker.reason in ("provider", "budget") and "; " in error
    hint = "" if advised else hint_for(worker.reason, status)
    return Failure(worker.id, worker.status_label, error, hint)
