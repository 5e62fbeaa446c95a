"""A worker's split: its sub-task run as a child swarm, under the run's budget and slots.

Below the run's ``depth`` a worker is offered the ``split_task`` tool (the tool loop in
``swarmkit.tools`` offers it and hands the call here, through ``WorkerContext.split``).
A split runs its sub-tasks as child workers (``<id>.1`` .. ``<id>.<n>``, each one a
worker like any other, which may split again above the depth), then a reducer call,
step ``reducer-of-<id>`` with role ``reducer``, whose answer is the tool's result; the
worker then writes its own answer, as after any tool call.

The caps: ``max_children`` per split and ``max_total_workers`` over the whole tree (the
plan's workers counted, the rest shared out by position: ``ChildSwarms``); a split over
a cap is cut to its first sub-tasks and the result tells the worker so. One budget:
every child call reserves from the run's. One set of slots: the children take the run's
``concurrency`` slots, and their parent lends its own while it waits for them
(``WorkerSlot.lent``), so concurrency 1 runs the tree a call at a time; the child
reducer runs on the parent's slot, taken back. Rate limits are per key at an endpoint
(the provider's), so the tree shares them like any calls.

Every request of a split is a pure function of the run's config, the parent's sub-task
and the split's sub-tasks, so a resume's cache and a replay's cassette serve a tree as
they serve a flat swarm: only the missing leaves are asked again.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace

from ..config.swarmconfig import SwarmConfig
from ..errors import BudgetExceeded, ProviderError, ReplayMiss
from ..record.events import WorkerSplit
from ..record.rows import WorkerRecord
from ..record.steps import child_reducer_step, worker_id
from .context import StepContext
from .reducer import reducer_request, reducer_text, reserve_reducer
from .reducerinput import input_limit
from .scaffold import without_scaffold
from .worker import WorkerContext, WorkerLoop, never_started, run_worker

__all__ = ["ChildSwarms", "capped_subtasks", "shares"]


def capped_subtasks(
    subtasks: Sequence[str], max_children: int, room: int | None
) -> tuple[tuple[str, ...], str | None]:
    """The sub-tasks a split runs: blank ones and repeats dropped, then the first
    ``max_children``, then the first ``room`` (what ``max_total_workers`` leaves, None: no
    cap); and the option that cut them, if one did."""
    kept = tuple(dict.fromkeys(" ".join(str(t).split()) for t in subtasks if str(t).strip()))
    cut_by = None
    if len(kept) > max_children:
        kept, cut_by = kept[:max_children], "max_children"
    if room is not None and len(kept) > room:
        kept, cut_by = kept[:max(room, 0)], "max_total_workers"
    return kept, cut_by


def shares(room: int, count: int) -> list[int]:
    """``room`` split as evenly as whole numbers go among ``count``, the first ones the
    larger: ``shares(7, 3) == [3, 2, 2]``."""
    base, extra = divmod(max(room, 0), count)
    return [base + (1 if i < extra else 0) for i in range(count)]


class ChildSwarms:
    """The ``Splitter`` of one run: runs each worker's split as a child swarm, within the
    tree's ``max_total_workers``.

    The cap is shared out by position, never by who splits first: what it leaves after
    the plan is split evenly among the plan's workers (each one's subtree may hold that
    many more), and what a split leaves of a worker's share, evenly among its children.
    So which split is cut depends only on the plan and the splits, not on timing, and a
    resume or a replay asks exactly the recorded requests."""

    def __init__(self, context: StepContext, loop: WorkerLoop | None,
                 slots: asyncio.Semaphore, planned: int) -> None:
        self.context = context
        self.loop = loop
        self.slots = slots
        cap = context.config.max_total_workers
        # Each worker's share: how many workers its subtree may add (None: no cap).
        self.room: dict[str, int | None] = {
            str(i): share for i, share in enumerate(
                [None] * planned if cap is None else shares(cap - planned, planned), 1)}

    async def __call__(self, worker: WorkerContext, subtasks: Sequence[str]) -> str:
        config = self.context.config
        room = self.room.get(worker.id)
        tasks, cut_by = capped_subtasks(subtasks, config.max_children, room)
        if len(tasks) < 2:
            return _no_split(len(subtasks), cut_by, config.max_total_workers)
        parent = worker.id
        left = None if room is None else shares(room - len(tasks), len(tasks))
        for index in range(1, len(tasks) + 1):
            self.room[worker_id(parent, index)] = None if left is None else left[index - 1]
        self.context.emit(WorkerSplit(parent, tasks, len(subtasks), self.context.now(),
                                      cut_by))
        records = worker.tally.children
        assert worker.slot is not None
        await worker.slot.lent(self._children(worker, parent, tasks, records))
        done = [records[i] for i in sorted(records) if records[i].status == "completed"]
        note = _cut_note(len(subtasks), len(tasks), cut_by, config)
        if not done:
            counts = Counter(r.status_label for r in records.values())
            said = ", ".join(f"{n} {label}" for label, n in sorted(counts.items()))
            return (f"ToolError: no sub-task of the split finished ({said}); answer your "
                    f"sub-task yourself.{note}")
        try:
            answer, merged = await self._reduce(worker, done)
        except (BudgetExceeded, ProviderError) as exc:
            return (f"ToolError: the sub-tasks' answers could not be merged ({exc}); answer "
                    f"your sub-task yourself.{note}")
        worker.tally.merged = answer
        missing = "" if merged == len(tasks) else (
            f"\n\n(Merged {merged} of the {len(tasks)} sub-tasks' answers: the others did "
            "not finish, or did not fit the budget or the reducer's input limit.)")
        return answer + missing + note

    async def _children(self, worker: WorkerContext, parent: str, tasks: tuple[str, ...],
                        records: dict[int, WorkerRecord]) -> None:
        try:
            async with asyncio.TaskGroup() as group:
                for index, subtask in enumerate(tasks, start=1):
                    group.create_task(run_worker(
                        self.context, self.loop, worker.subtask, index, subtask, len(tasks),
                        self.slots, records, parent=parent, splitter=self))
        except* ReplayMiss as group:  # the cassette no longer matches: the run stops
            raise group.exceptions[0] from None
        finally:
            for index, subtask in enumerate(tasks, start=1):
                if index not in records:
                    never_started(self.context, index, subtask, records, parent)

    async def _reduce(self, worker: WorkerContext,
                      done: list[WorkerRecord]) -> tuple[str, int]:
        """The child swarm's reducer: one call over the finished children's outputs, on
        the parent's slot and tally (its figures are the parent's own); its answer, and
        how many outputs it merged (fewer when the budget was short)."""
        step = child_reducer_step(worker.id)
        inputs = [(r.index, r.task, reducer_text(r)) for r in done]
        # One request, within the reducer's input limit: the last outputs are left out
        # until it fits (the result says how many were merged), never a tree of parts.
        limit = input_limit(self.context.config, self.context.prices).tokens
        while len(inputs) > 1 and reducer_request(
                self.context.config, worker.subtask, inputs).prompt_token_bound() > limit:
            inputs.pop()
        request, reservation, inputs = await reserve_reducer(self.context, worker.subtask,
                                                             inputs, what=step)
        # No one watches a child reducer's text arrive: not streamed.
        outcome = await self.context.calls.call(
            "reducer", step, replace(request, stream=False), reservation=reservation,
            into=worker.tally.calls)
        return without_scaffold(outcome.response.content or "",
                                local=self.context.config.reducer.is_local), len(inputs)


def _no_split(asked: int, cut_by: str | None, cap: int | None) -> str:
    if cut_by == "max_total_workers":
        return (f"ToolError: refused: your share of the run's tree is full "
                f"(max_total_workers={cap}); no sub-task was run. Answer your sub-task "
                "yourself.")
    return (f"ToolError: refused: a split needs at least 2 distinct sub-tasks, got {asked}; "
            "nothing was run. Answer your sub-task yourself, or split it into 2 or more.")


def _cut_note(asked: int, ran: int, cut_by: str | None, config: SwarmConfig) -> str:
    if cut_by is None:
        return ""
    cap = config.max_children if cut_by == "max_children" else config.max_total_workers
    return (f"\n\nNote: you asked for {asked} sub-tasks; only the first {ran} ran "
            f"({cut_by}={cap}). Cover the rest yourself in your answer.")
