"""Waiting for something another thread or process does, without a fixed sleep."""

from __future__ import annotations

import time
from collections.abc import Callable

__all__ = ["wait_until"]


def wait_until(
    condition: Callable[[], object], timeout: float = 20.0, interval: float = 0.02
) -> bool:
    """Poll ``condition`` until it is true or ``timeout`` seconds pass; its last value.

    For asserting on what a server, a kernel or a background run does in its own time:
    ``assert wait_until(lambda: server.in_flight == 0)``.
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(interval)
    return bool(condition())
