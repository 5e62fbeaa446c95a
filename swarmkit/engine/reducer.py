"""The reducer: merge the finished workers' outputs into one answer, within the budget.

While workers run, room is held for the reducer (its worst case, capped at a share of
what is left). When the cap is short at the end, the reducer's answer is shortened first,
then it is given fewer outputs; the workers it received are recorded in the Run. Outputs
past the reducer's input limit are merged as a tree of parts (``reducetree``).
"""

from __future__ import annotations

import json
from collections import Counter
from decimal import Decimal
from typing import Any

from ..config.prompts import LOCAL_REDUCER_PROMPT
from ..errors import BudgetExceeded
from ..record.events import ReducerDelta, ReducerStarted
from ..record.modelcall import ChatRequest
from ..record.rows import WorkerRecord
from .budget import Reservation
from .context import StepContext
from .reducerinput import (
    input_limit,
    reducer_messages,
    reducer_prompts,
    reducer_request,
    worker_part,
)
from .reducetree import reduce_in_parts, refusal
from .scaffold import without_scaffold

__all__ = ["hold_for_reducer", "mapped_only", "reduce", "reducer_messages",
           "reducer_request", "reducer_text", "reserve_reducer"]

# Average bytes per token when sizing the reducer's hold before worker outputs exist.
_BYTES_PER_TOKEN_ESTIMATE = 4
# The reducer's answer is shortened down to this when that is what fits the budget.
_MIN_REDUCER_TOKENS = 64
# The most of the remaining cap held back for the reducer while workers run.
_REDUCER_SHARE = Decimal("0.25")


def _cleanup(context: StepContext) -> dict[str, Any]:
    """The scaffold cleanup's options for a reducer that ran with the small local model's
    prompt (engine.scaffold): its own words and its prompt's go too."""
    prompt = context.config.reducer_prompt
    return {"thorough": prompt == LOCAL_REDUCER_PROMPT, "prompt": prompt}


def _nothing_to_reduce(records: list[WorkerRecord]) -> str:
    labels = Counter(r.status_label for r in records)
    counts = ", ".join(f"{n} {label}" for label, n in sorted(labels.items()))
    budget = any(r.reason == "budget" for r in records)
    hint = "raise the budget or lower max_tokens" if budget else "see the workers' errors"
    return f"no worker finished ({counts}); nothing to reduce; {hint}"


def reducer_text(record: WorkerRecord) -> str:
    """What the reducer is given of a finished worker: its typed value as JSON when it
    has one (``--schema``), else its text."""
    if record.data is not None:
        return json.dumps(record.data, ensure_ascii=False)
    return record.output or ""


def hold_for_reducer(context: StepContext, task: str, plan: tuple[str, ...]) -> None:
    """Hold room for the reducer: its worst case, capped at a share of what is left."""
    if not context.budget.capped:
        return
    worker_bytes = context.config.worker.max_tokens * _BYTES_PER_TOKEN_ESTIMATE
    inputs = [(i + 1, t, "") for i, t in enumerate(plan)]
    skeleton = reducer_request(context.config, task, inputs)
    usd, tokens = context.calls.worst_case("reducer", skeleton)
    price = context.prices.lookup(context.config.reducer.model)
    extra_tokens = len(plan) * worker_bytes
    tokens += extra_tokens
    if price is not None:
        usd += price.bound(extra_tokens, 0)
    limit = input_limit(context.config, context.prices).tokens
    prompts = reducer_prompts(context.config, task, plan, worker_bytes,
                              context.config.reducer.max_tokens * _BYTES_PER_TOKEN_ESTIMATE,
                              limit)
    if len(prompts) > 1:  # past the input limit: a tree of parts, then the final merge
        answer = context.config.reducer.max_tokens
        tokens = sum(prompts) + answer * len(prompts)
        usd = Decimal(0) if price is None else sum(
            (price.bound(prompt, answer) for prompt in prompts), Decimal(0))
    # Hold the reducer's worst case, but never more than a share of what is left, so
    # a bigger cap always leaves the workers at least as much room (monotonic), and a
    # short reducer budget is met later by shortening its answer and its inputs.
    snap = context.budget.snapshot()
    if snap.cap_usd is not None:
        usd = min(usd, (snap.cap_usd - snap.spent_usd) * _REDUCER_SHARE)
    if snap.cap_tokens is not None:
        tokens = min(tokens, int((snap.cap_tokens - snap.spent_tokens) * _REDUCER_SHARE))
    if not context.budget.hold(usd, tokens, context.run_id):
        raise BudgetExceeded("budget spent before the workers could start; raise the budget")


