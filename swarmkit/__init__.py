"""swarmkit: planner → workers → reducer LLM swarms, first-class in Jupyter.

``%load_ext swarmkit`` registers the ``%%swarm`` magic; ``swarmkit.run`` /
``swarmkit.run_sync`` run a swarm from Python and return a :class:`Run`.

This module only re-exports, and lazily: each name below is imported from its module the
first time it is used (``_imports.lazy_exports``), so ``import swarmkit`` and
``%load_ext swarmkit`` import none of the run's machinery, openai or ipywidgets (the
extension only declares the magics: ``magics.extension``). The ``if TYPE_CHECKING:``
block is the list, for type checkers and for that.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._imports import MovedPathFinder, lazy_exports
from ._version import __version__

if TYPE_CHECKING:
    from .api import Run, load_run, run, run_sync
    from .comparison import Comparison, compare, compare_sync
    from .config import RoleConfig, SwarmConfig
    from .engine.prices import ModelPrice, PriceTable
    from .engine.scoring import Check
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
    from .magics.extension import load_ipython_extension
    from .record import (
        BudgetUpdated,
        CallFinished,
        CallRecord,
        CallRetried,
        CallStarted,
        ChatRequest,
        ChatResponse,
        ConcurrencyChanged,
        Event,
        PlanReady,
        RateLimitWait,
        ReducerDelta,
        ReducerStarted,
        RunFinished,
        RunRecord,
        RunStarted,
        Sink,
        ToolCallFinished,
        ToolCallRecord,
        Usage,
        WorkerFinished,
        WorkerRecord,
        WorkerSplit,
        WorkerStarted,
    )
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
    "Check",
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
    "WorkerSplit",
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

__getattr__, __dir__ = lazy_exports(__name__, __file__)
MovedPathFinder.install()

