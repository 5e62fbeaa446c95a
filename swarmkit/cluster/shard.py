"""``Shard``: one Ray actor of a cluster run, running its share of the workers.

The actor lives in its own process (on this machine or another) with its own HTTP
client: its own ``OpenAIProvider``, the run's Python tools (cloudpickled from the
notebook by Ray) and swarmkit's own worker (``engine.worker.run_worker``), under a
semaphore of its share of the concurrency. Everything it does goes back to the driver
through its ``Outbox``: events, the calls and tool calls it served, and its asks of the
run's budget and rate limits (``asked``). The class is made a Ray actor by the driver
(``ray.remote(Shard)``), so this module does not import Ray.
"""

from __future__ import annotations

import asyncio
import os
import resource
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any

from ..config.swarmconfig import RoleConfig, SwarmConfig
from ..engine.budget import Budget
from ..engine.context import StepContext
from ..engine.gcpause import full_collections_deferred
from ..engine.halt import Halt
from ..engine.modelcaller import ModelCaller
from ..engine.worker import WorkerLoop, run_worker
from ..errors import ProviderError
from ..provider import OpenAIProvider
from ..record.events import Event
from ..record.modelcall import CallOutcome, ChatRequest, ToolKey, ToolOutcome
from ..record.rows import WorkerRecord
from ..tools import build_worker_loop
from .asked import AskedBudget, AskedLimits
from .messages import Served, ToolRan, pack, unpack
from .outbox import Outbox

__all__ = ["Shard", "ShardCaller", "ShardRun"]


class ShardCaller:
    """A shard's RunCaller: its own provider, each call and tool call noted for the
    driver (whose call store keeps the run's one cassette and cache)."""

    def __init__(self, provider: ModelCaller, outbox: Outbox, *, ask_cache: bool = False,
                 counted: dict[str, tuple[str, int]] | None = None) -> None:
        """``ask_cache``: the driver's call store reads its cache; each call asks it
        first (the driver counts the call's occurrence then, as one process does), but
        a call the driver ``counted`` already (step: its request's fingerprint and
        occurrence), which the cache does not hold."""
        self._provider = provider
        self._outbox = outbox
        self._ask_cache = ask_cache
        self._counted = dict(counted or {})
        self._seen: Counter[str] = Counter()
        self._clock: Callable[[], float] | None = None

    async def complete(self, request: ChatRequest, *, role: RoleConfig, run_id: str,
                       step: str, emit: Callable[[Event], None], clock: Callable[[], float],
                       on_delta: Callable[[str], None] | None = None) -> CallOutcome:
        self._clock = clock
        counted: int | None = None  # the occurrence, when the driver counted it
        known = self._counted.pop(step, None)
        if known is not None and known[0] == request.fingerprint():
            counted = occurrence = known[1]
        elif self._ask_cache:
            started = clock()
            _, (counted, cached) = await self._outbox.ask("cache", step, request)
            if cached is not None:  # the driver noted it for the cassette already
                if on_delta is not None and cached.content:
                    on_delta(cached.content)
                return CallOutcome(cached, "cache", 0, clock() - started, counted)
            occurrence = counted
        else:
            fingerprint = request.fingerprint()
            occurrence = self._seen[fingerprint]
            self._seen[fingerprint] += 1
        try:
            outcome = await self._provider.complete(
                request, role=role, run_id=run_id, step=step, emit=emit, clock=clock,
                on_delta=on_delta)
        except ProviderError as exc:
            self._outbox.put(Served(step, request, None, "live", type(exc).__name__,
                                    counted))
            raise
        self._outbox.put(Served(step, request, outcome.response, outcome.source,
                                occurrence=counted))
        return replace(outcome, occurrence=occurrence)

    async def tool(self, key: ToolKey, execute: Callable[[], Awaitable[ToolOutcome]]
                   ) -> ToolOutcome:
        started = self._clock() if self._clock is not None else None
        outcome = await execute()
        if outcome.started is None and started is not None:
            outcome = replace(outcome, started=started)
        self._outbox.put(ToolRan(key, outcome))
        return outcome

    async def aclose(self) -> None:
        await self._provider.aclose()


