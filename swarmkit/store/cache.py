"""The response cache: (request fingerprint, occurrence) -> response, in the history file.

Living in SQLite, it survives a kernel restart and is shared by every kernel that uses
the same history file. Only successful responses are stored; the newest one wins, so a
refreshed step is served its fresh answer next time.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable

from ..errors import StoreError
from ..record.fileshapes import Schema, parse_json
from ..record.modelcall import ChatResponse, canonical_json
from .cassette import RecordedResponse
from .database import Database
from .writethread import Job

__all__ = ["ResponseCache"]

_RESPONSE: Schema[RecordedResponse] = Schema(RecordedResponse)


def _put_job(
    fingerprint: str, occurrence: int, model: str, response: ChatResponse,
    refuse: Callable[[ChatResponse], bool] | None = None,
) -> Job:
    def write(conn: sqlite3.Connection) -> None:
        # On the writer's thread: the event loop only queues the (frozen) response.
        if refuse is not None and refuse(response):
            return
        data = response.to_dict()
        conn.execute(
            "INSERT OR REPLACE INTO cache VALUES (?, ?, ?, ?, ?, ?)",
            (fingerprint, occurrence, model, canonical_json(data),
             canonical_json(data["usage"]), time.time()),
        )

    return write


class ResponseCache:
    """Reads and writes cached responses; each write is one short transaction."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def get(self, fingerprint: str, occurrence: int) -> ChatResponse | None:
        rows = self.db.query(
            "SELECT response FROM cache WHERE fingerprint = ? AND occurrence = ?",
            (fingerprint, occurrence),
        )
        if not rows:
            return None
        # A damaged or crafted row raises ValueError (the call store treats it as a miss).
        data = _RESPONSE.validate(parse_json(rows[0]["response"]))
        return ChatResponse.from_dict(dict(data))

    def put(self, fingerprint: str, occurrence: int, model: str, response: ChatResponse) -> None:
        with self.db.transaction() as conn:
            _put_job(fingerprint, occurrence, model, response)(conn)

    def put_later(
        self, fingerprint: str, occurrence: int, model: str, response: ChatResponse,
        on_error: Callable[[StoreError], None],
        refuse: Callable[[ChatResponse], bool] | None = None,
    ) -> None:
        """:meth:`put` on the background writer, so the event loop never waits on disk.

        ``refuse(response)`` (also on the writer's thread) True means: do not store it.
        """
        self.db.write_later(_put_job(fingerprint, occurrence, model, response, refuse),
                            on_error)

    def clear(self) -> int:
        """Forget every cached response; returns how many there were."""
        with self.db.transaction() as conn:
            return conn.execute("DELETE FROM cache").rowcount

    def __len__(self) -> int:
        return int(self.db.query("SELECT COUNT(*) FROM cache")[0][0])
