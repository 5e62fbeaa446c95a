"""A damaged history file, for the tests of what a run does with one (store, magics,
cli): bytes that are no SQLite database, as a disk error or a stray write leaves them."""

from __future__ import annotations

from pathlib import Path

__all__ = ["GARBAGE", "damaged_history"]

GARBAGE = b"this is no SQLite file, it was overwritten by something else " * 40


def damaged_history(folder: Path) -> Path:
    """A ``history.db`` in ``folder`` that holds :data:`GARBAGE`."""
    path = folder / "history.db"
    path.write_bytes(GARBAGE)
    return path