@dataclass(frozen=True, slots=True)
class ShardRun:
    """One share of a run's workers, as the driver hands it to a shard."""

    ident: int
    config: SwarmConfig  # with this shard's share of the concurrency
    env: dict[str, str]  # the key variables the run's roles name
    tools: tuple[Any, ...]  # the run's Python tools (cloudpickled by Ray)
    run_id: str
    task: str
    total: int  # the plan's length: a worker's prompt says "i of total"
    items: tuple[tuple[int, str], ...]  # (1-based index, sub-task)
    now: float  # the driver's run clock when it sent this ...
    wall: float  # ... and time.time() then: a shard's clock is the driver's
    ask_budget: bool  # the run's budget is capped: reserve by asking the driver
    ask_limits: bool  # rpm/tpm are set: admit each attempt by asking the driver
    ask_cache: bool = False  # the driver reads its cache: ask it before each call ...
    counted: dict[str, tuple[str, int]] = field(default_factory=dict)  # ... but these


class Shard:
    """A Ray actor (async): runs shares of runs' workers, concurrently if asked. It
    outlives a run (the next run's shards start at once) and holds nothing between."""

    def __init__(self, index: int) -> None:
        self.index = index
        self._runs: dict[int, tuple[Outbox, Halt, asyncio.Future[None]]] = {}

    def pid(self) -> int:
        return os.getpid()

    def cpu(self) -> float:
        """The CPU seconds (user + system, every thread) its process has used so far."""
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return usage.ru_utime + usage.ru_stime

    def busy(self) -> int:
        """How many shares it is running (0 once every run it had has ended)."""
        return len(self._runs)

    async def take(self, ident: int, share: ShardRun | None = None) -> bytes | None:
        """The next batch of share ``ident`` (``messages.pack``), started by its first
        ``take`` (which carries ``share``); None once it has ended. A bug in it is raised here, and
        reaches the driver as a RayTaskError. The driver asks again as soon as a batch
        arrives (a long poll: plain actor calls, which Ray Client carries too)."""
        entry = self._runs.get(ident)
        if entry is None:
            if share is None:
                return None
            outbox, halt = Outbox(), Halt()
            started = asyncio.ensure_future(self._work(share, outbox, halt))
            entry = self._runs[ident] = (outbox, halt, started)
        outbox, _, job = entry
        batch = await outbox.next_batch(job)
        if batch is None:
            del self._runs[ident]
            if not job.cancelled():
                job.result()
            return None
        return pack(batch)

    async def answer(self, ident: int, answers: bytes) -> None:
        """The driver's answers to share ``ident``'s asks (``messages.pack``)."""
        entry = self._runs.get(ident)
        if entry is not None:
            entry[0].answer(unpack(answers))

    async def cancel(self, ident: int, reason: str, stop: bool = False) -> None:
        """Cancel share ``ident``; its running workers record ``reason``."""
        entry = self._runs.get(ident)
        if entry is None:
            return
        _, halt, job = entry
        if stop:
            halt.stop = reason
        else:
            halt.cancel = reason
        job.cancel()

    async def _work(self, share: ShardRun, outbox: Outbox, halt: Halt) -> None:
        config = share.config
        provider = OpenAIProvider(config, env=share.env,
                                  limits=AskedLimits(outbox) if share.ask_limits else None)
        caller = ShardCaller(provider, outbox, ask_cache=share.ask_cache,
                             counted=share.counted)
        budget = (AskedBudget(outbox, config.budget_usd, config.budget_tokens)
                  if share.ask_budget else Budget())

        def now() -> float:
            return share.now + (time.time() - share.wall)

        context = StepContext.create(config, caller, run_id=share.run_id, emit=outbox.emit,
                                     now=now, budget=budget, halt=halt)
        try:
            loop = await build_worker_loop(share.tools) if share.tools else None
            with full_collections_deferred():  # as in the engine's own fan-out (gcpause)
                await self._fan_out(share, context, loop)
        finally:
            await caller.aclose()

    @staticmethod
    async def _fan_out(share: ShardRun, context: StepContext, loop: WorkerLoop | None) -> None:
        """The share's workers, each a task made only when a slot is about to be free
        (as the engine's fan-out does: memory grows with the concurrency, not N)."""
        records: dict[int, WorkerRecord] = {}
        slots = asyncio.Semaphore(share.config.concurrency)
        window = asyncio.Semaphore(share.config.concurrency)  # tasks made as slots free up
        async with asyncio.TaskGroup() as group:
            for index, subtask in share.items:
                await window.acquire()
                worker = group.create_task(run_worker(
                    context, loop, share.task, index, subtask, share.total, slots, records))
                worker.add_done_callback(lambda _: window.release())
