"""Every event to every sink, in order, with a sink that raises contained.

The engine never waits on a sink and a broken one must not break the run (a display, a
user's ``on_event``). A sink that raises is logged once with its traceback; its later
failures are only counted, and :meth:`SinkFanout.report` says how many in one line at
the end of the run, so a sink broken for every event does not flood the log with the
same traceback once per event.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from ..record.events import Event, Sink

__all__ = ["SinkFanout"]

log = logging.getLogger("swarmkit")


class SinkFanout:
    """The run's sinks, each given every event; failures logged once per sink."""

    def __init__(self, sinks: Iterable[Sink]) -> None:
        self.sinks: list[Sink] = list(sinks)
        self._failures: dict[int, int] = {}  # id(sink) -> failures after the first

    def deliver(self, event: Event) -> None:
        for sink in self.sinks:
            try:
                sink.on_event(event)
            except Exception:  # a broken display must not break the run
                self._failed(sink, event)

    def _failed(self, sink: Sink, event: Event) -> None:
        key = id(sink)
        if key in self._failures:
            self._failures[key] += 1
            return
        self._failures[key] = 0
        log.exception("swarmkit sink %r failed on %s (the run goes on; later failures "
                      "of this sink are counted, not logged)", sink, event.kind)

    def report(self) -> None:
        """One line per sink that failed again after its first traceback."""
        for sink in self.sinks:
            repeats = self._failures.get(id(sink), 0)
            if repeats:
                log.error("swarmkit sink %r failed on %d more event%s of this run "
                          "(the first traceback is above)", sink, repeats,
                          "" if repeats == 1 else "s")
                self._failures[id(sink)] = 0
