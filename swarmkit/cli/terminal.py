"""A run in the terminal: Ctrl-C from the command's first moment, and its exit status.

The ``jswarm`` command (``swarmkit.cli``) installs :data:`CTRL_C` as the SIGINT handler
before it parses a word. Before a run's event loop exists the handler raises
KeyboardInterrupt (the command says one line, exit 130); while the run is being built
(imports, the embedded model starting) it cancels the task that builds it; once the
engine exists it cancels the engine, which keeps the finished workers (in the history
too, so the run can be resumed). The loop runs on the main thread, like ``asyncio.run``.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import threading
from dataclasses import dataclass, field
from typing import Any, TextIO

from ..api.entry import create_engine
from ..api.result import Run
from ..display.progress import ProgressLine
from .exitcodes import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_PARTIAL,
    EXIT_TIMED_OUT,
)

__all__ = ["CTRL_C", "CtrlC", "Interrupted", "execute", "exit_code", "exit_now_if_stuck"]

class Interrupted(Exception):
    """Ctrl-C before a run existed: nothing to keep, nothing to show."""


@dataclass
class CtrlC:
    """The SIGINT handler for the whole command, from its first moment.

    Before a run's loop exists it raises KeyboardInterrupt (``main`` says one line); while
    the run is being built (imports, the embedded model starting) it cancels the task that
    builds it; once the engine exists it cancels the engine, which keeps what finished.
    """

    loop: asyncio.AbstractEventLoop | None = None
    task: asyncio.Task[Any] | None = None
    engine: Any = None
    previous: Any = field(default=None, repr=False)

    def __call__(self, signum: int, frame: Any) -> None:
        loop = self.loop
        if loop is None:
            raise KeyboardInterrupt
        try:
            if self.engine is not None:
                loop.call_soon_threadsafe(self.engine.cancel, "interrupt")
            elif self.task is not None:
                loop.call_soon_threadsafe(self.task.cancel)
        except RuntimeError:  # the loop closed between the check and the call
            raise KeyboardInterrupt from None

    def install(self) -> None:
        if threading.current_thread() is threading.main_thread():
            self.previous = signal.signal(signal.SIGINT, self)

    def restore(self) -> None:
        if self.previous is not None:
            signal.signal(signal.SIGINT, self.previous)


CTRL_C = CtrlC()


def execute(task: str, options: dict[str, Any], stream: TextIO) -> tuple[Run, str | None]:
    """The run, and why it was cancelled (``interrupt``, ``timeout``) if it was. Ctrl-C
    while it is being built raises Interrupted; once it runs it is a clean cancel."""
    progress = ProgressLine(stream)
    loop = asyncio.new_event_loop()
    engines: list[Any] = []

    async def main() -> Run:
        engine = await create_engine(sinks=[progress], **options)
        engines.append(engine)
        CTRL_C.engine = engine
        try:
            return await engine.execute(task)
        finally:
            await engine.caller.aclose()

    task_ = loop.create_task(main())
    CTRL_C.loop, CTRL_C.task = loop, task_
    try:
        run = loop.run_until_complete(task_)
    except asyncio.CancelledError:
        raise Interrupted from None
    finally:
        CTRL_C.loop = CTRL_C.task = CTRL_C.engine = None
        loop.close()
    return run, (engines[0].halt.cancel if engines else None)


def exit_code(run: Run, cancelled: str | None) -> int:
    if run.status == "cancelled":
        return EXIT_TIMED_OUT if cancelled == "timeout" else EXIT_INTERRUPTED
    return {"completed": EXIT_OK, "partial": EXIT_PARTIAL,
            "stopped": EXIT_PARTIAL}.get(run.status, EXIT_FAILED)


def exit_now_if_stuck() -> None:
    """Exit at once when a worker thread still runs (the embedded model starting, which
    cannot be interrupted): Python would wait for it at exit, for up to its start-up
    timeout. The model's process exits by itself once this one is gone."""
    if threading.current_thread() is not threading.main_thread():
        return
    if any(not t.daemon and t is not threading.current_thread() for t in threading.enumerate()):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(EXIT_INTERRUPTED)