def mapped_only(
    context: StepContext, records: list[WorkerRecord]
) -> tuple[Any, str | None, str | None]:
    """``reduce=False``: no reducer call. The run is completed when every worker
    finished (partial when some did, failed when none did); the answer is None and the
    workers' outputs are the result."""
    context.budget.release_hold(context.run_id)
    done = sum(r.status == "completed" for r in records)
    if not done:
        return "failed", None, _nothing_to_reduce(records)
    return ("completed" if done == len(records) else "partial"), None, None


async def reduce(
    context: StepContext, task: str, plan: tuple[str, ...], records: list[WorkerRecord]
) -> tuple[Any, str | None, str | None]:
    done = [r for r in records if r.status == "completed"]
    context.budget.release_hold(context.run_id)
    if not done:
        return "failed", None, _nothing_to_reduce(records)
    inputs = [(r.index, r.task, reducer_text(r)) for r in done]

    def on_delta(text: str, attempt: int) -> None:
        context.emit(ReducerDelta(text, context.now(), attempt))

    limit = input_limit(context.config, context.prices)
    whole = reducer_request(context.config, task, inputs)
    if whole.prompt_token_bound() > limit.tokens:
        refused = refusal(context.config, task, limit)
        if refused is not None:
            return "failed", None, refused
        answer = without_scaffold(await reduce_in_parts(
            context, task, [worker_part(*i) for i in inputs], limit.tokens, on_delta),
            local=context.config.reducer.is_local, **_cleanup(context))
        return ("completed" if len(inputs) == len(plan) else "partial"), answer, None
    request, reservation, inputs = await reserve_reducer(context, task, inputs)
    context.emit(ReducerStarted(tuple(index for index, _, _ in inputs), context.now()))
    outcome = await context.calls.call(
        "reducer", "reducer", request, reservation=reservation, on_delta=on_delta
    )
    status = "completed" if len(inputs) == len(plan) else "partial"
    answer = without_scaffold(outcome.response.content or "",
                              local=context.config.reducer.is_local,
                              **_cleanup(context))
    return status, answer, None


async def reserve_reducer(
    context: StepContext, task: str, inputs: list[tuple[int, str, str]],
    what: str = "the reducer",
) -> tuple[ChatRequest, Reservation | None, list[tuple[int, str, str]]]:
    """Reserve for the reducer (``what``: a child swarm's names its step). If the cap is
    short, shorten its answer first, then give it fewer worker outputs (the reducer's
    inputs are recorded in the Run; a child swarm's in its split's result)."""
    max_tokens = context.config.reducer.max_tokens
    while True:
        request = reducer_request(context.config, task, inputs, max_tokens)
        if not context.budget.capped:
            return request, None, inputs
        usd, tokens = context.calls.worst_case("reducer", request)
        try:
            reservation = await context.budget.reserve(usd, tokens, what=what)
            return request, reservation, inputs
        except BudgetExceeded:
            if max_tokens > _MIN_REDUCER_TOKENS:
                max_tokens = max(_MIN_REDUCER_TOKENS, max_tokens // 2)
            elif len(inputs) > 1:
                inputs = inputs[: max(1, len(inputs) * 3 // 4)]
            else:
                raise
