"""``ClusterDispatch``: the workers of a run shared among K Ray actors (``Shard``).

The driver (the kernel) keeps the planner, the reducer, the budget, the rate limits,
the history, the cassette and the live view: only the workers move (but those the
kernel's cache answers whole, ``cachedworkers``). The others are dealt to the K shards
in turn, and each shard streams back what happens in batches, which
the driver delivers as the run's own events (so the Run, the tables, the dashboard and
the traces are built as in one process), noting the calls in its call store and
answering the asks on the run's budget and limits (``Ledger``).

Faults: a shard that dies loses no finished worker (its WorkerFinished reached the
driver already); its unfinished workers run again, once, on the shards still alive,
and fail with reason ``shard`` if that shard dies too or none is left. A cancel (an
interrupt, Cancel, a timeout) or a stop asks every shard to cancel its workers, waits
for their records at most ``GRACE`` seconds, then kills every shard.
"""

from __future__ import annotations

import asyncio
import itertools
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from types import ModuleType
from typing import Any

from ..config.swarmconfig import SwarmConfig
from ..engine.context import StepContext
from ..engine.gcpause import full_collections_deferred
from ..engine.worker import WorkerTally, never_started
from ..provider.ratelimits import RateLimits
from ..record.events import CallFinished, WorkerFinished
from ..record.rows import WorkerRecord
from ..record.steps import worker_id, worker_step
from ..store import CallStore
from .cachedworkers import run_cached_workers
from .connect import shard_count
from .ledger import Ledger
from .messages import Answer, Ask, Served, Tell, ToolRan, pack, unpack
from .shard import Shard, ShardRun

__all__ = ["GRACE", "POOL", "ClusterDispatch", "ShardPool"]

GRACE = 1.5  # seconds a cancelled shard has to send its cancelled workers
_IDS = itertools.count(1)  # ShardRun idents: unique in the process, as shards are shared


class ShardPool:
    """The shards of this process, kept between runs: a run's shards then start at once.

    Idle between runs, they hold nothing of the last run. They belong to the Ray session
    they were started in (a new ``ray.init`` starts new ones); ``ray.shutdown()`` or the
    kernel's exit ends them with the local Ray.
    """

    def __init__(self) -> None:
        self.handles: list[Any] = []
        self._session: str | None = None

    def take(self, ray: ModuleType, count: int) -> list[Any]:
        """The first ``count`` shards, started where missing or dropped."""
        session = ray.get_runtime_context().get_job_id()
        if session != self._session:
            self.handles, self._session = [], session
        actor = ray.remote(Shard)
        for k in range(count):
            if k == len(self.handles):
                self.handles.append(None)
            if self.handles[k] is None:
                self.handles[k] = actor.remote(k)
        return self.handles[:count]

    def drop(self, ray: ModuleType, handle: Any) -> None:
        """Kill a shard (dead already, or stuck): the next run starts another."""
        ray.kill(handle)
        self.handles = [None if h is handle else h for h in self.handles]


POOL = ShardPool()


