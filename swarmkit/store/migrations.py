"""The history database's schema, as an ordered list of migrations (in the style of
simonw/llm's ``migrations.py``).

Contracts:

- :data:`MIGRATIONS` is append-only. A released migration is never edited, renamed,
  reordered or removed: a schema change is a new :class:`Migration` at the end.
- The schema version is the number of migrations applied; it is also kept in the
  ``meta`` row ``schema`` that swarmkit 1.x read, so an older swarmkit still refuses a
  newer file with its own one-line message.
- Each applied migration's name is recorded, in order, in ``_migrations``. A file whose
  recorded names are not a prefix of the known list (or whose ``meta`` version is past
  its end) was written by a newer swarmkit and is refused, never touched.
- :func:`migrate` runs inside the caller's open write transaction (``Database._connect``
  holds ``BEGIN IMMEDIATE``), so two processes opening one new file never both migrate,
  and a failure rolls every step of this open back: the file stays as it was.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import StoreError

__all__ = ["MIGRATIONS", "Migration", "migrate", "schema_version"]

# Where the applied migrations are recorded. Internal: nothing else reads or writes it.
_TABLE = "_migrations"


@dataclass(frozen=True, slots=True)
class Migration:
    """One schema step. ``apply`` changes the schema through ``conn.execute`` only: it must
    not commit, roll back or call ``executescript`` (which commits), because the step has
    to stay inside the caller's transaction to be undone whole if it fails."""

    name: str
    apply: Callable[[sqlite3.Connection], None]


def _execute_all(conn: sqlite3.Connection, script: str) -> None:
    # One statement at a time: executescript would commit the caller's transaction.
    for statement in script.split(";"):
        if statement.strip():
            conn.execute(statement)


# Copied verbatim from swarmkit 1's ``database._SCHEMA`` (``IF NOT EXISTS`` included): the
# stored ``sqlite_master`` text of a new file then equals a 1.x file's, and a file 1.x
# left half-known (tables but no ``meta`` row) is completed rather than refused.
_V1_SCHEMA = """
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


def _m001_initial(conn: sqlite3.Connection) -> None:
    """Runs, calls, tool calls, cassettes and the response cache: swarmkit 1's schema."""
    _execute_all(conn, _V1_SCHEMA)


def _m002_json_parts(conn: sqlite3.Connection) -> None:
    """A run's JSON (``runs.run_json``) and a cassette's (``cassettes.cassette``) longer
    than one part go on here, part 1 onwards: the row's own column holds part 0, so a
    run saved before holds all of its text there and reads back as it is."""
    conn.execute(
        "CREATE TABLE json_parts (run_id TEXT NOT NULL, kind TEXT NOT NULL, "
        "seq INTEGER NOT NULL, text TEXT NOT NULL, PRIMARY KEY (run_id, kind, seq))"
    )


MIGRATIONS: tuple[Migration, ...] = (
    Migration("m001_initial", _m001_initial),
    Migration("m002_json_parts", _m002_json_parts),
)


def schema_version(migrations: Sequence[Migration] = MIGRATIONS) -> int:
    """The version a file has once every one of ``migrations`` is applied."""
    return len(migrations)


def _has_table(conn: sqlite3.Connection, name: str) -> bool:
    row = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)
    ).fetchone()
    return row is not None


def _meta_version(conn: sqlite3.Connection, path: Path) -> int | None:
    """The ``meta`` row ``schema``, or None on a file that has none yet."""
    if not _has_table(conn, "meta"):
        return None
    row = conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
    if row is None:
        return None
    try:
        return int(row[0])
    except ValueError:
        raise StoreError(
            f"history database {path} has an unreadable schema version {row[0]!r}; move it "
            f"aside with swarmkit.store.History.reset({str(path)!r}) and a new one will be "
            "created"
        ) from None


def _applied(conn: sqlite3.Connection, meta: int | None) -> list[str]:
    """The names already applied, oldest first.

    A file made before the migrations table existed (swarmkit 1.x) is recognised by its
    ``meta`` row ``schema`` = 1 and no ``_migrations`` table: 1.x wrote that row in the
    same transaction as every table of ``m001_initial``, so the row proves the migration
    ran, and it is recorded as applied without being run again.
    """
    if _has_table(conn, _TABLE):
        return [row[0] for row in conn.execute(f"SELECT name FROM {_TABLE} ORDER BY rowid")]
    conn.execute(f"CREATE TABLE {_TABLE} (name TEXT PRIMARY KEY, applied_at REAL NOT NULL)")
    if meta == 1:
        conn.execute(f"INSERT INTO {_TABLE} VALUES (?, ?)", (MIGRATIONS[0].name, time.time()))
        return [MIGRATIONS[0].name]
    return []


def _newer(path: Path, version: int | str) -> StoreError:
    return StoreError(
        f"history database {path} was written by a newer swarmkit (schema {version}); "
        "upgrade swarmkit or point history_path elsewhere"
    )


def migrate(conn: sqlite3.Connection, path: Path,
            migrations: Sequence[Migration] = MIGRATIONS) -> list[str]:
    """Bring the file behind ``conn`` up to ``migrations``; return the names applied now.

    The caller holds the write transaction and rolls it back if this raises. Raises a
    one-line :class:`StoreError` for a file from a newer swarmkit and for a migration that
    fails (naming it and the fix). ``migrations`` other than :data:`MIGRATIONS` are for
    tests: the product always passes the real list.
    """
    names = [m.name for m in migrations]
    meta = _meta_version(conn, path)
    if meta is not None and meta > len(names):
        raise _newer(path, meta)
    applied = _applied(conn, meta)
    if applied != names[: len(applied)]:
        unknown = next((n for n in applied if n not in names), None)
        raise _newer(path, f"{len(applied)}, unknown migration {unknown or applied[-1]!r}")
    done: list[str] = []
    for migration in migrations[len(applied):]:
        try:
            migration.apply(conn)
        except Exception as exc:
            reason = " ".join(str(exc).split()) or type(exc).__name__
            raise StoreError(
                f"history database {path} could not be upgraded: migration "
                f"{migration.name} failed ({reason}) and nothing was changed; move the file "
                f"aside with swarmkit.store.History.reset({str(path)!r}) to start a new one, "
                "or use the swarmkit that wrote it"
            ) from None
        if not conn.in_transaction:
            # It committed (executescript does): the steps before it can no longer be undone.
            raise StoreError(
                f"migration {migration.name} committed the transaction it runs in; a "
                "migration must use conn.execute only"
            )
        conn.execute(f"INSERT INTO {_TABLE} VALUES (?, ?)", (migration.name, time.time()))
        done.append(migration.name)
    if meta != len(names):  # the version 1.x reads; an up-to-date file is not written
        conn.execute("INSERT OR REPLACE INTO meta VALUES ('schema', ?)", (str(len(names)),))
    return done
