"""The run history: every run, call and tool call in SQLite, and the queries over it.

``HistorySink`` writes a finished run (completed, failed or cancelled) in one short
transaction; a failure to write is logged as a one-line warning and never breaks the
run. ``History`` reads it back: ``recent(n)``, ``load_run(id)`` (an id prefix is enough),
``calls(id)``, ``tool_calls(id)`` and ``cassette(id)``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import sqlite3
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pydantic import ValidationError

from ..config.swarmconfig import SwarmConfig
from ..credentials.secrets import find_secret_in_chunks
from ..engine.recordbuilder import RunRecordBuilder
from ..errors import CassetteError, RecordError, StoreError
from ..record.events import BatchSubmitted, Event, PlanReady, RunFinished
from ..record.fileshapes import Schema, Seconds, Total, TotalCost, describe, parse_json
from ..record.jsontext import chunks
from ..record.modelcall import canonical_json
from ..record.rows import CallRecord, ToolCallRecord
from ..record.runrecord import RunRecord
from .cassette import Cassette
from .database import Database, reset_database
from .writethread import Job

__all__ = ["History", "HistorySink", "RunSummary", "default_history_path"]

log = logging.getLogger("swarmkit")
_ALL = 2**63 - 1  # the largest LIMIT SQLite takes


def default_history_path() -> Path:
    """``$SWARMKIT_HISTORY`` if set, else ``.swarmkit/history.db`` under the current folder."""
    return SwarmConfig.from_env(os.environ).history_file()


@dataclass(frozen=True, slots=True)
class RunSummary:
    """One row of ``History.recent``."""

    run_id: str
    started_at: str
    task: str
    status: str
    workers: Total
    calls: Total
    prompt_tokens: Total | None
    completion_tokens: Total | None
    cost_usd: TotalCost
    duration: Seconds
    models: dict[str, str]


ErrorHandler = Callable[[StoreError], None]


def _warn(exc: StoreError) -> None:
    log.warning("swarmkit: history not saved: %s", exc)


# A run's (or a cassette's) JSON is written in parts of this many characters: part 0 in
# its row, the rest in json_parts. Only a part and the one before it are in memory.
PART_CHARS = 1 << 18


def _write_parts(conn: sqlite3.Connection, run_id: str, kind: str, pieces: Iterator[str],
                 secrets: Mapping[str, str], refuse: Callable[[str], StoreError]) -> str:
    """Write ``pieces`` (a JSON text) as parts 1.. of ``kind`` for ``run_id``, each scanned
    for secrets; return part 0, for the caller's row. Raises ``refuse(what)`` on a secret,
    which rolls back the caller's transaction with every part written."""
    conn.execute("DELETE FROM json_parts WHERE run_id = ? AND kind = ?", (run_id, kind))
    parts = find_secret_in_chunks(chunks(pieces, PART_CHARS), secrets, refuse)
    first = next(parts)
    for seq, text in enumerate(parts, start=1):
        conn.execute("INSERT INTO json_parts VALUES (?, ?, ?, ?)", (run_id, kind, seq, text))
    return first


def _run_job(run: RunRecord, secrets: Mapping[str, str]) -> Job:
    def refuse(leaked: str) -> StoreError:
        return StoreError(
            f"run {run.run_id} not saved to history: it holds the value of {leaked}; "
            "keep the key out of prompts and tool results"
        )

    def write(conn: sqlite3.Connection) -> None:
        run_json = _write_parts(conn, run.run_id, "run", run.json_parts(), secrets, refuse)
        usage = run.usage
        cost = usage.cost
        conn.execute(
            "INSERT OR REPLACE INTO runs VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (run.run_id, run.task, run.started_at, run.status, run.answer, run.error,
             run.duration, len(run.workers), len(run.calls), usage.prompt_tokens,
             usage.completion_tokens, None if cost is None else str(cost),
             canonical_json(run.models), canonical_json(run.config), run_json, time.time()),
        )
        conn.execute("DELETE FROM calls WHERE run_id = ?", (run.run_id,))
        conn.execute("DELETE FROM tool_calls WHERE run_id = ?", (run.run_id,))
        conn.executemany(  # rows made one at a time, never a list of them all
            "INSERT INTO calls VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            ((run.run_id, seq, c.step, c.role, c.model, c.source, c.attempts,
              c.usage.prompt_tokens, c.usage.completion_tokens, c.usage.cached_tokens,
              c.usage.reasoning_tokens, c.usage.requests,
              None if c.cost_usd is None else str(c.cost_usd), c.started, c.latency,
              c.fingerprint, c.occurrence, c.error, c.status)
             for seq, c in enumerate(run.calls)),
        )
        conn.executemany(
            "INSERT INTO tool_calls VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            ((run.run_id, seq, t.worker, t.hop, t.call_id, t.tool, t.arguments, t.result,
              t.error, t.started, t.duration, t.source)
             for seq, t in enumerate(run.tool_calls)),
        )

    return write


