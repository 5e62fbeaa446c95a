"""The Python front end: ``swarmkit.run`` / ``run_sync`` and the ``Run`` they return.

    entry    ``run``, ``run_sync``, ``load_run`` and ``create_engine``: the one place that
             wires engine, store, provider and tools together
    result   ``Run``: a ``RunRecord`` that shows itself (tables, reprs) and exports itself
    planning ``plan`` / ``plan_sync`` and ``Plan``: the planner's plan, edited and
             forecast before the fan-out, then run
    gate     ``run`` / ``run_sync`` as exported: ``plan=``, and ``confirm_over``'s stop
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
    stored_batches,
)
from .gate import run, run_sync
from .planning import Plan, plan, plan_sync
from .result import Run

__all__ = [
    "LiveCaller",
    "Plan",
    "Run",
    "check_resumable",
    "create_engine",
    "load_run",
    "plan",
    "plan_of",
    "plan_sync",
    "resolve_models",
    "resumed_config",
    "run",
    "run_sync",
    "stored_batches",
]
