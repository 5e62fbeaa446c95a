"""History schema migrations: a swarmkit 1 file opens with nothing lost, the list is applied
once and in order, a failing step changes nothing, a newer file is refused."""

from __future__ import annotations

import sqlite3
from decimal import Decimal
from pathlib import Path

import pytest

from swarmkit.errors import StoreError
from swarmkit.records import CallRecord, ToolCallRecord, WorkerRecord
from swarmkit.result import Run
from swarmkit.store import Database, History
from swarmkit.store.cassette import Cassette, RecordedCall
from swarmkit.store.database import SCHEMA_VERSION
from swarmkit.store.history import _cassette_job, _run_job
from swarmkit.store.migrations import MIGRATIONS, Migration
from swarmkit.usage import Usage

# swarmkit 1's database._SCHEMA, copied verbatim: the file below is made the way 1.x
# made it, independently of the migration that now claims to make the same schema.
V1_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY, task TEXT NOT NULL, started_at TEXT NOT NULL,
    status TEXT NOT NULL, answer TEXT, error TEXT, duration REAL NOT NULL,
    workers INTEGER NOT NULL, calls INTEGER NOT NULL, prompt_tokens INTEGER,
    completion_tokens INTEGER, cost_usd TEXT, models TEXT NOT NULL, config TEXT NOT NULL,
    run_json TEXT NOT NULL, saved REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS runs_by_saved ON runs (saved);
