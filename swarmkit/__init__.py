"""swarmkit: planner → workers → reducer LLM swarms, first-class in Jupyter.

``%load_ext swarmkit`` registers the ``%%swarm`` magic; ``swarmkit.run`` /
``swarmkit.run_sync`` run a swarm from Python.

Every public name is re-exported lazily (PEP 562 style, resolved on first use), so that
``%load_ext swarmkit`` and ``import swarmkit`` stay fast. To export a new name, add one
line to ``_EXPORTS`` (name -> submodule) and, for type checkers, to the TYPE_CHECKING block.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    "BudgetExceeded": "errors",
    "CallRecord": "records",
    "CassetteError": "errors",
    "ChatRequest": "calls",
    "ChatResponse": "calls",
    "ConfigError": "errors",
    "ExportError": "errors",
    "LocalModelError": "errors",
    "MCPError": "errors",
    "ModelPrice": "pricing",
    "PlanError": "errors",
    "PriceTable": "pricing",
    "ProviderError": "errors",
    "RecordError": "errors",
    "ReplayMiss": "errors",
    "RoleConfig": "config",
    "Run": "run",
    "RunCancelled": "errors",
    "StoreError": "errors",
    "Tool": "tools",
    "SwarmConfig": "config",
    "SwarmError": "errors",
    "ToolCallRecord": "records",
    "ToolError": "errors",
    "Usage": "calls",
    "WorkerRecord": "records",
    "load_ipython_extension": "magics",
    "run": "api",
    "run_sync": "api",
    "tool": "tools",
}

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
    "RecordError",
    "ReplayMiss",
    "RoleConfig",
    "Run",
    "RunCancelled",
    "StoreError",
    "SwarmConfig",
    "SwarmError",
    "Tool",
    "ToolCallRecord",
    "ToolError",
    "Usage",
    "WorkerRecord",
    "__version__",
    "load_ipython_extension",
    "run",
    "run_sync",
    "tool",
]


class _Package(types.ModuleType):
    """The package module: resolves exports on first access.

    ``swarmkit.run`` is both a function (the export) and a submodule name; the import
    system sets ``swarmkit.run`` to the submodule when that is first imported, which
    would hide the function. Refusing that one rebinding keeps ``swarmkit.run`` the
    function, as an eager ``from .api import run`` did.
    """

    def __getattr__(self, name: str) -> Any:
        module = _EXPORTS.get(name)
        if module is None:
            raise AttributeError(f"module 'swarmkit' has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
        types.ModuleType.__setattr__(self, name, value)
        return value

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _EXPORTS and isinstance(value, types.ModuleType) and name != _EXPORTS[name]:
            return
        super().__setattr__(name, value)

    def __dir__(self) -> list[str]:
        return sorted({*globals(), *__all__})


sys.modules[__name__].__class__ = _Package

if TYPE_CHECKING:
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
        RecordError,
        ReplayMiss,
        RunCancelled,
        StoreError,
        SwarmError,
        ToolError,
    )
    from .magics import load_ipython_extension
    from .pricing import ModelPrice, PriceTable
    from .records import CallRecord, ToolCallRecord, WorkerRecord
    from .run import Run
    from .tools import Tool, tool