class ClusterDispatch:
    """The engine's ``WorkerDispatch`` for ``cluster=``: one per run.

    ``ray`` is connected already (``connect``); ``env`` holds the key variables the
    shards need; ``tools`` are the run's Python tools; ``store`` (the run's call store,
    if it has one) keeps the calls the shards served for the cassette and the cache.
    """

    def __init__(self, ray: ModuleType, config: SwarmConfig, *, env: Mapping[str, str],
                 tools: Sequence[Any] = (), store: CallStore | None = None) -> None:
        self._ray = ray
        self._config = config
        self._env = dict(env)
        self._tools = list(tools)
        self._store = store
        self._actors: list[Any] = []
        self._dead: set[int] = set()
        self._running: dict[int, int] = {}  # ShardRun.ident -> the shard running it

    async def __call__(self, context: StepContext, task: str, plan: tuple[str, ...],
                       records: dict[int, WorkerRecord]) -> None:
        run_config = self._config
        pumps: list[asyncio.Task[None]] = []
        counted: dict[str, tuple[str, int]] = {}  # calls the shards need not ask about
        try:
            if self._store is not None and not self._tools:  # the cache's, run here
                counted = await run_cached_workers(context, self._store, task, plan, records)
            rest = [i for i in range(1, len(plan) + 1) if i not in records]
            if not rest:
                return
            count = shard_count(self._ray, run_config.shards, len(rest))
            self._config = replace(run_config,
                                   concurrency=math.ceil(run_config.concurrency / count))
            self._actors = POOL.take(self._ray, count)
            limits = RateLimits(run_config) if (run_config.rpm or run_config.tpm) else None
            shares = [tuple((i, plan[i - 1]) for i in rest[k::count]) for k in range(count)]
            pumps = [asyncio.create_task(self._pump(context, task, len(plan), records, k,
                                                    share, limits, again=False,
                                                    counted=counted))
                     for k, share in enumerate(shares) if share]
            # Not gather: a cancel here must not cancel them. No full collections
            # meanwhile: they would walk every record the run keeps (engine/gcpause).
            with full_collections_deferred():
                await asyncio.wait(pumps)
            for pump in pumps:
                pump.result()
        except asyncio.CancelledError:
            await self._wind_down(context, pumps)
            for index, subtask in enumerate(plan, start=1):
                if index not in records:
                    never_started(context, index, subtask, records)
            raise
        finally:
            for k in self._dead:
                POOL.drop(self._ray, self._actors[k])

    async def _wind_down(self, context: StepContext, pumps: list[asyncio.Task[None]]) -> None:
        """Cancel this run's work on every shard, give its records GRACE seconds, then
        kill the shards still running it (the next run starts new ones)."""
        if not pumps:  # cancelled before any share was sent
            return
        reason = context.halt.reason or "cancelled"
        stop = context.halt.cancel is None and context.halt.stop is not None
        for ident, k in self._running.items():
            self._actors[k].cancel.remote(ident, reason, stop)
        _, late = await asyncio.wait(pumps, timeout=GRACE)
        if not late:
            return
        for k in set(self._running.values()):
            self._dead.add(k)
            self._ray.kill(self._actors[k])
        for pump in late:
            pump.cancel()
        await asyncio.wait(late)

    async def _pump(self, context: StepContext, task: str, total: int,
                    records: dict[int, WorkerRecord], k: int,
                    items: tuple[tuple[int, str], ...], limits: RateLimits | None, *,
                    again: bool, counted: dict[str, tuple[str, int]] | None = None) -> None:
        """Run ``items`` on shard ``k`` and deliver what it sends, until it ends.
        ``counted``: first calls the driver counted already (``cachedworkers``)."""
        handle = self._actors[k]
        steps = {worker_step(worker_id(None, index)) for index, _ in items}
        share = ShardRun(next(_IDS), self._config, self._env, self._tools, context.run_id,
                         task, total, items, now=context.now(), wall=time.time(),
                         ask_budget=context.budget.capped, ask_limits=limits is not None,
                         ask_cache=self._store is not None and self._store.serves_cache,
                         counted={step: known for step, known in (counted or {}).items()
                                  if step in steps})
        ledger = Ledger(context, limits)
        waiting: set[asyncio.Task[None]] = set()
        self._running[share.ident] = k
        try:
            batch = await handle.take.remote(share.ident, share)
            while batch is not None:
                answers = self._deliver(context, records, k, ledger, unpack(batch),
                                        waiting, handle, share.ident)
                if answers:
                    handle.answer.remote(share.ident, pack(answers))
                batch = await handle.take.remote(share.ident)
        except self._ray.exceptions.RayActorError as exc:
            for later in waiting:
                later.cancel()
            ledger.close()
            self._dead.add(k)
            await self._rerun(context, task, total, records, k, items, limits, again, exc)
        finally:
            del self._running[share.ident]

    async def _rerun(self, context: StepContext, task: str, total: int,
                     records: dict[int, WorkerRecord], k: int,
                     items: tuple[tuple[int, str], ...], limits: RateLimits | None,
                     again: bool, exc: BaseException) -> None:
        """Shard ``k`` died: its unfinished workers run again once, on the live shards."""
        unfinished = tuple((i, s) for i, s in items if i not in records)
        alive = [j for j in range(len(self._actors)) if j not in self._dead]
        if not unfinished or context.halt.reason is not None:
            return
        if again or not alive:
            why = (f"shard {k} died ({type(exc).__name__})"
                   + (" and this was the worker's second try" if again else
                      " and no shard is left to run it again"))
            for index, subtask in unfinished:
                record = WorkerTally().record(index, subtask, "failed", reason="shard",
                                              error=why, shard=k)
                records[index] = record
                context.emit(WorkerFinished(record, t=context.now()))
            return
        parts = [unfinished[n::len(alive)] for n in range(len(alive))]
        await asyncio.gather(*(
            self._pump(context, task, total, records, j, part, limits, again=True)
            for j, part in zip(alive, parts, strict=True) if part))

    def _deliver(self, context: StepContext, records: dict[int, WorkerRecord], k: int,
                 ledger: Ledger, batch: list[Any], waiting: set[asyncio.Task[None]],
                 handle: Any, ident: int) -> list[Answer]:
        """One batch from shard ``k``, in order; the answers that need no wait."""
        emit, store = context.emit, self._store
        answers: list[Answer] = []
        for item in batch:
            kind = type(item)
            if kind is WorkerFinished:
                record = replace(item.worker, shard=k)
                records[record.index] = record
                emit(WorkerFinished(record, t=item.t))
            elif kind is Served:
                if store is not None:
                    store.served_elsewhere(item.step, item.request, context.config.worker,
                                           item.response, item.source, item.error_type,
                                           item.occurrence)
            elif kind is ToolRan:
                if store is not None:
                    store.tool_elsewhere(item.key, item.outcome)
            elif kind is Tell:
                ledger.tell(item)
            elif kind is Ask and item.kind == "cache":
                answers.append(Answer(item.id, self._cached(context, item)))
            elif kind is Ask:
                answer = ledger.at_once(item)
                if answer is not None:
                    answers.append(answer)
                else:
                    later = asyncio.create_task(self._answer_later(ledger, item, handle, ident))
                    waiting.add(later)
                    later.add_done_callback(waiting.discard)
            else:
                emit(item)
                if kind is CallFinished:
                    context.calls.report_budget()
        return answers

    def _cached(self, context: StepContext, ask: Ask) -> tuple[int, Any]:
        """A shard's call, asked of the run's cache: its occurrence and cached answer."""
        step, request = ask.args
        if self._store is None:  # the shard only asks when there is one
            return 0, None
        return self._store.cached_elsewhere(step, request, context.config.worker)

    @staticmethod
    async def _answer_later(ledger: Ledger, ask: Ask, handle: Any, ident: int) -> None:
        handle.answer.remote(ident, pack([await ledger.answer(ask)]))
