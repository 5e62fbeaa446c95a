"""The recordings of this process's most recent runs, so any of them can be exported.

Every run that goes through a :class:`~swarmkit.store.CallStore` is recorded in memory
(the same recording ``record=`` writes and the history keeps). The last few are kept
here by run id, so ``run.export(...)`` works right after a run even with ``history=False``
and no ``record=``. A replayed run's cassette is kept too, so a replay can be re-exported.
A large recording that the history is saving is not kept: it is read back from that
history file when asked for (a run of many thousand calls records megabytes).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from pathlib import Path

from ..errors import StoreError
from .cassette import Cassette
from .history import History

__all__ = ["IN_MEMORY_CALLS", "KEPT_RECORDINGS", "recent_recording", "remember_recording"]

# Enough for a notebook session's recent cells.
KEPT_RECORDINGS = 8
# The most calls a recording the history keeps too is held in memory with.
IN_MEMORY_CALLS = 1000

_lock = threading.Lock()
_recordings: OrderedDict[str, Cassette | Path] = OrderedDict()


def remember_recording(cassette: Cassette, history: Path | None = None) -> None:
    """Keep ``cassette`` as its run's recording, dropping the oldest past the limit.
    ``history``: the file the cassette is being saved to; one of more than
    ``IN_MEMORY_CALLS`` calls is then read back from there, not kept."""
    kept = history if history is not None and len(cassette.calls) > IN_MEMORY_CALLS \
        else cassette
    with _lock:
        _recordings[cassette.run_id] = kept
        _recordings.move_to_end(cassette.run_id)
        while len(_recordings) > KEPT_RECORDINGS:
            _recordings.popitem(last=False)


def recent_recording(run_id: str) -> Cassette | None:
    """The recording of run ``run_id`` if it ran (or was replayed) lately in this process;
    None also when its history file no longer has it (the save refused or failed)."""
    with _lock:
        found = _recordings.get(run_id)
    if not isinstance(found, Path):
        return found
    if not found.is_file():  # never create a database just to look in it
        return None
    try:
        with History(found) as history:  # waits for the run's own pending saves
            return history.cassette(run_id)
    except StoreError:
        return None
