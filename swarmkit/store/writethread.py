"""Writes off the event loop: a thread per database that applies queued writes in order.

Saving a large run (its JSON, its call rows, its cassette) takes real CPU; done inside
the engine's last event it would hold the run's return and the event loop, and a cached
response written on the loop would hold every call behind it. Queued here, the run
returns at once. The writes queued together are applied in one transaction (a
batch: one commit, not one per answer), each job in its own savepoint, so a failing
job loses only itself. The
thread and the deferral are measured in benchmarks/README.md, "Machinery kept and
dropped".

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
# The longest a deferrable write waits for writes_deferred() blocks to end.
DEFER_LIMIT = 5.0
# The most queued writes applied in one transaction. A hard kill (a dead kernel) loses
# the writes still queued: at most this many answers, which a resume asks again.
BATCH = 256
# How often the writer looks at the holds while a deferrable write waits.
_LOOK_AGAIN = 0.05

_live: set[Writer] = set()
_live_lock = threading.Lock()
_holds = 0  # writes_deferred() blocks running now, in any thread
_holds_lock = threading.Lock()


@contextmanager
def writes_deferred() -> Iterator[None]:
    """While the block runs, deferrable writes (a finished run, its cassette) wait.

    ``%%swarm`` wraps its cell in it: saving a run is JSON work on the writer's thread,
    which would otherwise share the GIL with the cell rendering that run's tables.
    Anyone who waits for the writes (wait_for_writes, the interpreter's exit) ends the
    wait at once; it never lasts more than DEFER_LIMIT seconds.
    """
    global _holds
    with _holds_lock:
        _holds += 1
    try:
        yield
    finally:
        with _holds_lock:
            _holds -= 1


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
            if self._thread is not None:
                self._queue.put(None)

    @property
    def closing(self) -> bool:
        return self._closed

    def join(self, timeout: float | None = FLUSH_TIMEOUT) -> None:
        """Wait for the queued writes, deferred ones included, and the thread."""
        self._joined.set()
        thread = self._thread
        if thread is not None:
            thread.join(timeout)

    def _serve(self) -> None:
        conn: sqlite3.Connection | None = None
        held: list[tuple[Job, ErrorHandler]] = []  # a run's saves, waiting for the cell
        deadline = 0.0
        stopping = False
        try:
            while not stopping or held:
                if held and (not _holds or self._joined.is_set()
                             or time.monotonic() > deadline):
                    for job, on_error in held:
                        conn = self._apply(conn, job, on_error)
                    held = []
                    continue
                try:  # while saves are held, look again at the holds every slice
                    item = self._queue.get(timeout=_LOOK_AGAIN if held else None)
                except queue.Empty:
                    continue
                batch: list[tuple[Job, ErrorHandler]] = []
                while True:
                    if item is None:
                        stopping = True
                    elif item[2]:  # deferrable; cache entries never wait
                        deadline = deadline if held else time.monotonic() + DEFER_LIMIT
                        held.append(item[:2])
                    else:
                        batch.append(item[:2])
                    if stopping or len(batch) >= BATCH:
                        break
                    try:  # what is queued already joins this batch
                        item = self._queue.get_nowait()
                    except queue.Empty:
                        break
                if batch:
                    conn = self._apply_batch(conn, batch)
        finally:
            if conn is not None:
                conn.close()
            with _live_lock:
                _live.discard(self)

    def _apply_batch(
        self, conn: sqlite3.Connection | None, batch: list[tuple[Job, ErrorHandler]]
    ) -> sqlite3.Connection | None:
        """The queued jobs in one transaction (one commit, not one per answer), each in
        its own savepoint so a failing job still loses only itself."""
        if len(batch) == 1:
            return self._apply(conn, *batch[0])
        try:
            conn = conn or self._connect()
            conn.execute("BEGIN IMMEDIATE")
        except Exception as exc:
            for _, on_error in batch:
                self._report(exc, on_error)
            return conn
        try:
            for job, on_error in batch:
                conn.execute("SAVEPOINT job")
                try:
                    job(conn)
                    conn.execute("RELEASE job")
                except Exception as exc:
                    conn.execute("ROLLBACK TO job")
                    conn.execute("RELEASE job")
                    self._report(exc, on_error)
            conn.execute("COMMIT")
        except BaseException as exc:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            if not isinstance(exc, Exception):
                raise
            for _, on_error in batch:
                self._report(exc, on_error)
        return conn

    def _apply(
        self, conn: sqlite3.Connection | None, job: Job, on_error: ErrorHandler
    ) -> sqlite3.Connection | None:
        """``job`` in one transaction; its failure goes to ``on_error`` (a bug: the log)."""
        try:
            conn = conn or self._connect()
            conn.execute("BEGIN IMMEDIATE")
            try:
                job(conn)
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:  # some errors end the transaction themselves
                    conn.execute("ROLLBACK")
                raise
        except Exception as exc:
            self._report(exc, on_error)
        return conn

    def _report(self, exc: Exception, on_error: ErrorHandler) -> None:
        if isinstance(exc, sqlite3.Error):
            on_error(self._describe(exc))
        elif isinstance(exc, StoreError):
            on_error(exc)
        else:  # a bug must not kill the thread and lose later writes
            log.exception("swarmkit: a history write failed", exc_info=exc)


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
