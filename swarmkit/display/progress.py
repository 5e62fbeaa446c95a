"""The terminal's live view of a run: one line, redrawn in place on a terminal.

``workers 2/6 · 4 cancelled · spent $0.000330``: the workers that completed of the plan,
the other outcomes apart, and what the calls cost so far (from every call, with a budget
or without; ``+ unknown`` when a call's price is not known), then ``of $CAP`` with a cap.
A tree (depth > 1) adds its splits and its leaves (the workers, at any depth, that did
not split) done of those known so far: ``workers 1/3 · 2 splits · leaves 4/7 · ...``.
"""

from __future__ import annotations

import time
from collections import Counter
from decimal import Decimal
from typing import TextIO

from ..config.wording import counted
from ..record.events import (
    BudgetUpdated,
    CallFinished,
    Event,
    PlanReady,
    RunFinished,
    WorkerFinished,
    WorkerSplit,
)
from .tablefmt import format_cost

__all__ = ["ProgressLine"]


class ProgressLine:
    """A one-line terminal progress sink: workers completed of the plan, the other
    outcomes apart (``workers 2/6 · 4 cancelled``), and what the calls cost so far."""

    def __init__(self, stream: TextIO, *, min_interval: float = 0.1) -> None:
        self.stream = stream
        self.interactive = stream.isatty()
        self.min_interval = min_interval
        self.total = 0
        self.outcomes: Counter[str] = Counter()
        self.spent = Decimal(0)
        self.unpriced = 0  # calls whose cost is unknown: the spend is then a lower bound
        self.cap: Decimal | None = None
        self.splits = 0
        self.children = 0  # the workers the splits added
        self.leaves_done = 0
        self._last = 0.0

    def on_event(self, event: Event) -> None:
        match event:
            case PlanReady():
                self.total = len(event.tasks)
            case WorkerFinished():
                if event.worker.parent is None:  # the plan's workers
                    self.outcomes[event.worker.status] += 1
                self.leaves_done += not event.worker.children
            case WorkerSplit():
                self.splits += 1
                self.children += len(event.tasks)
            case BudgetUpdated():
                self.cap = event.cap_usd
            case CallFinished():
                # Every call, budget or not (BudgetUpdated comes only with a cap).
                if event.call.cost_usd is None:
                    self.unpriced += 1
                else:
                    self.spent += event.call.cost_usd
            case RunFinished():
                self._draw(force=True, final=True)
                return
            case _:
                return
        self._draw()

    def line(self) -> str:
        others = [f"{count} {status}" for status, count in sorted(self.outcomes.items())
                  if status != "completed"]
        spend = format_cost(self.spent) + (" + unknown" if self.unpriced else "")
        if self.cap is not None:
            spend += f" of ${self.cap}"
        tree = []
        if self.splits:
            leaves = self.total + self.children - self.splits
            tree = [counted(self.splits, "split"), f"leaves {self.leaves_done}/{leaves}"]
        return " · ".join([f"workers {self.outcomes['completed']}/{self.total or '?'}",
                           *others, *tree, f"spent {spend}"])

    def _draw(self, *, force: bool = False, final: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._last < self.min_interval:
            return
        self._last = now
        if self.interactive:
            self.stream.write("\r\x1b[K" + self.line() + ("\n" if final else ""))
        elif final:
            self.stream.write(self.line() + "\n")
        self.stream.flush()
