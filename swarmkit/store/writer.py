"""Writes off the event loop: a thread per database that applies queued writes in order.

Saving a 1,000-worker run (its JSON, its call rows, its cassette) takes a good part of
a second of CPU on a small machine; done inside the engine's last event it would hold
the run's return and the event loop. Queued here, the run returns at once.

Readers in this process see every queued write: opening a database first waits for the
writes still pending on the same file (:func:`wait_for_writes`), and the interpreter
waits for them at exit.
"""

from __future__ import annotations

import atexit
import logging
import queue
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path

from ..errors import StoreError

__all__ = ["Job", "Writer", "wait_for_writes"]

log = logging.getLogger("swarmkit")

# A job writes inside the transaction it is given; on_error gets a one-line StoreError.
Job = Callable[[sqlite3.Connection], None]
ErrorHandler = Callable[[StoreError], None]
# Longest wait for pending writes at exit or before opening the same file.
FLUSH_TIMEOUT = 30.0
# After a write, the thread lets more jobs gather for this long and applies them in one
# transaction. One wake-up per call (a cached response each) made the writer trade the
# GIL with the event loop a thousand times in a 1,000-worker run; batched, it is a few
# dozen. A reader in this process never sees the delay (see wait_for_writes).
LINGER = 0.05
_MAX_BATCH = 500

_live: set[Writer] = set()
_live_lock = threading.Lock()


def _key(path: Path) -> Path:
    return path.resolve()


class Writer:
    """Applies jobs to one database file from its own thread and connection."""

    def __init__(
        self,
        path: Path,
        connect: Callable[[], sqlite3.Connection],
        describe: Callable[[sqlite3.Error], StoreError],
    ) -> None:
        self.path = path
        self._connect = connect
        self._describe = describe
        self._queue: queue.SimpleQueue[tuple[Job, ErrorHandler] | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._closed = False
        self._closing = threading.Event()  # cuts a linger short

    def submit(self, job: Job, on_error: ErrorHandler) -> None:
        with self._lock:
            if self._closed:
                raise StoreError(f"history database {self.path} is closed; open a new History")
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._serve, name="swarmkit-history-writer", daemon=True
                )
                with _live_lock:
                    _live.add(self)
                self._thread.start()
            self._queue.put((job, on_error))

    def close(self) -> None:
        """Finish the queued jobs, then stop; returns at once."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._closing.set()
            if self._thread is not None:
                self._queue.put(None)

    @property
    def closing(self) -> bool:
        return self._closed

    def join(self, timeout: float | None = FLUSH_TIMEOUT) -> None:
        thread = self._thread
        if thread is not None:
            thread.join(timeout)

    def _serve(self) -> None:
        conn: sqlite3.Connection | None = None
        try:
            stopping = False
            while not stopping:
                batch, stopping = self._next_batch()
                if not batch:
                    continue
                try:
                    conn = conn or self._connect()
                    self._apply(conn, batch)
                except sqlite3.Error as exc:  # BEGIN or COMMIT failed: every job is lost
                    for _, on_error in batch:
                        on_error(self._describe(exc))
        finally:
            if conn is not None:
                conn.close()
            with _live_lock:
                _live.discard(self)

    def _next_batch(self) -> tuple[list[tuple[Job, ErrorHandler]], bool]:
        """The jobs to apply together, and whether the writer was asked to stop."""
        item = self._queue.get()
        if item is None:
            return [], True
        batch = [item]
        self._closing.wait(LINGER)  # once closing, what is queued is finished at once
        while len(batch) < _MAX_BATCH:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if item is None:
                return batch, True
            batch.append(item)
        return batch, False

    def _apply(self, conn: sqlite3.Connection, batch: list[tuple[Job, ErrorHandler]]) -> None:
        """One transaction; each job in a savepoint, so a failing job loses only itself."""
        conn.execute("BEGIN IMMEDIATE")
        try:
            for job, on_error in batch:
                conn.execute("SAVEPOINT job")
                try:
                    job(conn)
                except BaseException as exc:
                    conn.execute("ROLLBACK TO job")
                    conn.execute("RELEASE job")
                    self._report(exc, on_error)
                else:
                    conn.execute("RELEASE job")
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    def _report(self, exc: BaseException, on_error: ErrorHandler) -> None:
        if isinstance(exc, sqlite3.Error):
            on_error(self._describe(exc))
        elif isinstance(exc, StoreError):
            on_error(exc)
        elif isinstance(exc, Exception):  # a bug must not kill the thread and lose later writes
            log.exception("swarmkit: a history write failed", exc_info=exc)
        else:
            raise exc


def wait_for_writes(path: Path | None = None, timeout: float = FLUSH_TIMEOUT) -> None:
    """Block until the writes queued on ``path`` (or on every file) are applied.

    Only closed writers finish; an open one is still in use by a running store.
    """
    with _live_lock:
        writers = [w for w in _live if path is None or _key(w.path) == _key(path)]
    for writer in writers:
        if writer.closing:
            writer.join(timeout)


def _flush_at_exit() -> None:
    # atexit runs before daemon threads are stopped: let every queued write land.
    with _live_lock:
        writers = list(_live)
    for writer in writers:
        writer.close()
        writer.join()


atexit.register(_flush_at_exit)
