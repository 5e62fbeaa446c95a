"""``Outbox``: what a shard sends the driver, in order, taken in batches.

Items (events, served calls, asks and tells) are kept in the order they happen and
leave in batches, each the answer to the driver's next ``Shard.take`` (a long poll):
one Ray call per batch, not per event, is what keeps a shard's stream cheap. A batch
goes at once when it holds an ask (a call is waiting for the driver's answer), else
after a short linger that lets more items join it.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Sequence
from typing import Any

from ..errors import BudgetExceeded
from ..record.events import BudgetUpdated, Event
from .messages import Answer, Ask, AskKind, Tell

__all__ = ["BATCH_ITEMS", "LINGER", "Outbox"]

BATCH_ITEMS = 4000  # items in one batch at most
LINGER = 0.02  # seconds a batch with no ask waits for more items


class Outbox:
    """One shard run's stream to the driver, and the asks waiting for its answers."""

    def __init__(self) -> None:
        self._items: list[Any] = []
        self._wake = asyncio.Event()
        self._waiting: dict[int, tuple[AskKind, asyncio.Future[Any]]] = {}
        self._ids = itertools.count(1)
        self._urgent = False

    def put(self, item: Any) -> None:
        self._items.append(item)
        self._wake.set()

    def emit(self, event: Event) -> None:
        """An event of the run. The budget's own are the driver's: it holds the budget."""
        if not isinstance(event, BudgetUpdated):
            self.put(event)

    async def ask(self, kind: AskKind, *args: Any) -> tuple[int, Any]:
        """Ask the driver; its id and answer. A refusal raises BudgetExceeded."""
        ident = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiting[ident] = (kind, future)
        self._urgent = True
        self.put(Ask(ident, kind, args))
        return ident, await future

    def answer(self, answers: Sequence[Answer]) -> None:
        """The driver's answers. One whose asker was cancelled meanwhile is given back."""
        for answer in answers:
            kind, future = self._waiting.pop(answer.id, ("cache", None))
            if future is None or future.done():
                if answer.refusal is None and kind != "cache":  # a cache answer holds nothing
                    self.put(Tell(answer.id, "release" if kind == "reserve" else "abandon"))
            elif answer.refusal is not None:
                future.set_exception(BudgetExceeded(answer.refusal))
            else:
                future.set_result(answer.value)

    async def next_batch(self, job: asyncio.Future[Any]) -> list[Any] | None:
        """The next batch, once there is one; None when ``job`` is done and every item
        has gone."""
        while not self._items:
            if job.done():
                return None
            self._wake.clear()
            waiter = asyncio.ensure_future(self._wake.wait())
            await asyncio.wait({waiter, job}, return_when=asyncio.FIRST_COMPLETED)
            waiter.cancel()
        if not self._urgent and len(self._items) < BATCH_ITEMS and not job.done():
            await asyncio.sleep(LINGER)
        items = self._items[:BATCH_ITEMS]
        del self._items[:BATCH_ITEMS]
        self._urgent = False
        return items
