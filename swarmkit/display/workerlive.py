"""One worker as the live dashboard shows it (``WorkerLive``), and what a live view
sums (``Spent``): tokens and cost so far, where unknown stays unknown.

In a tree a worker's ``parent`` is its parent's dotted id and ``split`` how many
children its split runs; its figures are its own calls' (its split's reducer call
among them), as in ``WorkerRecord``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal

from ..record.rows import ToolCallRecord, WorkerRecord
from ..record.steps import InTree
from ..record.usage import Usage

__all__ = ["Spent", "WorkerLive"]


class Spent:
    """Tokens and cost so far, read from ``usage`` (summed with unknown staying unknown)."""

    __slots__ = ()
    usage: Usage

    @property
    def prompt_tokens(self) -> int | None:
        return self.usage.prompt_tokens

    @property
    def completion_tokens(self) -> int | None:
        return self.usage.completion_tokens

    @property
    def cost(self) -> Decimal | None:
        return self.usage.cost


@dataclass(slots=True)
class WorkerLive(Spent, InTree):
    """One worker as the dashboard shows it while the run goes on."""

    index: int
    task: str
    status: str = "pending"
    parent: str | None = None  # the parent's dotted id, in a tree
    split: int = 0  # how many children its split runs (0: it did not split)
    attempts_done: int = 0  # attempts of this worker's finished calls
    attempt: int = 0  # the attempt of the call in flight
    retries: int = 0  # CallRetried events seen
    calls: int = 0  # finished calls
    retries_done: int = 0  # ``retries`` when the last call finished
    waiting: bool = False
    usage: Usage = field(default_factory=Usage)  # its finished calls' tokens and cost
    started: float | None = None
    latency: float | None = None  # set once finished
    tools: int = 0
    fail_status: int | None = None  # HTTP status of its last failed call
    cut: bool = False  # its last answered call stopped at its max tokens
    record: WorkerRecord | None = None  # set once finished: what its drill-down shows
    tool_records: list[ToolCallRecord] = field(default_factory=list)
    # The finished worker's rendered task cell: it cannot change any more, and the worker
    # section is rendered on every push (twice a second while calls are in flight).
    finished_cell: object | None = None

    @property
    def attempts(self) -> int:
        """Requests sent, the one in flight included; a retry already announced counts."""
        if not self.attempt:
            return self.attempts_done
        return self.attempts_done + max(self.attempt, 1 + self.retries - self.retries_done)

    @property
    def shown_retries(self) -> int:
        """Retries as every view shows them: attempts past each call's first."""
        return max(0, self.attempts - self.calls - (1 if self.attempt else 0))

    def finish(self, record: WorkerRecord) -> None:
        self.status = record.status_label
        self.record = record
        self.attempts_done, self.attempt = record.attempts, 0
        self.calls, self.retries_done = record.calls, self.retries
        self.usage = record.usage
        self.latency, self.tools = record.latency, record.tool_calls
        self.waiting = False
        self.finished_cell = None
