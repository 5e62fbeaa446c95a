"""``ModelCaller``: the one seam a model call goes through, and what a run adds to it.

The provider (``swarmkit.provider.OpenAIProvider``) serves a call over the network; the
call store (``swarmkit.store.CallStore``) serves it from its cache or a cassette, or
hands it to a provider; the engine calls whichever it was given. All three speak this
protocol and return one :class:`~swarmkit.record.modelcall.CallOutcome`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol

from ..config.swarmconfig import RoleConfig
from ..record.events import Event
from ..record.modelcall import CallOutcome, ChatRequest, ToolKey, ToolOutcome

__all__ = ["ModelCaller", "RunCaller"]


class ModelCaller(Protocol):
    """Serves one logical model call, retries included.

    ``emit`` receives the call's CallStarted/CallRetried/RateLimitWait events, ``clock``
    gives their times (seconds since the run started), ``on_delta`` streamed text.
    """

    async def complete(
        self,
        request: ChatRequest,
        *,
        role: RoleConfig,
        run_id: str,
        step: str,
        emit: Callable[[Event], None],
        clock: Callable[[], float],
        on_delta: Callable[[str], None] | None = None,
    ) -> CallOutcome: ...

    async def aclose(self) -> None: ...


class RunCaller(ModelCaller, Protocol):
    """What an engine runs on: model calls, and tool calls it may record or replay.

    ``tool`` decides whether ``execute`` is awaited, so a replay never re-runs a tool.
    """

    async def tool(
        self, key: ToolKey, execute: Callable[[], Awaitable[ToolOutcome]]
    ) -> ToolOutcome: ...
