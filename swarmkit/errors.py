"""One exception tree for everything swarmkit raises.

    SwarmError
    ├── ConfigError            bad options, unknown price under a budget, missing key
    │   ├── LocalModelError    the embedded model server cannot be installed or started
    │   └── ConfirmationNeeded the forecast is over confirm_over: review ``err.plan``
    ├── ProviderError          a model call failed for good (status, first body line)
    │   └── ResponseFormatUnsupported   the server refused response_format (fall back)
    ├── PlanError              the planner returned nothing usable (keeps the raw text)
    ├── OutputSchemaError      a worker's reply did not match --schema, even after a repair
    ├── BudgetExceeded         a reservation cannot fit under the cap (states the numbers)
    ├── StoreError             cache / history database trouble
    │   ├── CassetteError      a cassette is unreadable, garbled or of another version
    │   ├── RecordError        Run JSON or a history row is garbled (also a ValueError)
    │   └── ReplayMiss         a replayed request is not in the cassette
    ├── ToolError              a tool raised, timed out or got invalid arguments
    │   └── MCPError           an MCP server died or never started
    ├── ExportError            a run cannot be exported (e.g. the key would leak)
    └── RunCancelled           the run was cancelled (interrupt, Cancel button, timeout)

Every message is one line that says what happened and what to do about it.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "BudgetExceeded",
    "CassetteError",
    "ConfigError",
    "ConfirmationNeeded",
    "ExportError",
    "LocalModelError",
    "MCPError",
    "OutputSchemaError",
    "PlanError",
    "ProviderError",
    "RecordError",
    "ReplayMiss",
    "ResponseFormatUnsupported",
    "RunCancelled",
    "StoreError",
    "SwarmError",
    "ToolError",
]


class SwarmError(Exception):
    """Base of every swarmkit error.

    ``run`` holds the Run when the error came after one finished (e.g. its cassette could
    not be written), so nothing the run did is lost.
    """

    run: Any = None


class ConfigError(SwarmError):
    """An option, a price or a key is missing or wrong."""


class ConfirmationNeeded(ConfigError):
    """A run's forecast is over ``confirm_over``: only the planner's call was made.

    ``plan`` is the ``swarmkit.Plan`` to review: edit ``plan.tasks``, then
    ``plan.run_sync()`` runs it (or ``swarmkit.run_sync(plan=plan)``)."""

    def __init__(self, message: str, plan: Any) -> None:
        super().__init__(message)
        self.plan = plan


class LocalModelError(ConfigError):
    """The embedded local model server is not installed or failed to start."""


class ProviderError(SwarmError):
    """A model call failed after its retries (or could not be retried)."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        retryable: bool = False,
        retry_after: float | None = None,
        attempts: int = 1,
        started: float | None = None,
        latency: float | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.retryable = retryable
        self.retry_after = retry_after
        self.attempts = attempts
        # Set only by replay: the recorded timing, so a replayed failure shows the same row.
        self.started = started
        self.latency = latency


class ResponseFormatUnsupported(ProviderError):
    """The server does not accept the requested ``response_format``."""


class PlanError(SwarmError):
    """The planner's answer could not be turned into a task list."""

    def __init__(self, message: str, *, raw: str = "") -> None:
        super().__init__(message)
        self.raw = raw


class BudgetExceeded(SwarmError):
    """A call's worst-case cost does not fit under the budget cap."""


class StoreError(SwarmError):
    """The cache or the history database cannot be used."""


class CassetteError(StoreError):
    """A cassette is unreadable, garbled, or written by another format version."""


class RecordError(StoreError, ValueError):
    """Run JSON or a history row is garbled, crafted, or of another format version.

    Also a ValueError, which is what ``Run.from_json`` raised for text that is not JSON.
    """


class ReplayMiss(StoreError):
    """A request in replay mode has no recorded response."""

    def __init__(self, message: str, *, step: str = "", closest: str | None = None) -> None:
        super().__init__(message)
        self.step = step
        self.closest = closest


class OutputSchemaError(SwarmError):
    """A worker's reply did not match the run's output schema, even after one repair;
    the worker is failed with reason ``schema``."""

    reason = "schema"


class ToolError(SwarmError):
    """A tool raised, timed out, or was called with invalid arguments."""


class MCPError(ToolError):
    """An MCP server died, never started, or answered badly."""


class ExportError(SwarmError):
    """A run cannot be exported."""


class RunCancelled(SwarmError):
    """The run was cancelled before it finished."""
