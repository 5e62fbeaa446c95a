"""``StepContext``: what the planner, the workers and the reducer may use of a run.

The steps are handed this, never the Engine: the config, the run id, the model calls
under the budget (``calls``), the events and the clock, and why the run may be cut short. So a
step can be driven without an Engine, and the engine imports its steps, not the reverse.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from ..config.swarmconfig import Role, SwarmConfig
from ..record.events import Event
from ..record.modelcall import ChatRequest, ToolKey, ToolOutcome
from .budget import Budget
from .budgetedcalls import BudgetedCalls, build_request
from .halt import Halt
from .modelcaller import RunCaller
from .prices import PriceTable

__all__ = ["StepContext"]


@dataclass(frozen=True, slots=True)
class StepContext:
    """One run as its steps see it. ``emit`` and ``now`` are the run's own."""

    calls: BudgetedCalls
    caller: RunCaller
    emit: Callable[[Event], None]
    now: Callable[[], float]
    halt: Halt
    # In replay, whether the cassette holds a request (the call store's ``recorded``).
    recorded: Callable[[ChatRequest], bool | None] | None = None

    @classmethod
    def create(
        cls,
        config: SwarmConfig,
        caller: RunCaller,
        *,
        run_id: str,
        emit: Callable[[Event], None],
        now: Callable[[], float],
        prices: PriceTable | None = None,
        budget: Budget | None = None,
        halt: Halt | None = None,
    ) -> StepContext:
        """A context over ``caller``; the budget and prices default to ``config``'s."""
        halt = halt if halt is not None else Halt()
        calls = BudgetedCalls(
            config, caller,
            prices=prices if prices is not None else PriceTable.with_overrides(config.prices),
            budget=budget if budget is not None else Budget(config.budget_usd,
                                                            config.budget_tokens),
            run_id=run_id, emit=emit, now=now, halt=halt,
        )
        return cls(calls, caller, emit, now, halt, getattr(caller, "recorded", None))

    @property
    def config(self) -> SwarmConfig:
        return self.calls.config

    @property
    def run_id(self) -> str:
        return self.calls.run_id

    @property
    def budget(self) -> Budget:
        return self.calls.budget

    @property
    def prices(self) -> PriceTable:
        return self.calls.prices

    def request(self, role: Role, messages: list[dict[str, Any]], **extra: Any) -> ChatRequest:
        return build_request(self.config, role, messages, **extra)

    async def tool(
        self, key: ToolKey, execute: Callable[[], Awaitable[ToolOutcome]]
    ) -> ToolOutcome:
        """One tool call, run (or, in replay, recalled) by the run's caller."""
        return await self.caller.tool(key, execute)
