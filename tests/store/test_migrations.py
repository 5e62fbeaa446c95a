"""History schema migrations: a swarmkit 1 file opens with nothing lost, the list is applied
once and in order, a failing step changes nothing, a newer file is refused."""

from __future__ import annotations

import json
import sqlite3
from decimal import Decimal
from pathlib import Path

import pytest

import swarmkit
from swarmkit.errors import StoreError
from swarmkit.store import Database, History
from swarmkit.store.database import SCHEMA_VERSION
from swarmkit.store.migrations import MIGRATIONS, Migration

# A real swarmkit 1 history (schema 1, no _migrations table) as SQL text: made by running a
# swarm with the swarmkit of the commit before migrations existed, then iterdump. Loading
# it gives the same sqlite_master and rows that swarmkit 1 left on disk, independently of
# today's schema code and row writers.
V1_DUMP = Path(__file__).with_name("data") / "history-v1.sql"
RUN_ID = "721591fde7da"
ANSWER = "Final answer merging 2 results"


def make_v1_file(path: Path) -> Path:
    """A history file as swarmkit 1 left it: WAL, schema 1, one run with its calls, tool
    calls, cassette and cache rows."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.executescript(V1_DUMP.read_text(encoding="utf-8"))
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


def test_the_v1_file_is_what_swarmkit_1_wrote(tmp_path: Path) -> None:
    path = make_v1_file(tmp_path / "history.db")
    assert meta_version(path) == "1"
    assert not rows(path, "SELECT name FROM sqlite_master WHERE name = '_migrations'")
    counts = [rows(path, f"SELECT count(*) FROM {t}")[0][0]
              for t in ("runs", "calls", "tool_calls", "cassettes", "cache")]
    assert counts == [1, 6, 2, 1, 6]


def test_a_v1_file_opens_with_its_run_calls_and_cassette_intact(tmp_path: Path) -> None:
    path = make_v1_file(tmp_path / "history.db")
    before = dump(path)
    stored = json.loads(str(rows(path, "SELECT run_json FROM runs")[0][0]))
    with History(path) as history:
        [summary] = history.recent(5)
        assert (summary.run_id, summary.status, summary.workers, summary.calls) == (
            RUN_ID, "completed", 2, 6)
        assert summary.cost_usd == Decimal("0.0003696")
        assert summary.task == "Where are orders A-1001 and A-1002?"
        run = history.load_run(RUN_ID[:4])
        assert run.to_dict() == stored
        assert history.calls(RUN_ID) == run.calls and len(run.calls) == 6
        assert history.tool_calls(RUN_ID) == run.tool_calls
        assert [(t.tool, t.arguments) for t in run.tool_calls] == [
            ("lookup", '{"order_id": "A-1001"}')] * 2
        cassette = history.cassette(RUN_ID)
        assert cassette is not None
        assert [c.step for c in cassette.calls] == [c.step for c in run.calls]
    assert meta_version(path) == str(SCHEMA_VERSION) == str(len(MIGRATIONS))
    assert applied(path) == [m.name for m in MIGRATIONS]
    # Recognised as already at 1: nothing re-run, no row or table of 1.x changed (the
    # cache rows included) but the schema version; the later migrations only added tables.
    after = [line for line in dump(path)
             if "_migrations" not in line and "json_parts" not in line]
    assert after == [line.replace("('schema','1')", f"('schema','{SCHEMA_VERSION}')")
                     for line in before]


def test_a_run_from_a_v1_file_loads_as_a_run_with_tables(tmp_path: Path) -> None:
    path = make_v1_file(tmp_path / "history.db")
    run = swarmkit.load_run(RUN_ID, history_path=path)
    assert isinstance(run, swarmkit.Run)
    assert (run.status, run.answer, run.usage.prompt_tokens) == ("completed", ANSWER, 500)
    tables = run.tables()
    assert "completed" in tables.worker_table() and "lookup" in tables.tool_table()
    assert RUN_ID in str(run)


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


def test_a_new_file_gets_exactly_the_v1_schema_and_the_later_tables(tmp_path: Path) -> None:
    Database(tmp_path / "new.db").close()
    v1 = make_v1_file(tmp_path / "v1.db")
    later = [row for row in schema_of(tmp_path / "new.db") if row[1] not in
             {name for _, name, _ in schema_of(v1)}]
    assert [row for row in schema_of(tmp_path / "new.db") if row not in later] == schema_of(v1)
    assert [name for _, name, _ in later] == ["json_parts", "sqlite_autoindex_json_parts_1"]
    assert applied(tmp_path / "new.db") == ["m001_initial", "m002_json_parts"]
    assert meta_version(tmp_path / "new.db") == "2"


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

    extended = (*MIGRATIONS, Migration("m003_test_note", add_note),
                Migration("m004_test_fill", fill_note))
    Database(path, migrations=extended).close()
    Database(path, migrations=extended).close()
    assert ran == ["note", "fill"]
    assert applied(path) == ["m001_initial", "m002_json_parts", "m003_test_note",
                             "m004_test_fill"]
    assert meta_version(path) == "4"
    assert rows(path, "SELECT run_id, note FROM runs") == [(RUN_ID, "kept")]
    # This swarmkit knows only m001 and m002: the file is now from a newer one.
    with pytest.raises(StoreError, match=r"written by a newer swarmkit \(schema 4\)"):
        History(path)


def test_a_failing_migration_leaves_the_file_as_it_was(tmp_path: Path) -> None:
    path = make_v1_file(tmp_path / "history.db")
    before = dump(path)

    def add_note(conn: sqlite3.Connection) -> None:
        conn.execute("ALTER TABLE runs ADD COLUMN note TEXT")

    def broken(conn: sqlite3.Connection) -> None:
        conn.execute("UPDATE runs SET note = 'half'")
        conn.execute("ALTER TABLE no_such_table ADD COLUMN x TEXT")

    extended = (*MIGRATIONS, Migration("m003_test_note", add_note),
                Migration("m004_test_broken", broken))
    with pytest.raises(StoreError) as caught:
        Database(path, migrations=extended)
    message = str(caught.value)
    assert "\n" not in message
    assert "migration m004_test_broken failed (no such table: no_such_table)" in message
    assert "nothing was changed" in message and "History.reset(" in message
    assert dump(path) == before  # no _migrations table, no json_parts, no note, no meta change
    with History(path) as history:  # and the real list still opens it
        assert history.load_run(RUN_ID).answer == ANSWER


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
        ("3", ["m001_initial", "m002_json_parts", "m003_from_the_future"], "schema 3"),
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
