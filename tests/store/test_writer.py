"""The background writer: jobs land in order, one transaction each, a failing job loses
only itself, and a run's save waits for the cell while cache entries do not."""

from __future__ import annotations

import sqlite3
import threading
from contextlib import closing
from pathlib import Path

import pytest

from swarmkit.errors import StoreError
from swarmkit.store.writethread import Writer


def _writer(path: Path, statements: list[str]) -> Writer:
    def connect() -> sqlite3.Connection:
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        conn.execute("CREATE TABLE IF NOT EXISTS t (n INTEGER PRIMARY KEY)")
        conn.set_trace_callback(statements.append)
        return conn

    return Writer(path, connect, lambda exc: StoreError(f"write failed: {exc}"))


def _insert(n: int):  # type: ignore[no-untyped-def]
    return lambda conn: conn.execute("INSERT INTO t VALUES (?)", (n,))


def _rows(path: Path) -> list[int]:
    # sqlite3's own context manager ends a transaction, not the connection: closing() does.
    with closing(sqlite3.connect(path)) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS t (n INTEGER PRIMARY KEY)")
        return [n for (n,) in conn.execute("SELECT n FROM t ORDER BY n")]


def test_a_failing_job_loses_only_itself_and_reports_once(tmp_path: Path) -> None:
    path, statements = tmp_path / "w.db", []
    writer = _writer(path, statements)
    errors: list[StoreError] = []
    started, busy = threading.Event(), threading.Event()
    # A first job holds the writer while the others are queued behind it.
    writer.submit(lambda conn: (started.set(), busy.wait(10)), errors.append)
    assert started.wait(10)
    writer.submit(_insert(1), errors.append)
    writer.submit(_insert(1), errors.append)  # a duplicate key: this one fails
    writer.submit(_insert(2), errors.append)
    busy.set()
    writer.close()
    writer.join()
    # Queued together, the three jobs are one transaction (one commit after the first
    # job's); the failing one rolled back to its own savepoint, so the others were kept.
    assert statements.count("COMMIT") == 2 and statements.count("ROLLBACK TO job") == 1
    assert _rows(path) == [1, 2]
    assert len(errors) == 1 and "UNIQUE constraint failed" in str(errors[0])


def test_a_job_that_raises_a_bug_is_logged_and_the_thread_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path, statements = tmp_path / "w.db", []
    writer = _writer(path, statements)
    errors: list[StoreError] = []

    def broken(conn: sqlite3.Connection) -> None:
        conn.execute("INSERT INTO t VALUES (7)")
        raise KeyError("a bug")

    writer.submit(broken, errors.append)
    writer.submit(_insert(8), errors.append)
    writer.close()
    writer.join()
    assert _rows(path) == [8]  # the broken job's own insert was rolled back
    assert errors == [] and "a history write failed" in caplog.text


def test_deferrable_writes_wait_for_a_writes_deferred_block_and_urgent_ones_do_not(
    tmp_path: Path,
) -> None:
    import time

    from swarmkit.store.writethread import writes_deferred

    path, statements = tmp_path / "w.db", []
    writer = _writer(path, statements)
    with writes_deferred():
        writer.submit(_insert(1), lambda exc: None)
        writer.submit(_insert(2), lambda exc: None, deferrable=True)  # a run's save
        writer.submit(_insert(3), lambda exc: None)
        writer.close()
        deadline = time.monotonic() + 10
        while _rows(path) != [1, 3] and time.monotonic() < deadline:
            time.sleep(0.02)
        assert _rows(path) == [1, 3]  # the urgent ones landed; the save waits
        time.sleep(0.2)
        assert _rows(path) == [1, 3]
    writer.join(timeout=10)
    assert _rows(path) == [1, 2, 3]


def test_waiting_for_the_writes_ends_a_deferral(tmp_path: Path) -> None:
    from swarmkit.store.writethread import writes_deferred

    path, statements = tmp_path / "w.db", []
    writer = _writer(path, statements)
    with writes_deferred():
        writer.submit(_insert(1), lambda exc: None, deferrable=True)
        writer.close()
        writer.join(timeout=10)  # a reader of the same file, or the interpreter's exit
        assert writer._thread is not None and not writer._thread.is_alive()
        assert _rows(path) == [1]


def test_a_database_that_cannot_be_opened_reports_every_job(tmp_path: Path) -> None:
    errors: list[StoreError] = []

    def connect() -> sqlite3.Connection:
        raise StoreError("history database is corrupt; run History.reset")

    writer = Writer(tmp_path / "w.db", connect, lambda exc: StoreError(str(exc)))
    writer.submit(_insert(1), errors.append)
    writer.submit(_insert(2), errors.append)
    writer.close()
    writer.join(timeout=10)
    assert [str(e) for e in errors] == ["history database is corrupt; run History.reset"] * 2
