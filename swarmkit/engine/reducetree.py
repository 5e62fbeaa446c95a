"""A tree reduction, for worker outputs that do not fit one reducer request.

The outputs are split, in worker order, into parts that fit the reducer's input limit
(an output larger than a part is cut, and its text says so). Each part is merged by its
own call, step ``reducer-<level>.<i>``, through the run's BudgetedCalls like any call
(so the budget, the cache, cassettes and the history see it as a step of its own). The
partial answers are merged the same way, level by level, until they fit one request:
that last call is the ``reducer`` step, whose answer streams as a one-call reducer's does.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

from ..config.swarmconfig import SwarmConfig
from ..errors import BudgetExceeded, ProviderError, ReplayMiss
from ..record.events import ReducerStarted
from .budgetedcalls import build_request
from .context import StepContext
from .reducerinput import (
    MERGE_INTRO,
    MIN_ROOM,
    PART_INTRO,
    InputLimit,
    Part,
    fit,
    head_bound,
    layout,
    merge_messages,
    part_size,
)

__all__ = ["reduce_in_parts", "refusal"]


def refusal(config: SwarmConfig, task: str, limit: InputLimit) -> str | None:
    """Why no tree can reduce within ``limit`` (the reducer's prompt and the task leave
    too little room for any output), or None when one can."""
    head = head_bound(config, task)
    if limit.tokens - head >= MIN_ROOM:
        return None
    return (f"the reducer's input limit is {limit.tokens} tokens ({limit.source}), and its "
            f"prompt and the task take {head} of them, leaving less than {MIN_ROOM} for the "
            "workers' outputs; raise reducer_max_input_tokens, lower reducer_max_tokens or "
            "shorten the task and reducer_prompt")


async def reduce_in_parts(
    context: StepContext,
    task: str,
    inputs: Sequence[Part],
    limit: int,
    on_delta: Callable[[str, int], None],
) -> str:
    """Merge ``inputs`` (the workers' outputs, in order) in parts of at most ``limit``
    prompt tokens each, then merge the partial answers; return the final answer."""
    config = context.config
    room = limit - head_bound(config, task)
    items = list(inputs)
    level = 1
    while True:
        caps, groups = layout([part_size(item) for item in items], room)
        fitted = [fit(item, cap) for item, cap in zip(items, caps, strict=True)]
        if level == 1:
            parts = len(groups) if len(groups) > 1 else 0
            context.emit(ReducerStarted(tuple(item.first for item in inputs), context.now(),
                                        parts=parts))
        if len(groups) == 1:
            messages = merge_messages(config.reducer_prompt, task, fitted,
                                      None if level == 1 else MERGE_INTRO)
            stream = config.stream_reducer and not config.reducer.is_local
            request = build_request(config, "reducer", messages, stream=stream)
            outcome = await context.calls.call("reducer", "reducer", request,
                                               on_delta=on_delta)
            return outcome.response.content or ""
        chunks = [[fitted[i] for i in group] for group in groups]
        answers = await _merge_level(context, task, level, chunks)
        items = [
            Part(f"Partial answer {level}.{n} (workers {chunk[0].first}-{chunk[-1].last}):",
                 answer, chunk[0].first, chunk[-1].last)
            for n, (chunk, answer) in enumerate(zip(chunks, answers, strict=True), start=1)
        ]
        level += 1


async def _merge_level(
    context: StepContext, task: str, level: int, chunks: list[list[Part]]
) -> list[str]:
    """One partial answer per chunk, from the calls ``reducer-<level>.<n>``, run at most
    ``concurrency`` at once. The first failure (budget, provider, replay) stops the
    level, cancelling its other calls, and is raised as itself."""
    config = context.config
    slots = asyncio.Semaphore(config.concurrency)
    answers = [""] * len(chunks)

    async def merge(n: int, chunk: list[Part]) -> None:
        messages = merge_messages(config.reducer_prompt, task, chunk, PART_INTRO)
        request = build_request(config, "reducer", messages, stream=False)
        async with slots:
            outcome = await context.calls.call("reducer", f"reducer-{level}.{n}", request)
        answers[n - 1] = outcome.response.content or ""

    try:
        async with asyncio.TaskGroup() as group:
            for n, chunk in enumerate(chunks, start=1):
                group.create_task(merge(n, chunk))
    except* (BudgetExceeded, ProviderError, ReplayMiss) as failed:
        raise failed.exceptions[0] from None
    return answers
