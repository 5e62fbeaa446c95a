"""A sink that keeps every event a run emits, for the tests that check what the engine
announced and in what order.

Contract: ``Events()`` is a swarmkit sink (it has ``on_event``, so it goes in
``sinks=[...]``); ``events`` holds every event in the order it was emitted, the engine's
own objects, nothing filtered or copied; ``of(kind)`` is those of one event class.
"""

from __future__ import annotations

from typing import TypeVar

from swarmkit.record.events import Event

__all__ = ["Events"]

E = TypeVar("E")


class Events:
    """Every event of the runs it is a sink of, in order."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def on_event(self, event: Event) -> None:
        self.events.append(event)

    def of(self, kind: type[E]) -> list[E]:
        """The events that are ``kind``, in order."""
        return [e for e in self.events if isinstance(e, kind)]
