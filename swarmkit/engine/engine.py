"""The engine: plan, fan out workers, reduce. Async, and knows nothing of Jupyter.

It owns every task it starts. Its steps (planner, workers, reducer) get a StepContext,
not the engine. Every model call goes step → BudgetedCalls → the RunCaller (call store,
then provider), under the budget. It reports only through events and returns a RunRecord.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from ..config.swarmconfig import ROLES, SwarmConfig
from ..errors import BudgetExceeded, ConfigError, PlanError, ProviderError, ReplayMiss
from ..record.carried import CarriedCall
from ..record.events import (
    Event,
    PlanReady,
    PlanReviewed,
    RunFinished,
    RunStarted,
    ScoreRecorded,
    Sink,
)
from ..record.review import PlanReview
from ..record.rows import BatchRecord, WorkerRecord
from ..record.runrecord import RunRecord
from .batchfanout import check_batch, fan_out_batched
from .batchservice import BatchService
from .budget import Budget
from .context import StepContext
from .gcpause import full_collections_deferred
from .halt import STOPPED, Halt
from .judge import judge_text
from .modelcaller import RunCaller
from .planner import make_plan
from .prices import PriceTable
from .recordbuilder import RunRecordBuilder
from .reducer import hold_for_reducer, mapped_only, reduce
from .scoring import Check, CheckInput, score_checks
from .sinkfanout import SinkFanout
from .subtree import ChildSwarms
from .worker import WorkerContext, WorkerLoop, never_started, run_worker, unexpected
from .workerdispatch import WorkerDispatch

# WorkerContext: re-exported for tools
__all__ = ["STOPPED", "Engine", "WorkerContext", "new_run_id", "resumed_task"]


# The outcomes that are scored (an answer, or without a reducer the workers' outputs):
# a partial run merged what its failed workers left, and that answer is scored too.
_SCORED = ("completed", "partial", "stopped")

_CANCEL_MESSAGES = {
    "timeout": "run timed out",
    "interrupt": "run interrupted",
    "cancelled": "run cancelled",
    STOPPED: "run stopped while planning; nothing to merge",
}


def new_run_id() -> str:
    return uuid.uuid4().hex[:12]


def _quoted(task: str, width: int = 60) -> str:
    text = " ".join(task.split())
    return f'"{text if len(text) <= width else text[:width - 1] + "…"}"'


def resumed_task(run_id: str, stored: str, given: str | None) -> str:
    """The task of a run that resumes run ``run_id``, whose task was ``stored``.

    An omitted or empty ``given`` means the stored task, and so does the same text
    (spacing aside: the stored text is returned, so the requests match the stored
    answers). Another task is refused: the stored plan and answers belong to the stored
    task, and a resume under another would mix the two and pay every call again."""
    if given is None or not given.strip() or given.strip() == stored.strip():
        return stored
    raise ConfigError(f"resume: run {run_id} was for {_quoted(stored)}, not {_quoted(given)}; "
                      "resume it without a task, or start a new run")


class Engine:
    """Runs one swarm. Create one per run; call :meth:`execute` once."""

    def __init__(
        self,
        config: SwarmConfig,
        *,
        caller: RunCaller,
        sinks: Sequence[Sink] = (),
        prices: PriceTable | None = None,
        run_id: str | None = None,
        started_at: str | None = None,
        worker_loop: WorkerLoop | None = None,
        clock: Callable[[], float] = time.perf_counter,
        recorded_duration: float | None = None,
        record_type: type[RunRecord] = RunRecord,
        budget: Budget | None = None,
        batches: BatchService | None = None,
        adopted: Sequence[BatchRecord] = (),
        stored_task: str | None = None,
        checks: Sequence[Check | Callable[..., Any]] = (),
        review: PlanReview | None = None,
        carried: Sequence[CarriedCall] = (),
        dispatch: WorkerDispatch | None = None,
    ) -> None:
        """``budget`` is shared when several engines run under one (a comparison);
        by default the engine has its own, from the config's caps. With ``batch`` on,
        the workers go to ``batches`` (a Batch API); ``adopted`` are the batches of the
        run this one resumes, polled rather than sent again. ``stored_task`` is the task
        of the run this one resumes (``config.resume``): :meth:`execute` takes an empty
        task as that one and refuses another (``resumed_task``). ``checks`` score the
        answer after the reducer, then the judge does (``config.judge``). ``review``: the
        given tasks are a reviewed plan, recorded as ``RunRecord.review``.

        ``carried``: calls made for this run before it began, in their order (the
        planner's, made by ``swarmkit.plan``), taken only with given tasks. Instead of
        the planner, the run asks ``caller`` for each carried request, which answers it as
        it was answered then (``CallStore.carry``; a replay from its cassette), so its
        events (and so the RunRecord) hold the calls with their recorded usage, cost,
        start and latency. Each is charged to the budget as spent before any worker; a
        cap they are over already ends the run in one line (``BudgetExceeded``). The
        run's clock starts where they ended, so the timeline and the duration include
        them. Then ``PlanReady`` (the given tasks, the planner's raw reply) and, with a
        review, ``PlanReviewed``. ``dispatch`` runs the workers elsewhere (the shards
        of a cluster run) instead of here."""
        if review is not None and tuple(review.approved) != config.tasks:
            raise ConfigError("a reviewed plan runs its approved sub-tasks: give them as "
                              "tasks (Plan.run does)")
        self.config = config
        self.review = review
        self.carried = tuple(carried) if config.tasks else ()
        self.checks = tuple(Check.of(check) for check in checks)
        self.stored_task = stored_task
        self.caller = caller
        self.prices = prices or PriceTable.with_overrides(config.prices)
        self.run_id = run_id or new_run_id()
        self.started_at = started_at or dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        self.recorder = RunRecordBuilder(record_type, self.checks)
        self.sinks = SinkFanout([self.recorder, *sinks])
        self.budget = budget or Budget(config.budget_usd, config.budget_tokens)
        self.worker_loop = worker_loop
        self.batches = batches if config.batch else None
        self.dispatch = dispatch
        self.adopted = tuple(adopted)
        self._clock = clock
        self._t0 = clock()
        # In replay the totals line must show the recorded duration, not the replay's.
        self._recorded_duration = recorded_duration
        self._main: asyncio.Task[RunRecord] | None = None
        self.halt = Halt()  # why the run is cut short: read by the steps
        # What the planner, the workers and the reducer see of the run.
        self.context = StepContext.create(
            config, caller, run_id=self.run_id, emit=self.emit, now=self.now,
            prices=self.prices, budget=self.budget, halt=self.halt,
        )
        self._worker_tasks: set[asyncio.Task[None]] = set()  # the running ones
        self.phase = "planning"  # then "workers", "reducing", "scoring", "ended"
        if config.budget_usd is not None:
            for role in (*ROLES, *(("judge",) if config.judge is not None else ())):
                self.prices.require(config.role(role).model)
        if config.batch:
            check_batch(config, self.prices, has_tools=worker_loop is not None,
                        has_service=batches is not None)

    # -- plumbing shared with the steps (through self.context) ----------------------------

    def now(self) -> float:
        return self._clock() - self._t0

    def emit(self, event: Event) -> None:
        self.sinks.deliver(event)

    @property
    def run(self) -> RunRecord | None:
        """The Run as recorded so far (partial while running)."""
        return self.recorder.run

    def cancel(self, reason: str = "cancelled") -> None:
        """Stop the run; finished workers are kept. Call on the engine's loop thread."""
        if self._main is None:
            self.halt.cancel = reason  # execute() has not started: it stops at once
        elif not self._main.done():
            self.halt.cancel = reason
            self._main.cancel()

    def stop(self) -> None:
        """Stop fanning out and merge what finished. Call on the engine's loop thread.

        Pending and running workers are cancelled (recorded as ``cancelled (stopped)``),
        then the reducer runs on the completed ones and the run ends ``stopped``. While
        planning there is nothing to merge, so it is a cancel; while reducing the merge
        is already under way and it changes nothing.
        """
        if self._main is None or self.phase == "planning":
            self.cancel(STOPPED)
            return
        if self.phase != "workers" or self.halt.stop is not None:
            return
        self.halt.stop = STOPPED
        for task in list(self._worker_tasks):
            task.cancel()

    # -- the run -----------------------------------------------------------------------

    async def execute(self, task: str) -> RunRecord:
        if self.stored_task is not None:  # refused before the run starts: nothing is sent
            task = resumed_task(str(self.config.resume), self.stored_task, task)
        self._main = asyncio.current_task()  # type: ignore[assignment]
        timer = None
        if self.config.run_timeout is not None:
            loop = asyncio.get_running_loop()
            timer = loop.call_later(self.config.run_timeout, self.cancel, "timeout")
        self.emit(RunStarted(self.run_id, task, self.config.summary(), self.started_at))
        status, answer, error = "failed", None, None
        if self.halt.cancel is not None:
            self._main.cancel()  # cancelled before it started: the first await stops it
        try:
            plan = await self._plan(task)
            self.phase = "workers"
            records = await self._fan_out(task, plan)
            self.phase = "reducing"
            if self.config.reduce:
                status, answer, error = await reduce(self.context, task, plan, records)
            else:
                status, answer, error = mapped_only(self.context, records)
            if self.halt.stop is not None:
                status = STOPPED  # the answer merges only what finished before the stop
            if status in _SCORED and (answer is not None or not self.config.reduce):
                self.phase = "scoring"
                await self._score(task, answer, records)
        except PlanError as exc:
            self.emit(PlanReady((), exc.raw, self.now()))  # keep the raw reply in the RunRecord
            error = f"PlanError: {exc}"
        except BudgetExceeded as exc:
            error = f"BudgetExceeded: {exc}"
        except ProviderError as exc:
            error = f"ProviderError: {exc}"
        except ReplayMiss as exc:  # the cassette no longer matches: stop and say where
            self._finish("failed", None, f"ReplayMiss: {exc}", duration=self.now())
            raise
        except Exception as exc:  # a bug: still end the RunRecord (and every sink), then raise
            self._finish("failed", None, unexpected(exc))
            raise
        except asyncio.CancelledError:
            status = "cancelled"
            reason = self.halt.cancel or "cancelled"
            error = _CANCEL_MESSAGES.get(reason, f"run cancelled ({reason})")
            if self.halt.cancel is None:
                self._finish(status, answer, error)
                raise
            self._main.uncancel()  # type: ignore[union-attr]
        finally:
            if timer is not None:
                timer.cancel()
        self._finish(status, answer, error)
        assert self.run is not None
        return self.run

    async def plan_only(self, task: str) -> tuple[str, ...]:
        """Run only the planner (``--dry-run``); ``self.run`` keeps the planner's calls.

        A plan ends the run ``planned``: so the history holds it as a dry-run, never as
        a run that died while running, which a resume would pay to finish. (A planner
        that fails raises, as before, and the run is not kept.)"""
        self.emit(RunStarted(self.run_id, task, self.config.summary(), self.started_at))
        plan = await self._plan(task)
        self._finish("planned", None, None)
        return plan

    async def _plan(self, task: str) -> tuple[str, ...]:
        """The planner's plan, or the tasks the user gave (then no planner call at all)."""
        if not self.config.tasks:
            return await make_plan(self.context, task)
        raw = await self._carry() if self.carried else ""
        self.emit(PlanReady(self.config.tasks, raw, self.now()))
        if self.review is not None:
            self.emit(PlanReviewed(self.review, self.now()))
        return self.config.tasks

    async def _carry(self) -> str:
        """The carried calls, through the run's calls; the last answer's text (the
        planner's raw reply). A carried failure (a rung the server refused) is kept as
        recorded and the next carried call follows, as the planner's ladder did."""
        raw = ""
        for call in self.carried:
            try:
                outcome = await self.context.calls.call(call.role, call.step, call.request,
                                                        carried=True)
            except ProviderError:
                continue
            raw = outcome.response.content or ""
        refusal = self.budget.overspent("the planner's calls")
        if refusal is not None:
            raise BudgetExceeded(refusal)
        run = self.run
        ended = max((c.started + c.latency for c in (run.calls if run else ())), default=0.0)
        self._t0 -= max(0.0, ended - self.now())  # the run's clock goes on from them
        return raw

    def _finish(
        self, status: Any, answer: str | None, error: str | None, duration: float | None = None
    ) -> None:
        if duration is None:
            duration = self.now() if self._recorded_duration is None else self._recorded_duration
        self.phase = "ended"
        self.emit(RunFinished(status, answer, error, duration=duration, t=self.now()))
        self.sinks.report()

    async def _score(self, task: str, answer: str | None, records: list[WorkerRecord]) -> None:
        """The checks, then the judge, each score an event as it lands. Without a reducer
        the workers' outputs are what is scored (the judge: each, as judge-0, judge-1...)."""
        if not self.checks and self.config.judge is None:
            return
        outputs = tuple(r.output for r in records if r.status == "completed" and r.output)
        run = self.run
        calls = run.calls if run is not None else []
        # Until the end of the last call, from the recording in replay: a replayed run
        # scores exactly as the recording did.
        seconds = max((c.started + c.latency for c in calls), default=self.now())
        view = CheckInput(answer, outputs, run.cost_usd if run is not None else None,
                          seconds, self.config.output_schema)
        for score in await score_checks(self.checks, view, reduced=self.config.reduce):
            self.emit(ScoreRecorded(score, self.now()))
        if self.config.judge is None:
            return
        texts = [answer] if self.config.reduce and answer is not None else list(outputs)
        for index, text in enumerate(texts):
            self.emit(ScoreRecorded(await judge_text(self.context, task, text, index),
                                    self.now()))

    async def _fan_out(self, task: str, plan: tuple[str, ...]) -> list[WorkerRecord]:
        if self.config.reduce:
            hold_for_reducer(self.context, task, plan)
        records: dict[int, WorkerRecord] = {}
        if self.batches is not None or self.dispatch is not None:
            await self._fan_out_elsewhere(task, plan, records)
            return [records[i] for i in sorted(records)]
        slots = asyncio.Semaphore(self.config.concurrency)
        # A worker's task is created only when a slot is about to be free: a task waiting
        # for its slot costs a few KB, so creating all of them up front made memory grow
        # with N (100,000 workers) rather than with the concurrency.
        window = asyncio.Semaphore(self.config.concurrency)

        def done(finished: asyncio.Task[None]) -> None:
            self._worker_tasks.discard(finished)
            window.release()

        # Below depth > 1 a worker may split: its children share these slots (subtree).
        splitter = (ChildSwarms(self.context, self.worker_loop, slots, len(plan))
                    if self.config.depth > 1 else None)

        try:
            # A worker task cancelled by stop() ends the group normally (TaskGroup does
            # not count a child's own cancellation as an error).
            # No full collections meanwhile: they would walk every record kept (gcpause).
            with full_collections_deferred():
                async with asyncio.TaskGroup() as group:
                    for index, subtask in enumerate(plan, start=1):
                        await window.acquire()
                        if self.halt.stop is not None:
                            break
                        worker = group.create_task(run_worker(
                            self.context, self.worker_loop, task, index, subtask,
                            len(plan), slots, records, splitter=splitter))
                        self._worker_tasks.add(worker)
                        worker.add_done_callback(done)
        except* ReplayMiss as group:  # one miss stops the run; unwrap it for the caller
            raise group.exceptions[0] from None
        finally:
            # Workers the run ended (cancel, stop, a replay miss) before starting.
            for index, subtask in enumerate(plan, start=1):
                if index not in records:
                    never_started(self.context, index, subtask, records)
        return [records[i] for i in sorted(records)]

    async def _fan_out_elsewhere(self, task: str, plan: tuple[str, ...],
                                 records: dict[int, WorkerRecord]) -> None:
        """The workers as Batch API batches (engine.batched), or sent to ``dispatch``:
        one task that stop() may cancel, and then the batches (the shards) are cancelled
        and what finished merges."""
        if self.dispatch is not None:
            job = asyncio.create_task(self.dispatch(self.context, task, plan, records))
        else:
            assert self.batches is not None
            job = asyncio.create_task(fan_out_batched(self.context, self.batches, task, plan,
                                                      records, adopted=self.adopted))
        self._worker_tasks = {job}
        try:
            await job
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is None or current.cancelling() or self.halt.stop is None:
                raise  # the run itself was cancelled
