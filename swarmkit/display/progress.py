"""The terminal's live view of a run: one line, redrawn in place on a terminal.

``workers 2/6 · 4 cancelled · spent $0.000330``: the workers that completed of the plan,
the other outcomes apart, and what the calls cost so far (from every call, with a budget
or without; ``+ unknown`` when a call's price is not known), then ``of $CAP`` with a cap.
"""

from __future__ import annotations

import time
from collections import Counter
from decimal import Decimal
from typing import TextIO

from ..record.events import (
    BudgetUpdated,
    CallFinished,
    Event,
    PlanReady,
    RunFinished,
    WorkerFinished,
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
        self._last = 0.0

    def on_event(self, event: Event) -> None:
        match event:
            case PlanReady():
                self.total = len(event.tasks)
            case WorkerFinished() if event.worker.parent is None:  # the plan's workers
                self.outcomes[event.worker.status] += 1
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
        return " · ".join([f"workers {self.outcomes['completed']}/{self.total or '?'}",
                           *others, f"spent {spend}"])

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
