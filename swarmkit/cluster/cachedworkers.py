"""The workers of a cluster run that the kernel's cache answers whole, run in the kernel.

A plain worker (no tools, no output schema) makes one call, and its request is known
before it runs. When the run reads the cache and holds that request's answer, sending
the worker to a shard would cost a round trip to ask the kernel for what the kernel
has: the kernel runs it itself instead (``engine/worker.run_worker``, through the run's
own call store, which serves the hit at $0, as one process does), and only the others
go to the shards. Such a worker's ``shard`` is None. A worker with tools or a schema
goes to a shard whatever the cache holds; its shard asks the cache before each call.
The other plain workers' calls are counted here before they go (``counted``), so their
shards need not ask.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from itertools import islice

from ..engine.context import StepContext
from ..engine.worker import run_worker, worker_messages
from ..record.modelcall import ChatRequest
from ..record.rows import WorkerRecord
from ..record.steps import worker_id, worker_step
from ..store import CallStore

__all__ = ["run_cached_workers"]


def first_requests(context: StepContext, task: str, plan: tuple[str, ...]
                   ) -> list[ChatRequest] | None:
    """Each plain worker's one request, in plan order; None when the workers are not
    plain (tools or an output schema: their requests are made as they go)."""
    config = context.config
    if config.output_schema is not None:
        return None
    return [context.request("worker", worker_messages(
        config.system_prompt, task, index, subtask, len(plan)))
        for index, subtask in enumerate(plan, start=1)]


async def run_cached_workers(context: StepContext, store: CallStore, task: str,
                             plan: tuple[str, ...], records: dict[int, WorkerRecord]
                             ) -> dict[str, tuple[str, int]]:
    """Run, here, the plain workers whose one call the cache answers, at most the run's
    concurrency at once; each leaves its record in ``records``. Returns the calls of
    the other plain workers, counted here for the shards (step: fingerprint and
    occurrence), so that they need not ask: when no two of the plan's requests are
    equal (else the order they are made in decides their occurrences, and the shards
    ask)."""
    if not store.serves_cache:
        return {}
    requests = first_requests(context, task, plan)
    if requests is None:
        return {}
    role = context.config.worker
    ahead: Counter[str] = Counter()
    steps = [worker_step(worker_id(None, index)) for index in range(1, len(plan) + 1)]
    found = iter([index for index, (step, request) in enumerate(zip(steps, requests,
                                                                    strict=True), start=1)
                  if store.would_hit(step, request, role, ahead)])
    slots = asyncio.Semaphore(context.config.concurrency)
    while chunk := list(islice(found, context.config.concurrency)):
        await asyncio.gather(*(run_worker(context, None, task, index, plan[index - 1],
                                          len(plan), slots, records) for index in chunk))
    if any(count > 1 for count in ahead.values()):
        return {}
    counted = {}
    for index, (step, request) in enumerate(zip(steps, requests, strict=True), start=1):
        if index not in records:
            occurrence, _ = store.cached_elsewhere(step, request, role, look=False)
            counted[step] = (request.fingerprint(), occurrence)
    return counted
