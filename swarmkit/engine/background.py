"""One background event-loop thread per process, for running swarms from sync code.

A Jupyter kernel already runs a loop on its main thread, and nest-asyncio is not an
option (see DESIGN.md), so synchronous callers hand coroutines to this thread and wait
on the future in short slices, which lets a KeyboardInterrupt reach the main thread.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

__all__ = ["BackgroundLoop", "background_loop", "run_blocking"]

T = TypeVar("T")

# How often a waiting thread wakes to let KeyboardInterrupt in.
WAIT_SLICE = 0.1


class BackgroundLoop:
    """An asyncio loop in a daemon thread, alive until the process exits."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._serve, name="swarmkit-loop", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def call_soon(self, callback: Callable[..., Any], *args: Any) -> None:
        self.loop.call_soon_threadsafe(callback, *args)

    def wait(self, future: concurrent.futures.Future[T]) -> T:
        """Block until done, waking every WAIT_SLICE so Ctrl-C / kernel interrupts land."""
        while True:
            try:
                return future.result(timeout=WAIT_SLICE)
            except concurrent.futures.TimeoutError:
                continue

    def stop(self) -> None:
        if self.loop.is_running():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(timeout=2)


_lock = threading.Lock()
_instance: BackgroundLoop | None = None


def background_loop() -> BackgroundLoop:
    global _instance
    with _lock:
        if _instance is None or not _instance._thread.is_alive():
            _instance = BackgroundLoop()
            atexit.register(_instance.stop)
        return _instance


def run_blocking(make: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run the coroutine ``make()`` from sync code: ``asyncio.run`` where no loop runs,
    else on the background loop (inside a notebook cell, whose loop is busy)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        running = False
    else:
        running = True
    if not running:
        # Outside the except block: an error out of the run must not be chained to the
        # RuntimeError above ("During handling of the above exception, ...").
        return asyncio.run(make())
    bridge = background_loop()
    return bridge.wait(bridge.submit(make()))
