"""Full garbage collections held off while a run fans out.

A fan-out keeps a record of every call and worker until the run ends, and makes almost
no cyclic garbage. CPython's collector nevertheless walks the whole heap again each time
its oldest generation has grown by a quarter, so with tens of thousands of workers the
walks over the records already kept take a large share of the run's CPU
(benchmarks/README.md, "Scale"). While any run's workers are fanning out, the oldest
generation's threshold is raised so that no full collection starts on its own; young
collections go on as before, and so does ``gc.collect()``. When the last fan-out ends
the threshold the process had is put back (unless someone else changed it meanwhile);
the next full collection then happens as it would have.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["full_collections_deferred"]

# The oldest generation's threshold while deferred: more young collections than any
# run makes.
_DEFERRED = 1 << 30

_lock = threading.Lock()
_depth = 0
_saved: tuple[int, int, int] | None = None


@contextmanager
def full_collections_deferred() -> Iterator[None]:
    """Within this block (nested or in several runs at once), no automatic full
    collection; the process's own thresholds are restored when the last block ends."""
    global _depth, _saved
    with _lock:
        if _depth == 0:
            _saved = gc.get_threshold()
            gc.set_threshold(_saved[0], _saved[1], _DEFERRED)
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _saved is not None:
                young, middle, _ = gc.get_threshold()
                if (young, middle) == _saved[:2] and gc.get_threshold()[2] == _DEFERRED:
                    gc.set_threshold(*_saved)
                _saved = None