CREATE TABLE IF NOT EXISTS calls (
    run_id TEXT NOT NULL, seq INTEGER NOT NULL, step TEXT NOT NULL, role TEXT NOT NULL,
    model TEXT NOT NULL, source TEXT NOT NULL, attempts INTEGER NOT NULL,
    prompt_tokens INTEGER, completion_tokens INTEGER, cached_tokens INTEGER,
    reasoning_tokens INTEGER, requests INTEGER NOT NULL, cost_usd TEXT,
    started REAL NOT NULL, latency REAL NOT NULL, fingerprint TEXT NOT NULL,
    occurrence INTEGER NOT NULL, error TEXT, status INTEGER,
    PRIMARY KEY (run_id, seq)
);
CREATE TABLE IF NOT EXISTS tool_calls (
    run_id TEXT NOT NULL, seq INTEGER NOT NULL, worker INTEGER NOT NULL, hop INTEGER NOT NULL,
    call_id TEXT NOT NULL, tool TEXT NOT NULL, arguments TEXT NOT NULL, result TEXT,
    error TEXT, started REAL NOT NULL, duration REAL NOT NULL, source TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
);
CREATE TABLE IF NOT EXISTS cassettes (
    run_id TEXT PRIMARY KEY, cassette TEXT NOT NULL, saved REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS cache (
    fingerprint TEXT NOT NULL, occurrence INTEGER NOT NULL, model TEXT NOT NULL,
    response TEXT NOT NULL, usage TEXT NOT NULL, created REAL NOT NULL,
    PRIMARY KEY (fingerprint, occurrence)
);
"""
RUN_ID = "v1run0001"


def saved_run() -> Run:
    call = CallRecord(step="worker-1", role="worker", model="m", source="live",
                      usage=Usage(10, 5, 0, 0, 1), cost_usd=Decimal("0.01"), started=0.1,
                      latency=0.2, attempts=1, fingerprint="f" * 64, error=None)
    tool = ToolCallRecord(worker=1, hop=1, call_id="c1", tool="lookup", arguments="{}",
                          result="ok", error=None, started=0.15, duration=0.01)
    worker = WorkerRecord(index=1, task="sub", status="completed", output="done",
                          usage=call.usage, cost_usd=call.cost_usd, calls=1)
    return Run(run_id=RUN_ID, task="task", config={"worker": {"model": "m"}},
               started_at="2026-01-01T00:00:00+00:00", status="completed", plan=["sub"],
               workers=[worker], calls=[call], tool_calls=[tool], answer="done",
               duration=1.25)


def saved_cassette() -> Cassette:
    call = RecordedCall(step="worker-1", role="worker", fingerprint="f" * 64, occurrence=0,
                        request={"model": "m", "messages": []},
                        response={"content": "done", "usage": None, "tool_calls": None,
                                  "finish_reason": "stop", "model": "m"},
                        source="live", started=0.1, latency=0.2, attempts=1,
                        cost_usd=Decimal("0.01"))
    return Cassette(run={"run_id": RUN_ID, "started_at": "2026-01-01T00:00:00+00:00",
                         "task": "task", "duration": 1.25}, calls=(call,))


def make_v1_file(path: Path) -> Path:
    """A history file as swarmkit 1's Database made it, holding one saved run and its
    cassette (written by the row writers 1.x used, unchanged since)."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("BEGIN IMMEDIATE")
        for statement in V1_SCHEMA.split(";"):
            if statement.strip():
                conn.execute(statement)
        conn.execute("INSERT INTO meta VALUES ('schema', ?)", ("1",))
        conn.execute("COMMIT")
        conn.execute("BEGIN IMMEDIATE")
        _run_job(saved_run(), {})(conn)
        _cassette_job(saved_cassette(), {})(conn)
        conn.execute("COMMIT")
    finally:
        conn.close()
    return path


def dump(path: Path) -> list[str]:
    """Every table's schema and rows, as SQL text."""
    conn = sqlite3.connect(path)
    try:
        return list(conn.iterdump())
    finally:
        conn.close()


def rows(path: Path, sql: str) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(path)
    try:
        return [tuple(row) for row in conn.execute(sql)]
    finally:
        conn.close()


def schema_of(path: Path) -> list[tuple[object, ...]]:
    return rows(path, "SELECT type, name, sql FROM sqlite_master "
                      "WHERE tbl_name != '_migrations' ORDER BY name")


def applied(path: Path) -> list[str]:
    return [str(r[0]) for r in rows(path, "SELECT name FROM _migrations ORDER BY rowid")]


def meta_version(path: Path) -> str:
    return str(rows(path, "SELECT value FROM meta WHERE key = 'schema'")[0][0])


def test_a_v1_file_opens_with_its_run_calls_and_cassette_intact(tmp_path: Path) -> None:
    path = make_v1_file(tmp_path / "history.db")
    before = dump(path)
    with History(path) as history:
        assert history.load_run(RUN_ID).to_dict() == saved_run().to_dict()
        assert history.calls(RUN_ID) == saved_run().calls
        assert history.tool_calls(RUN_ID) == saved_run().tool_calls
        cassette = history.cassette(RUN_ID)
        assert cassette is not None and cassette.to_dict() == saved_cassette().to_dict()
    assert meta_version(path) == str(SCHEMA_VERSION) == str(len(MIGRATIONS))
    assert applied(path) == [m.name for m in MIGRATIONS]
    # Recognised as already at 1: nothing re-run, no row or table of 1.x changed.
    assert [line for line in dump(path) if "_migrations" not in line] == before


def test_a_v1_file_is_recognised_as_at_1_without_running_the_first_migration(
    tmp_path: Path,
) -> None:
    path = make_v1_file(tmp_path / "history.db")
    ran: list[str] = []

    def first(conn: sqlite3.Connection) -> None:
        ran.append("m001")
        MIGRATIONS[0].apply(conn)

    Database(path, migrations=(Migration("m001_initial", first),)).close()
    Database(tmp_path / "new.db", migrations=(Migration("m001_initial", first),)).close()
    assert ran == ["m001"]  # only for the new file
    assert applied(path) == applied(tmp_path / "new.db") == ["m001_initial"]


def test_a_new_file_gets_exactly_the_v1_schema(tmp_path: Path) -> None:
    Database(tmp_path / "new.db").close()
    v1 = make_v1_file(tmp_path / "v1.db")
    assert schema_of(tmp_path / "new.db") == schema_of(v1)
    assert applied(tmp_path / "new.db") == ["m001_initial"]
    assert meta_version(tmp_path / "new.db") == "1"


def test_opening_an_up_to_date_file_again_changes_nothing(tmp_path: Path) -> None:
    path = make_v1_file(tmp_path / "history.db")
    Database(path).close()
    once = dump(path)
    Database(path).close()
    assert dump(path) == once


def test_an_appended_migration_is_applied_once_and_in_order_to_a_v1_file(
    tmp_path: Path,
) -> None:
    path = make_v1_file(tmp_path / "history.db")
    ran: list[str] = []

    def add_note(conn: sqlite3.Connection) -> None:
        ran.append("note")
        conn.execute("ALTER TABLE runs ADD COLUMN note TEXT")

    def fill_note(conn: sqlite3.Connection) -> None:
        ran.append("fill")  # needs add_note's column: fails if run out of order
        conn.execute("UPDATE runs SET note = 'kept'")

    extended = (*MIGRATIONS, Migration("m002_test_note", add_note),
                Migration("m003_test_fill", fill_note))
    Database(path, migrations=extended).close()
    Database(path, migrations=extended).close()
    assert ran == ["note", "fill"]
    assert applied(path) == ["m001_initial", "m002_test_note", "m003_test_fill"]
    assert meta_version(path) == "3"
    assert rows(path, "SELECT run_id, note FROM runs") == [(RUN_ID, "kept")]
    # This swarmkit knows only m001: the file is now from a newer one.
    with pytest.raises(StoreError, match=r"written by a newer swarmkit \(schema 3\)"):
        History(path)


def test_a_failing_migration_leaves_the_file_as_it_was(tmp_path: Path) -> None:
    path = make_v1_file(tmp_path / "history.db")
    before = dump(path)

    def add_note(conn: sqlite3.Connection) -> None:
        conn.execute("ALTER TABLE runs ADD COLUMN note TEXT")

    def broken(conn: sqlite3.Connection) -> None:
        conn.execute("UPDATE runs SET note = 'half'")
        conn.execute("ALTER TABLE no_such_table ADD COLUMN x TEXT")

    extended = (*MIGRATIONS, Migration("m002_test_note", add_note),
                Migration("m003_test_broken", broken))
    with pytest.raises(StoreError) as caught:
        Database(path, migrations=extended)
    message = str(caught.value)
    assert "\n" not in message
    assert "migration m003_test_broken failed (no such table: no_such_table)" in message
    assert "nothing was changed" in message and "History.reset(" in message
    assert dump(path) == before  # no _migrations table, no note column, no meta change
    with History(path) as history:  # and the real list still opens it
        assert history.load_run(RUN_ID).answer == "done"


def test_a_migration_that_commits_its_transaction_is_refused(tmp_path: Path) -> None:
    def commits(conn: sqlite3.Connection) -> None:
        conn.executescript("CREATE TABLE IF NOT EXISTS scratch (a TEXT);")

    with pytest.raises(StoreError, match=r"^migration m002_test_commits committed the "
                                         r"transaction .*conn\.execute only$"):
        Database(tmp_path / "history.db",
                 migrations=(*MIGRATIONS, Migration("m002_test_commits", commits)))


@pytest.mark.parametrize(
    ("meta", "names", "shown"),
    [
        ("99", None, "schema 99"),
        ("2", ["m001_initial", "m002_from_the_future"], "schema 2"),
        ("1", ["m001_future_rename"], "unknown migration 'm001_future_rename'"),
    ],
    ids=["meta-version-past-the-list", "more-migrations-than-known", "unknown-name"],
)
def test_a_file_from_a_newer_swarmkit_is_refused_and_left_alone(
    tmp_path: Path, meta: str, names: list[str] | None, shown: str
) -> None:
    path = make_v1_file(tmp_path / "history.db")
    Database(path).close()
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("UPDATE meta SET value = ? WHERE key = 'schema'", (meta,))
        if names is not None:
            conn.execute("DELETE FROM _migrations")
            conn.executemany("INSERT INTO _migrations VALUES (?, 0)", [(n,) for n in names])
    finally:
        conn.close()
    before = dump(path)
    with pytest.raises(StoreError) as caught:
        History(path)
    message = str(caught.value)
    assert "\n" not in message and shown in message
    assert "written by a newer swarmkit" in message and "upgrade swarmkit" in message
    assert dump(path) == before
