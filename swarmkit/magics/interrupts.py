"""``InterruptGate``: where in a foreground cell a kernel interrupt may land.

A kernel interrupt is a SIGINT, which Python turns into a KeyboardInterrupt at whatever
line the cell's thread is running. Landing while the dashboard is being shown, the run
started, or the final tables put in the dashboard's place, it would leave a frozen
dashboard (or none) and a traceback, or a run going on with nobody waiting for it.
So while the gate is held an interrupt is only noted; ``waiting()`` opens the gate
around the one blocking wait (raising at once for an interrupt noted before it), and
an interrupt noted after the wait is dropped: the cell is already ending, with its one
output.

The gate needs the main thread (only it may set a signal handler); elsewhere it is
open all the time, as a cell run outside the main thread gets no SIGINT anyway.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

__all__ = ["InterruptGate"]


class InterruptGate:
    """Hold SIGINT for the life of a ``with`` block, except inside ``waiting()``."""

    def __init__(self) -> None:
        self.pending = False  # an interrupt arrived while the gate was held
        self._open = False
        self._previous: Any = None
        self._installed = False

    def __enter__(self) -> InterruptGate:
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._on_sigint)
            self._installed = True
        return self

    def __exit__(self, *exc: object) -> None:
        if self._installed:
            signal.signal(signal.SIGINT, self._previous)
            self._installed = False

    def _on_sigint(self, signum: int, frame: FrameType | None) -> None:
        if self._open:
            raise KeyboardInterrupt
        self.pending = True

    @contextmanager
    def waiting(self) -> Iterator[None]:
        """Let an interrupt land here, including one that arrived before."""
        if self.pending:
            self.pending = False
            raise KeyboardInterrupt
        self._open = True
        try:
            yield
        finally:
            self._open = False
