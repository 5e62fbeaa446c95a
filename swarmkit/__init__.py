"""swarmkit: planner → workers → reducer LLM swarms, first-class in Jupyter.

``%load_ext swarmkit`` registers the ``%%swarm`` magic; ``swarmkit.run`` /
``swarmkit.run_sync`` run a swarm from Python.
"""

from __future__ import annotations

from .api import run, run_sync
from .calls import ChatRequest, ChatResponse, Usage
from .config import RoleConfig, SwarmConfig
from .errors import (
    BudgetExceeded,
    CassetteError,
    ConfigError,
    ExportError,
    LocalModelError,
    MCPError,
    PlanError,
    ProviderError,
    ReplayMiss,
    RunCancelled,
    StoreError,
    SwarmError,
    ToolError,
)
from .pricing import ModelPrice, PriceTable
from .records import CallRecord, ToolCallRecord, WorkerRecord
from .run import Run

__version__ = "0.1.0"

__all__ = [
    "BudgetExceeded",
    "CallRecord",
    "CassetteError",
    "ChatRequest",
    "ChatResponse",
    "ConfigError",
    "ExportError",
    "LocalModelError",
    "MCPError",
    "ModelPrice",
    "PlanError",
    "PriceTable",
    "ProviderError",
    "ReplayMiss",
    "RoleConfig",
    "Run",
    "RunCancelled",
    "StoreError",
    "SwarmConfig",
    "SwarmError",
    "ToolCallRecord",
    "ToolError",
    "Usage",
    "WorkerRecord",
    "__version__",
    "run",
    "run_sync",
]
