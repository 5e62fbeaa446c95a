"""A synthetic but realistic event stream, built from the real event dataclasses.

It lets the dashboard, the timeline and the tables be exercised at any scale (500 or
1,000 workers) without a server. The stream is a deterministic function of its
arguments: simulated times, not the wall clock.

    events = synthetic_events(workers=500, concurrency=50, retry_every=7, tool_every=5)
    run = synthetic_run(workers=8)          # the same stream folded by RunRecordBuilder
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

from ..api.result import Run
from ..config.swarmconfig import SwarmConfig
from ..engine.recordbuilder import RunRecordBuilder
from ..record import events as ev
from ..record.rows import CallRecord, ToolCallRecord, WorkerRecord
from ..record.usage import Usage

__all__ = ["synthetic_events", "synthetic_run"]

# gpt-4.1-mini list prices per token, so the figures look like a real run's.
_INPUT_USD = Decimal("0.0000004")
_OUTPUT_USD = Decimal("0.0000016")


def _cost(usage: Usage, unknown: bool) -> Decimal | None:
    if unknown or usage.prompt_tokens is None or usage.completion_tokens is None:
        return None
    return usage.prompt_tokens * _INPUT_USD + usage.completion_tokens * _OUTPUT_USD


def _call(
    step: str, role: str, start: float, latency: float, usage: Usage, *, attempts: int = 1,
    cached: bool = False, error: str | None = None, unknown_cost: bool = False,
) -> CallRecord:
    cost = Decimal(0) if cached or error else _cost(usage, unknown_cost)
    return CallRecord(
        step=step, role=role, model="gpt-4.1-mini", source="cache" if cached else "live",
        usage=usage, cost_usd=cost, started=round(start, 6), latency=round(latency, 6),
        attempts=attempts, fingerprint=f"{step}-fp", error=error,
        status=500 if error else None,
    )


def synthetic_events(
    workers: int = 8,
    *,
    task: str = "Compare five vector databases for a small team.",
    run_id: str = "synthetic0001",
    concurrency: int = 4,
    latency: float = 0.5,
    retry_every: int = 0,
    tool_every: int = 0,
    fail_every: int = 0,
    cached_every: int = 0,
    budget_usd: str | None = None,
    unknown_cost: bool = False,
    answer: str = "## Answer\n\n- **Qdrant**: simple to run\n- `pgvector`: already in Postgres",
    status: str = "completed",
) -> list[ev.Event]:
    """Every event of one simulated run, in emission order.

    ``retry_every=k`` gives every k-th worker one retried attempt (after a rate-limit
    wait), ``tool_every`` one tool call between two model calls, ``fail_every`` a final
    provider failure, ``cached_every`` a cache hit.
    """
    options: dict[str, Any] = {"model": "gpt-4.1-mini", "workers": workers,
                               "concurrency": concurrency}
    if budget_usd is not None:
        options["budget"] = budget_usd
    config = SwarmConfig().with_options(**options)
    cap = None if budget_usd is None else Decimal(budget_usd)
    timed: list[tuple[float, int, ev.Event]] = []
    spent = Decimal(0)
    tokens = 0

    def add(event: ev.Event) -> None:
        timed.append((event.t, len(timed), event))

    def finish_call(record: CallRecord) -> None:
        nonlocal spent, tokens
        t = record.started + record.latency
        add(ev.CallFinished(record, t=t))
        spent += record.cost_usd or 0
        tokens += record.usage.total_tokens or 0
        if cap is not None:
            add(ev.BudgetUpdated(spent, Decimal("0.001"), cap, tokens, t=t))

    add(ev.RunStarted(run_id, task, config.summary(), "2026-01-01T00:00:00+00:00"))
    add(ev.CallStarted("planner", 1, "gpt-4.1-mini", t=0.01))
    finish_call(_call("planner", "planner", 0.01, 0.4, Usage(120, 80, requests=1)))
    tasks = tuple(f"Sub-task {i}: look at option {i} <and> its costs"
                  for i in range(1, workers + 1))
    plan_t = 0.42
    add(ev.PlanReady(tasks, '{"tasks": [...]}', t=plan_t))
    slots = [plan_t] * concurrency
    heapq.heapify(slots)
    end_of_workers = plan_t
    for index in range(1, workers + 1):
        start = heapq.heappop(slots)
        end = _worker(add, finish_call, index, tasks[index - 1], start, latency, retry_every,
                      tool_every, fail_every, cached_every, unknown_cost)
        if index == concurrency * 2 and retry_every:
            add(ev.ConcurrencyChanged("http://127.0.0.1:1/v1", max(1, concurrency // 2), "429",
                                   t=end))
        heapq.heappush(slots, end)
        end_of_workers = max(end_of_workers, end)
    finished = [i for i in range(1, workers + 1) if not (fail_every and i % fail_every == 0)]
    t = end_of_workers + 0.01
    add(ev.ReducerStarted(tuple(finished), t=t))
    add(ev.CallStarted("reducer", 1, "gpt-4.1-mini", t=t))
    for n, piece in enumerate(_pieces(answer)):
        add(ev.ReducerDelta(piece, t=t + 0.05 + n * 0.01))
    reducer = _call("reducer", "reducer", t, 0.6, Usage(50 * len(finished), 200, requests=1),
                    unknown_cost=unknown_cost)
    finish_call(reducer)
    end = t + 0.61
    add(ev.RunFinished(status, answer, None,  # type: ignore[arg-type]
                       duration=round(end, 6), t=end))
    timed.sort(key=lambda item: (item[0], item[1]))
    return [event for _, _, event in timed]


def _worker(
    add: Any, finish_call: Any, index: int, subtask: str, start: float, latency: float,
    retry_every: int, tool_every: int, fail_every: int, cached_every: int, unknown_cost: bool,
) -> float:
    step = f"worker-{index}"
    length = latency * (1 + (index % 5) / 10)
    usage = Usage(300 + index % 17, 150 + index % 29, requests=1)
    calls: list[CallRecord] = []
    tool_calls = 0
    add(ev.WorkerStarted(index, subtask, t=start))
    add(ev.CallStarted(step, 1, "gpt-4.1-mini", t=start))
    t = start
    attempts = 1
    if retry_every and index % retry_every == 0:
        add(ev.CallRetried(step, 1, "RateLimitError: 429", 0.1, 429, t=t + 0.05))
        add(ev.RateLimitWait(step, True, t=t + 0.05))
        add(ev.RateLimitWait(step, False, t=t + 0.15))
        add(ev.CallStarted(step, 2, "gpt-4.1-mini", t=t + 0.15))
        attempts = 2
    if fail_every and index % fail_every == 0:
        record = _call(step, "worker", t, length, Usage(requests=attempts),
                       attempts=attempts, error="ProviderError: HTTP 500 after retries")
        finish_call(record)
        worker = WorkerRecord(index, subtask, "failed", reason="provider", started=t,
                              latency=length, attempts=attempts, calls=1,
                              usage=record.usage, cost_usd=Decimal(0), error=record.error)
        add(ev.WorkerFinished(worker, t=t + length))
        return t + length
    cached = bool(cached_every and index % cached_every == 0)
    if tool_every and index % tool_every == 0:
        first = _call(step, "worker", t, length / 2, usage, attempts=attempts,
                      unknown_cost=unknown_cost)
        finish_call(first)
        calls.append(first)
        tool_start = t + length / 2
        add(ev.ToolCallFinished(ToolCallRecord(index, 1, f"call_{index}", "lookup",
                                            f'{{"id": {index}}}', f'{{"price": {index}}}',
                                            None, tool_start, 0.05), t=tool_start + 0.05))
        tool_calls = 1
        add(ev.CallStarted(step, 1, "gpt-4.1-mini", t=tool_start + 0.05))
        t = tool_start + 0.05
        length = length / 2
        attempts = 1
    record = _call(step, "worker", t, length, usage, attempts=attempts, cached=cached,
                   unknown_cost=unknown_cost)
    finish_call(record)
    calls.append(record)
    total = sum((call.usage for call in calls), Usage())
    end = record.started + record.latency
    worker = WorkerRecord(
        index, subtask, "completed", output=f"Findings of worker {index}.", usage=total,
        cost_usd=total.cost, started=start,
        latency=round(end - start, 6), attempts=sum(c.attempts for c in calls),
        calls=len(calls), tool_calls=tool_calls, cached_calls=int(cached),
    )
    add(ev.WorkerFinished(worker, t=end))
    return end


def _pieces(text: str, size: int = 12) -> Iterator[str]:
    for start in range(0, len(text), size):
        yield text[start:start + size]


def synthetic_run(workers: int = 8, **options: Any) -> Run:
    """The Run that :func:`synthetic_events` folds into, through the real RunRecordBuilder."""
    recorder = RunRecordBuilder(Run)
    for event in synthetic_events(workers, **options):
        recorder.on_event(event)
    assert recorder.run is not None
    return Run.of(recorder.run)
