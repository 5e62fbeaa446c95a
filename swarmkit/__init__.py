"""swarmkit: planner → workers → reducer LLM swarms, first-class in Jupyter.

``%load_ext swarmkit`` registers the ``%%swarm`` magic; ``swarmkit.run`` /
``swarmkit.run_sync`` run a swarm from Python and return a :class:`Run`.

This module only re-exports. The magics are imported when IPython loads the extension,
so ``import swarmkit`` in a script never imports IPython's magic machinery or ipywidgets.
"""

from __future__ import annotations

from typing import Any

from ._version import __version__
from .api.entry import load_run, run, run_sync
from .api.result import Run
from .compare.comparison import Comparison
from .compare.runner import compare, compare_sync
from .config import RoleConfig, SwarmConfig
from .engine.prices import ModelPrice, PriceTable
from .errors import (
    BudgetExceeded,
    CassetteError,
    ConfigError,
    ExportError,
    LocalModelError,
    MCPError,
    PlanError,
    ProviderError,
    RecordError,
    ReplayMiss,
    RunCancelled,
    StoreError,
    SwarmError,
    ToolError,
)
from .record.events import (
    BudgetUpdated,
    CallFinished,
    CallRetried,
    CallStarted,
    ConcurrencyChanged,
    Event,
    PlanReady,
    RateLimitWait,
    ReducerDelta,
    ReducerStarted,
    RunFinished,
    RunStarted,
    Sink,
    ToolCallFinished,
    WorkerFinished,
    WorkerStarted,
)
from .record.modelcall import ChatRequest, ChatResponse
from .record.rows import CallRecord, ToolCallRecord, WorkerRecord
from .record.runrecord import RunRecord
from .record.usage import Usage
from .tools import Tool, tool

__all__ = [
    "BudgetExceeded",
    "BudgetUpdated",
    "CallFinished",
    "CallRecord",
    "CallRetried",
    "CallStarted",
    "CassetteError",
    "ChatRequest",
    "ChatResponse",
    "Comparison",
    "ConcurrencyChanged",
    "ConfigError",
    "Event",
    "ExportError",
    "LocalModelError",
    "MCPError",
    "ModelPrice",
    "PlanError",
    "PlanReady",
    "PriceTable",
    "ProviderError",
    "RateLimitWait",
    "RecordError",
    "ReducerDelta",
    "ReducerStarted",
    "ReplayMiss",
    "RoleConfig",
    "Run",
    "RunCancelled",
    "RunFinished",
    "RunRecord",
    "RunStarted",
    "Sink",
    "StoreError",
    "SwarmConfig",
    "SwarmError",
    "Tool",
    "ToolCallFinished",
    "ToolCallRecord",
    "ToolError",
    "Usage",
    "WorkerFinished",
    "WorkerRecord",
    "WorkerStarted",
    "__version__",
    "compare",
    "compare_sync",
    "load_ipython_extension",
    "load_run",
    "run",
    "run_sync",
    "tool",
]


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext swarmkit``: register ``%%swarm`` and ``%swarm``."""
    # Imported here: IPython loads the magics only when it loads the extension.
    from .magics import load_ipython_extension as load

    load(ipython)
