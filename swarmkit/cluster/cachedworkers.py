"""The workers of a cluster run that the kernel's cache answers whole, run in the kernel.

A plain worker (no tools, no output schema) makes one call, and its request is known
before it runs. When the run reads the cache and holds that request's answer, sending
the worker to a shard would cost a round trip to ask the kernel for what the kernel
has: the kernel runs it itself instead (``engine/worker.run_worker``, through the run's
own call store, which serves the hit at $0, as one process does), and only the others
go to the shards. Such a worker's ``shard`` is None. A worker with tools or a schema
goes to a shard whatever the cache holds; its shard asks the cache before each call.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from itertools import islice

from ..engine.context import StepContext
from ..engine.worker import run_worker, worker_messages
from ..record.rows import WorkerRecord
from ..record.steps import worker_id, worker_step
from ..store import CallStore

__all__ = ["run_cached_workers"]


def cached_workers(context: StepContext, store: CallStore, task: str,
                   plan: tuple[str, ...]) -> list[int]:
    """The plain workers of ``plan`` (1-based) whose one call the cache answers."""
    config = context.config
    if not store.serves_cache or config.output_schema is not None:
        return []
    ahead: Counter[str] = Counter()
    found = []
    for index, subtask in enumerate(plan, start=1):
        request = context.request("worker", worker_messages(
            config.system_prompt, task, index, subtask, len(plan)))
        if store.would_hit(worker_step(worker_id(None, index)), request, config.worker,
                           ahead):
            found.append(index)
    return found


async def run_cached_workers(context: StepContext, store: CallStore, task: str,
                             plan: tuple[str, ...], records: dict[int, WorkerRecord]) -> None:
    """Run, here, the workers the cache answers whole (``cached_workers``), at most
    the run's concurrency at once; each leaves its record in ``records``."""
    found = iter(cached_workers(context, store, task, plan))
    slots = asyncio.Semaphore(context.config.concurrency)
    while chunk := list(islice(found, context.config.concurrency)):
        await asyncio.gather(*(run_worker(context, None, task, index, plan[index - 1],
                                          len(plan), slots, records) for index in chunk))
