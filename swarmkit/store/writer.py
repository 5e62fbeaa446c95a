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
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from ..errors import StoreError

__all__ = ["Job", "Writer", "wait_for_writes", "writes_deferred"]

log = logging.getLogger("swarmkit")

# A job writes inside the transaction it is given; on_error gets a one-line StoreError.
Job = Callable[[sqlite3.Connection], None]
ErrorHandler = Callable[[StoreError], None]
_Item = tuple[Job, ErrorHandler, bool]  # the job, its error handler, deferrable
# Longest wait for pending writes at exit or before opening the same file.
FLUSH_TIMEOUT = 30.0
# After a write, the thread lets more jobs gather for this long and applies them in one
# transaction. One wake-up per call (a cached response each) made the writer trade the
# GIL with the event loop a thousand times in a 1,000-worker run; batched, it is a few
# dozen. A reader in this process never sees the delay (see wait_for_writes).
LINGER = 0.05
_MAX_BATCH = 500
# The longest a deferrable write waits for writes_deferred() blocks to end.
DEFER_LIMIT = 5.0

_live: set[Writer] = set()
_live_lock = threading.Lock()
_holds = 0  # writes_deferred() blocks running now, in any thread
_holds_changed = threading.Condition()


@contextmanager
def writes_deferred() -> Iterator[None]:
    """While the block runs, deferrable writes (a finished run, its cassette) wait.

    ``%%swarm`` wraps its cell in it: saving a 1,000-worker run is ~70 ms of JSON on the
    writer's thread, which would otherwise share the GIL with the cell rendering that
    run's tables. Anyone who waits for the writes (wait_for_writes, the interpreter's
    exit) ends the wait at once; it never lasts more than DEFER_LIMIT seconds.
    """
    global _holds
    with _holds_changed:
        _holds += 1
    try:
        yield
    finally:
        with _holds_changed:
            _holds -= 1
            _holds_changed.notify_all()


def _wait_for_release(joined: threading.Event) -> None:
    deadline = time.monotonic() + DEFER_LIMIT
    with _holds_changed:
        while _holds and not joined.is_set():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            _holds_changed.wait(min(remaining, 0.05))  # joined does not notify: look again


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
        self._queue: queue.SimpleQueue[_Item | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._closed = False
        self._hurry = threading.Event()  # closing: no more lingering
        self._joined = threading.Event()  # someone waits for the writes: no deferring

    def submit(self, job: Job, on_error: ErrorHandler, *, deferrable: bool = False) -> None:
        """Queue ``job``; a ``deferrable`` one waits while a writes_deferred() block runs."""
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
            self._queue.put((job, on_error, deferrable))

    def close(self) -> None:
        """Finish the queued jobs, then stop; returns at once."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._hurry.set()
            if self._thread is not None:
                self._queue.put(None)

    @property
    def closing(self) -> bool:
        return self._closed

    def join(self, timeout: float | None = FLUSH_TIMEOUT) -> None:
        """Wait for the queued writes, deferred ones included, and the thread."""
        self._joined.set()
        self._hurry.set()
        thread = self._thread
        if thread is not None:
            thread.join(timeout)

    def _serve(self) -> None:
        conn: sqlite3.Connection | None = None
        try:
            stopping = False
            while not stopping:
                batch, stopping = self._next_batch()
                urgent = [(job, on_error) for job, on_error, later in batch if not later]
                deferred = [(job, on_error) for job, on_error, later in batch if later]
                if deferred:
                    # The cache's entries go now; the run's save waits for the cell.
                    conn = self._apply_batch(conn, urgent)
                    urgent = []
                    _wait_for_release(self._joined)
                conn = self._apply_batch(conn, urgent + deferred)
        finally:
            if conn is not None:
                conn.close()
            with _live_lock:
                _live.discard(self)

    def _apply_batch(
        self, conn: sqlite3.Connection | None, batch: list[tuple[Job, ErrorHandler]]
    ) -> sqlite3.Connection | None:
        if not batch:
            return conn
        try:
            conn = conn or self._connect()
            self._apply(conn, batch)
        except (sqlite3.Error, StoreError) as exc:  # no connection, or BEGIN/COMMIT failed
            for _, on_error in batch:
                self._report(exc, on_error)
        except Exception:  # a bug must not kill the thread and lose later writes
            log.exception("swarmkit: a history write failed")
        return conn

    def _next_batch(self) -> tuple[list[_Item], bool]:
        """The jobs to apply together, and whether the writer was asked to stop."""
        item = self._queue.get()
        if item is None:
            return [], True
        batch = [item]
        self._hurry.wait(LINGER)  # once closing, what is queued is finished at once
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
        """One transaction. If anything fails, the batch is applied again with each job
        in a savepoint, so a failing job loses only itself (two more statements a job,
        paid only then); what still fails at BEGIN or COMMIT reaches the caller."""
        try:
            self._transaction(conn, batch, isolated=False)
        except Exception:
            self._transaction(conn, batch, isolated=True)

    def _transaction(
        self, conn: sqlite3.Connection, batch: list[tuple[Job, ErrorHandler]], *,
        isolated: bool,
    ) -> None:
        conn.execute("BEGIN IMMEDIATE")
        try:
            for job, on_error in batch:
                if not isolated:
                    job(conn)
                    continue
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
            if conn.in_transaction:  # some errors end the transaction themselves
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