def _cassette_job(cassette: Cassette, secrets: Mapping[str, str]) -> Job:
    def refuse(leaked: str) -> CassetteError:
        return CassetteError(
            f"cassette of run {cassette.run_id} not saved to history: it holds the value "
            f"of {leaked}; keep the key out of prompts and tool results"
        )

    def write(conn: sqlite3.Connection) -> None:
        # Compact (dumps(indent=None)): the file form is for people to read.
        text = _write_parts(conn, cassette.run_id, "cassette", cassette.json_parts(),
                            secrets, refuse)
        conn.execute("INSERT OR REPLACE INTO cassettes VALUES (?, ?, ?)",
                     (cassette.run_id, text, time.time()))

    return write


class History:
    """The history database at ``path`` (created on first use)."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(path) if path is not None else default_history_path()
        self.db = Database(self.path)

    @staticmethod
    def reset(path: str | os.PathLike[str] | None = None) -> Path:
        """Move a corrupt database aside (``history.db.corrupt-<n>``); a new one is made
        on next use. Returns where the old file went."""
        return reset_database(Path(path) if path is not None else default_history_path())

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> History:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writing ---------------------------------------------------------------------------

    def save(self, run: RunRecord, secrets: Mapping[str, str] | None = None) -> None:
        """Store (or replace) a run with its calls and tool calls, in one transaction."""
        with self.db.transaction() as conn:
            _run_job(run, secrets or {})(conn)

    def save_later(self, run: RunRecord, secrets: Mapping[str, str] | None = None,
                   on_error: ErrorHandler = _warn, *, deferrable: bool = True) -> None:
        """:meth:`save` on the background writer: returns at once. ``deferrable``: it
        may wait while a cell shows its tables (a finished run's large save)."""
        self.db.write_later(_run_job(run, dict(secrets or {})), on_error,
                            deferrable=deferrable)

    def save_cassette_later(self, cassette: Cassette, secrets: Mapping[str, str] | None = None,
                            on_error: ErrorHandler = _warn) -> None:
        """Keep a run's cassette (on the background writer), so any past run can be
        replayed or exported."""
        self.db.write_later(_cassette_job(cassette, dict(secrets or {})), on_error,
                            deferrable=True)

    # -- reading ---------------------------------------------------------------------------

    def resolve(self, run_id: str) -> str:
        """The full id of the one run whose id is or starts with ``run_id``."""
        run_id = run_id.strip()
        if not run_id:
            raise StoreError("give a run id (or its first characters); see %swarm history")
        pattern = run_id.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        rows = self.db.query(
            "SELECT run_id FROM runs WHERE run_id LIKE ? ESCAPE '\\' ORDER BY saved DESC",
            (pattern,),
        )
        ids = [row["run_id"] for row in rows]
        if run_id in ids:
            return run_id
        if not ids:
            raise StoreError(f"no run {run_id!r} in history {self.path}; see %swarm history")
        if len(ids) > 1:
            shown = ", ".join(ids[:5])
            raise StoreError(f"run id {run_id!r} is ambiguous ({shown}); give more characters")
        return str(ids[0])

    def recent(self, n: int = 10) -> list[RunSummary]:
        rows = self.db.query(
            # SQLite's LIMIT takes a 64-bit integer: `%swarm history 10**30` lists them all.
            "SELECT * FROM runs ORDER BY saved DESC, rowid DESC LIMIT ?", (min(max(0, n), _ALL),)
        )
        summaries = []
        for row in rows:
            values = dict(row)
            with contextlib.suppress(TypeError, ValueError):  # else the schema names it
                values["models"] = parse_json(values["models"])
            summaries.append(self._checked(_SUMMARY, values, str(values.get("run_id"))))
        return summaries

    def load_run(self, run_id: str) -> RunRecord:
        full = self.resolve(run_id)
        rows = self.db.query("SELECT run_json FROM runs WHERE run_id = ?", (full,))
        text = rows[0]["run_json"]
        source = f"history {self.path}, run {full}"
        if not isinstance(text, str | bytes):
            raise RecordError(f"{source} is garbled: run_json is not text; "
                              f"{self._remedy()}")
        run = RunRecord.from_json(self._joined(full, "run", text), source)
        run.history_file = self.path
        return run

    def calls(self, run_id: str) -> list[CallRecord]:
        full = self.resolve(run_id)
        rows = self.db.query("SELECT * FROM calls WHERE run_id = ? ORDER BY seq", (full,))
        usage = ("prompt_tokens", "completion_tokens", "cached_tokens", "reasoning_tokens",
                 "requests")
        records = []
        for row in rows:
            values = dict(row)
            values["usage"] = {name: values.pop(name, None) for name in usage}
            records.append(self._checked(_CALL, values, full, values.get("seq")))
        return records

    def tool_calls(self, run_id: str) -> list[ToolCallRecord]:
        full = self.resolve(run_id)
        rows = self.db.query("SELECT * FROM tool_calls WHERE run_id = ? ORDER BY seq", (full,))
        values = [dict(row) for row in rows]
        return [self._checked(_TOOL_CALL, v, full, v.get("seq")) for v in values]

    def cassette(self, run_id: str) -> Cassette | None:
        """The run's cassette, or None when it was run without one being kept."""
        full = self.resolve(run_id)
        rows = self.db.query("SELECT cassette FROM cassettes WHERE run_id = ?", (full,))
        if not rows:
            return None
        text = rows[0]["cassette"]
        if not isinstance(text, str | bytes):
            raise CassetteError(f"history {self.path}: the cassette of run {full} is not "
                                f"text; {self._remedy()}")
        return Cassette.loads(self._joined(full, "cassette", text), f"history:{full}")

    def _joined(self, run_id: str, kind: str, first: str | bytes) -> str | bytes:
        """Part 0 (the row's own column) and the parts after it; a run saved before the
        parts existed has all its text in part 0."""
        rows = self.db.query(
            "SELECT text FROM json_parts WHERE run_id = ? AND kind = ? ORDER BY seq",
            (run_id, kind),
        )
        if not rows:
            return first
        head = first.decode() if isinstance(first, bytes) else first
        return head + "".join(str(row["text"]) for row in rows)

    def _checked(self, schema: Schema[_Row], values: dict[str, Any], run_id: str,
                 seq: int | None = None) -> _Row:
        """A row as a record, or a one-line RecordError naming the run and the field."""
        try:
            return schema.validate(values)
        except ValidationError as exc:
            row = f"run {run_id!r}" if seq is None else f"run {run_id!r}, row {seq}"
            raise RecordError(f"history {self.path} is garbled ({row}): {describe(exc)}; "
                              f"{self._remedy()}") from None

    def _remedy(self) -> str:
        return (f"move the database aside with swarmkit.store.History.reset("
                f"{str(self.path)!r}) and a new one will be created")


_Row = TypeVar("_Row")
_SUMMARY: Schema[RunSummary] = Schema(RunSummary)
_CALL: Schema[CallRecord] = Schema(CallRecord)
_TOOL_CALL: Schema[ToolCallRecord] = Schema(ToolCallRecord)


class HistorySink:
    """Writes each run to the history when its plan is ready (status ``running``: a
    run whose process dies stays so, and can be resumed), when it submits a batch (so a
    resume finds the batch id), and again when it finishes, whatever its outcome."""

    def __init__(self, history: History, secrets: Mapping[str, str] | None = None) -> None:
        self.history = history
        self.secrets = dict(secrets or {})
        self.error: StoreError | None = None
        self._recorder = RunRecordBuilder()  # its own copy: sinks never reach into the engine

    def on_event(self, event: Event) -> None:
        self._recorder.on_event(event)
        run = self._recorder.run
        if isinstance(event, RunFinished | PlanReady | BatchSubmitted) and run is not None:
            if not isinstance(event, RunFinished):
                # Written later on the writer thread while the workers go on adding to
                # the run: save the run as it is now.
                run = dataclasses.replace(run, plan=list(run.plan), calls=list(run.calls),
                                          retries=list(run.retries), workers=[],
                                          tool_calls=[], reduced=[],
                                          batches=list(run.batches))
            try:
                # The plan's (and a batch's) save is small, and a resume needs it at once.
                self.history.save_later(run, self.secrets, self._failed,
                                        deferrable=isinstance(event, RunFinished))
            except StoreError as exc:
                self._failed(exc)

    def _failed(self, exc: StoreError) -> None:
        # History is a record, never a reason to fail a run: one warning line, no raise
        # (the plan's save and the end's save of one run failing alike warn once).
        if self.error is None:
            _warn(exc)
        self.error = exc
