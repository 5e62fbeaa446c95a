"""The SQLite file behind the cache and the run history.

Several kernels may write one file at once, so it runs in WAL mode with a busy timeout,
and every write is one short ``BEGIN IMMEDIATE`` transaction; opening a file brings its
schema up to date with :mod:`.migrations` in one such transaction. SQLite errors never leave
this module raw: they become a one-line :class:`~swarmkit.errors.StoreError` that says
what to do (a corrupt file is moved aside with :func:`reset_database`).
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from ..errors import StoreError
from .migrations import MIGRATIONS, Migration, migrate, schema_version
from .writethread import Job, Writer, wait_for_writes

__all__ = ["SCHEMA_VERSION", "Database", "reset_database"]

SCHEMA_VERSION = schema_version(MIGRATIONS)
# How long a writer waits for another process's transaction before giving up.
BUSY_TIMEOUT_MS = 10_000

_CORRUPT_CODES = {"SQLITE_CORRUPT", "SQLITE_NOTADB"}


def _is_corrupt(exc: sqlite3.Error) -> bool:
    # Extended codes (SQLITE_CORRUPT_INDEX, ...) share the primary code's prefix.
    name = getattr(exc, "sqlite_errorname", "") or ""
    return any(name.startswith(code) for code in _CORRUPT_CODES)


def _store_error(path: Path, exc: sqlite3.Error) -> StoreError:
    if _is_corrupt(exc):
        return StoreError(
            f"history database {path} is corrupt ({exc}); move it aside with "
            f"swarmkit.store.History.reset({str(path)!r}) and a new one will be created"
        )
    return StoreError(
        f"history database {path} cannot be used ({exc}); check the file's permissions and "
        "free disk space, or point history_path elsewhere"
    )


def _enable_wal(conn: sqlite3.Connection) -> None:
    """Switch to WAL. On a new file, processes opening it at once race for the exclusive
    lock this needs, and SQLite answers the loser with SQLITE_BUSY at once (deadlock
    avoidance skips the busy handler), so it is retried here up to the busy timeout."""
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            busy = getattr(exc, "sqlite_errorname", "") == "SQLITE_BUSY"
            if not busy or time.monotonic() > deadline:
                raise
            time.sleep(0.01)


class Database:
    """The history file: a connection for reads and quick writes, shared by threads under
    a lock, and a background :class:`Writer` for the big writes (:meth:`write_later`)."""

    def __init__(self, path: str | Path, *,
                 migrations: Sequence[Migration] = MIGRATIONS) -> None:
        """Open (creating or upgrading) the file at ``path``. ``migrations`` is the schema
        to bring it to; anything but the default :data:`MIGRATIONS` is for tests."""
        # Absolute now: the writer thread connects later, after the cwd may have changed
        # (a notebook's %cd, a test's chdir), and must still write where the run was made.
        self.path = Path(path).absolute()
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._migrations = tuple(migrations)
        self._writer = Writer(self.path, self._open, lambda exc: _store_error(self.path, exc))
        wait_for_writes(self.path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(
                f"cannot create the folder for history database {self.path} ({exc}); "
                "point history_path at a writable place"
            ) from None
        try:
            self._conn = self._connect()
        except sqlite3.Error as exc:
            self.close()
            raise _store_error(self.path, exc) from None
        except BaseException:
            self.close()
            raise

    def _open(self) -> sqlite3.Connection:
        # isolation_level=None: transactions are explicit, so each one stays short.
        conn = sqlite3.connect(
            self.path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None,
            check_same_thread=False,
        )
        try:
            conn.row_factory = sqlite3.Row
            conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            _enable_wal(conn)
            conn.execute("PRAGMA synchronous=NORMAL")
        except BaseException:
            conn.close()
            raise
        return conn

    def _connect(self) -> sqlite3.Connection:
        conn = self._open()
        self._conn = conn
        # One transaction for the whole upgrade: a second process opening the same file
        # waits here and then finds it migrated; a failed migration leaves it untouched.
        conn.execute("BEGIN IMMEDIATE")
        try:
            migrate(conn, self.path, self._migrations)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        return conn

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One short write transaction; rolled back if the block raises."""
        with self._lock:
            conn = self._require()
            try:
                conn.execute("BEGIN IMMEDIATE")
                yield conn
                conn.execute("COMMIT")
            except sqlite3.Error as exc:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise _store_error(self.path, exc) from None
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise

    def write_later(self, job: Job, on_error: Callable[[StoreError], None], *,
                    deferrable: bool = False) -> None:
        """Queue ``job`` for the background writer (one transaction); errors go to
        ``on_error`` on the writer's thread. See :func:`writes_deferred` for
        ``deferrable``."""
        if self._conn is None:
            raise StoreError(f"history database {self.path} is closed; open a new History")
        self._writer.submit(job, on_error, deferrable=deferrable)

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        with self._lock:
            try:
                return self._require().execute(sql, params).fetchall()
            except sqlite3.Error as exc:
                raise _store_error(self.path, exc) from None

    def _require(self) -> sqlite3.Connection:
        if self._conn is None:
            raise StoreError(f"history database {self.path} is closed; open a new History")
        return self._conn

    def close(self) -> None:
        """Close now; queued writes still land (the writer finishes them, then stops)."""
        self._writer.close()
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


def reset_database(path: str | Path) -> Path:
    """Move a (corrupt) database aside as ``<name>.corrupt-<n>``; return where it went.

    Its ``-wal`` and ``-shm`` companions move with it, so the new file starts clean.
    """
    path = Path(path)
    n = 1
    while any(path.with_name(f"{path.name}.corrupt-{n}{s}").exists() for s in ("", "-wal")):
        n += 1
    target = path.with_name(f"{path.name}.corrupt-{n}")
    for suffix in ("", "-wal", "-shm"):
        source = path.with_name(path.name + suffix)
        if source.exists():
            source.rename(target.with_name(target.name + suffix))
    return target
