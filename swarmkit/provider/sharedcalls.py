"""``SharedCalls``: the identical model calls of concurrent runs, sent once.

A comparison runs several variants of one swarm side by side. Where two variants send
the same request to the same endpoint (the same planner, the same workers when only the
reducer prompt varies), the first one to ask makes the call and every other variant is
served its response: the call is paid once. A served variant sees the call as cached
(source ``cache``, $0, no attempts), exactly as if its call store had answered it, so its
budget, tables, cassette and export stay those of an ordinary run.

Requests are matched by their endpoint key (calls.endpoint_key) and their occurrence
within each variant, so two identical worker calls in one variant stay two calls.
A call that fails, or whose owning variant is cancelled, is shared with nobody: every
variant waiting on it then makes its own call, so one variant's failure or cancel is
never another variant's.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable
from dataclasses import replace

from ..config.swarmconfig import RoleConfig
from ..engine.modelcaller import ModelCaller
from ..record.events import Event
from ..record.modelcall import CallOutcome, ChatRequest, endpoint_key

__all__ = ["SharedCalls"]

_Key = tuple[str, int]


class SharedCalls:
    """The calls of one comparison, keyed by (endpoint key, occurrence). One per
    comparison; give each variant's provider through :meth:`caller`."""

    def __init__(self) -> None:
        # A finished call's future stays, so a variant that asks later is served too.
        self._calls: dict[_Key, asyncio.Future[CallOutcome | None]] = {}
        self.served = 0  # calls answered from another variant's call

    def caller(self, provider: ModelCaller) -> ModelCaller:
        """``provider`` as one variant sees it: identical calls shared with the others."""
        return _SharedCaller(self, provider)


class _SharedCaller:
    def __init__(self, shared: SharedCalls, provider: ModelCaller) -> None:
        self._shared = shared
        self._provider = provider
        self._seen: Counter[str] = Counter()

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
    ) -> CallOutcome:
        fingerprint = endpoint_key(request.fingerprint(), role)
        key = (fingerprint, self._seen[fingerprint])
        self._seen[fingerprint] += 1
        calls = self._shared._calls

        async def own_call() -> CallOutcome:
            return await self._provider.complete(
                request, role=role, run_id=run_id, step=step, emit=emit, clock=clock,
                on_delta=on_delta)

        pending = calls.get(key)
        if pending is None:
            mine: asyncio.Future[CallOutcome | None] = asyncio.get_running_loop().create_future()
            calls[key] = mine
            try:
                outcome = await own_call()
            except BaseException:
                del calls[key]  # not shared: whoever waits calls for itself
                mine.set_result(None)
                raise
            mine.set_result(outcome)
            return outcome
        started = clock()
        # shield: this variant's cancel must not cancel the call another variant owns.
        shared_outcome = await asyncio.shield(pending)
        if shared_outcome is None:
            return await own_call()
        self._shared.served += 1
        if on_delta is not None and shared_outcome.response.content:
            on_delta(shared_outcome.response.content)
        return replace(shared_outcome, source="cache", attempts=0,
                       latency=clock() - started, started=None, cost_usd=None,
                       cost_recorded=False)

    async def aclose(self) -> None:
        await self._provider.aclose()
