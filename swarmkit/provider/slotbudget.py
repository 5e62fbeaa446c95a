"""The embedded server's budget: its slots, their size, and the threads that serve them.

The slot budget. The server starts with as many slots as the run's concurrency (at
least 1, at most ``MAX_SLOTS``); every slot holds ``SLOT_CONTEXT`` tokens of its own, room
for a worker's request at the default 1,024 max tokens and for a reducer's 2,048 max
tokens plus 2,048 of input (the price table's ``context`` for ``local``, which the reducer
keeps each request within). The KV cache of SmolLM2-135M is about 23 KB a token (30
layers, 3 KV heads of 64, f16), so 4,096 tokens a slot is about 90 MiB, and 8 slots are
about 720 MiB of KV cache; measured, the 8-slot server is 875 MiB resident once started
and about 925 MiB at its peak (1 slot: 268 MiB): that is the memory budget. A later run
that asks for more slots than the server has restarts it with more, when no slot is
busy; while another run's requests are in flight it keeps the server, and the provider
caps that endpoint's calls in flight at its slots and says so (a ``ConcurrencyChanged``
event, shown by the live view), so nothing queues unseen.

Figures behind each choice: benchmarks/README.md, "Embedded model (issue 24)".
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from ..errors import LocalModelError

__all__ = [
    "MAX_SLOTS",
    "SLOT_CONTEXT",
    "THREADS_ENV",
    "default_threads",
    "slots_for",
    "usable_cores",
]

MAX_SLOTS = 8
SLOT_CONTEXT = 4096
THREADS_ENV = "SWARMKIT_LOCAL_THREADS"


def usable_cores() -> int:
    """The cores this process may run on: its CPU affinity, bounded by a cgroup CPU quota
    (a container's, e.g. Binder's, where ``os.cpu_count()`` reports the host's)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    try:
        quota, period = Path("/sys/fs/cgroup/cpu.max").read_text().split()[:2]
        if quota != "max":
            cores = min(cores, max(1, -(-int(quota) // int(period))))
    except (OSError, ValueError):
        pass
    return max(1, cores)


def default_threads(env: Mapping[str, str] | None = None) -> int:
    """The server's threads: ``SWARMKIT_LOCAL_THREADS`` when set, else every usable core
    (at most 8). Quiet, 2 cores: 2 threads served 8 requests in 0.4x the time of 1
    (benchmarks/README.md). On cores busy with other work fewer threads do better (with
    2 cores loaded, 1 thread was several times faster than 2): set the variable."""
    value = (os.environ if env is None else env).get(THREADS_ENV, "").strip()
    if value:
        if not value.isdigit() or int(value) < 1:
            raise LocalModelError(f"{THREADS_ENV} must be a whole number of threads, at "
                                  f"least 1; got {value!r}")
        return int(value)
    return max(1, min(8, usable_cores()))


def slots_for(concurrency: int) -> int:
    """The slots a run of ``concurrency`` needs from the embedded server (1..MAX_SLOTS)."""
    return max(1, min(int(concurrency), MAX_SLOTS))
