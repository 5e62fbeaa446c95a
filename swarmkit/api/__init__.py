"""The Python front end: ``swarmkit.run`` / ``run_sync`` and the ``Run`` they return.

    entry    ``run``, ``run_sync``, ``load_run`` and ``create_engine``: the one place that
             wires engine, store, provider and tools together
    result   ``Run``: a ``RunRecord`` that shows itself (tables, reprs) and exports itself
"""

from __future__ import annotations

from .entry import (
    LiveCaller,
    check_resumable,
    create_engine,
    load_run,
    plan_of,
    resolve_models,
    resumed_config,
    run,
    run_sync,
    stored_batches,
)
from .result import Run

__all__ = [
    "LiveCaller",
    "Run",
    "check_resumable",
    "create_engine",
    "load_run",
    "plan_of",
    "resolve_models",
    "resumed_config",
    "run",
    "run_sync",
    "stored_batches",
]
