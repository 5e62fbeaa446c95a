"""A real SIGINT for a cell that is waiting on a run, sent the way a kernel interrupt
arrives: to the main thread, from another one, once the run has got somewhere.

Contract: ``sigint_when(condition)`` must be called on the thread to interrupt (the
test's, which then runs the cell). It starts and returns a thread that polls
``condition`` (``swarmkit.testing.wait_until``, 20 seconds at most) and, once it holds,
sends that thread one SIGINT; if it never holds, no signal is sent (the test's own
assertions then fail). Join the thread after the cell returns.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable

from swarmkit.testing import wait_until

__all__ = ["sigint_when"]


def sigint_when(condition: Callable[[], object]) -> threading.Thread:
    """A started thread that sends this thread SIGINT once ``condition()`` is true."""
    target = threading.get_ident()

    def interrupt() -> None:
        if wait_until(condition):
            signal.pthread_kill(target, signal.SIGINT)

    trigger = threading.Thread(target=interrupt)
    trigger.start()
    return trigger
