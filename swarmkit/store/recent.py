"""The recordings of this process's most recent runs, so any of them can be exported.

Every run that goes through a :class:`~swarmkit.store.CallStore` is recorded in memory
(the same recording ``record=`` writes and the history keeps). The last few are kept
here by run id, so ``run.export(...)`` works right after a run even with ``history=False``
and no ``record=``. A replayed run's cassette is kept too, so a replay can be re-exported.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from .cassette import Cassette

__all__ = ["KEPT_RECORDINGS", "recent_recording", "remember_recording"]

# Enough for a notebook session's recent cells; a big run's cassette can be megabytes.
KEPT_RECORDINGS = 8

_lock = threading.Lock()
_recordings: OrderedDict[str, Cassette] = OrderedDict()


def remember_recording(cassette: Cassette) -> None:
    """Keep ``cassette`` as its run's recording, dropping the oldest past the limit."""
    with _lock:
        _recordings[cassette.run_id] = cassette
        _recordings.move_to_end(cassette.run_id)
        while len(_recordings) > KEPT_RECORDINGS:
            _recordings.popitem(last=False)


def recent_recording(run_id: str) -> Cassette | None:
    """The recording of run ``run_id`` if it ran (or was replayed) lately in this process."""
    with _lock:
        return _recordings.get(run_id)
