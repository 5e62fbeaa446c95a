"""The live state of a running swarm: events folded into plain Python.

``LiveState.apply`` is O(1) per event and touches no widget: it updates counters and
marks which display sections changed (``dirty``). ``swarmkit.display.livehtml`` renders the
changed sections to HTML; the dashboard pushes those at a bounded rate. Keeping this
free of ipywidgets lets it be tested and reused on its own.

Only what a bounded view needs is kept per run: running workers in start order, the
``MAX_ROWS`` most recently finished, the last ``MAX_TOOL_ROWS`` tool calls, and counts
by status, so a 1,000-worker run costs the display what a 50-worker one does.

A tree (depth > 1): the plan's workers stay in ``workers`` (by index) and their
descendants are in ``nodes`` (by dotted id, ``"2.1"``), each ``WorkerSplit`` listing a
parent's children (``kids``) before they start; a split's reducer call
(``reducer-of-<id>``) adds to its parent's figures, as in ``WorkerRecord``. ``splits``
counts the splits, ``leaves_done`` the finished workers that did not split. The
status counts (``counts``) stay the plan's workers'.
"""

from __future__ import annotations

from collections import deque
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from ..config.automodel import auto_notice, judge_notice
from ..config.wording import counted
from ..record.events import (
    BatchUpdated,
    BudgetUpdated,
    CallFinished,
    CallRetried,
    CallStarted,
    ConcurrencyChanged,
    Event,
    PlanReady,
    RateLimitWait,
    ReducerDelta,
    ReducerStarted,
    RunFinished,
    RunStarted,
    ScoreRecorded,
    ToolCallFinished,
    WorkerFinished,
    WorkerSplit,
    WorkerStarted,
)
from ..record.rows import ScoreRecord, ToolCallRecord, WorkerRecord
from ..record.steps import owner_of_step, reducer_part_of_step
from ..record.usage import Usage
from .drilldown import ChildAnswer
from .truncation import max_tokens_of
from .workerlive import Spent, WorkerLive

if TYPE_CHECKING:
    from ..config.swarmconfig import SwarmConfig

__all__ = ["MAX_ROWS", "MAX_TOOL_ROWS", "MAX_WORKER_TOOLS", "SECTIONS", "LiveState",
           "WorkerLive"]

MAX_ROWS = 50
MAX_TOOL_ROWS = 20
MAX_WORKER_TOOLS = 10  # tool calls kept per worker for its drill-down
SECTIONS = ("header", "budget", "plan", "workers", "tools", "reducer")
_FINAL_STATUS = {"completed": "done", "partial": "done (partial)", "failed": "failed",
                 "cancelled": "cancelled", "stopped": "stopped and merged"}


class LiveState(Spent):
    """Everything the dashboard shows, updated by events in O(1) each."""

    def __init__(self, *, task: str, config: SwarmConfig) -> None:
        self.task = task
        self.models = config.models
        self.system_prompt = config.system_prompt  # worker messages, for the drill-down
        self.output_schema = config.output_schema
        self.phase = "starting"
        self.error: str | None = None
        self.cancelling = False
        self.now = 0.0
        self.plan: tuple[str, ...] = ()
        self.plan_cut_from: int | None = None
        self.plan_raw = ""  # the planner's reply, for the plan's drill-down
        self.workers: dict[int, WorkerLive] = {}
        self.running: dict[int, None] = {}  # insertion-ordered set: oldest first
        self.recent: deque[int] = deque(maxlen=MAX_ROWS)
        self.counts: dict[str, int] = {}
        # The tree (depth > 1): the descendants of the plan's workers, by dotted id; the
        # children of each parent in index order; those running and recently finished.
        self.nodes: dict[str, WorkerLive] = {}
        self.kids: dict[str, list[str]] = {}
        self.nodes_running: dict[str, None] = {}
        self.nodes_recent: deque[str] = deque(maxlen=MAX_ROWS)
        self.splits = 0
        self.leaves_done = 0  # finished workers, at any depth, that did not split
        self.waiting = 0
        self.calls = 0
        self.cached_calls = 0  # served from the history (a resumed run's finished calls)
        self.cut_calls = 0  # finished calls that stopped at their max tokens
        self.reducer_cut = False  # the final reducer call did: the answer is cut
        self.parts_cut = 0  # a tree reduction's part calls that did
        # Each role's max tokens, for the "raise ..." hints; from the run's own config.
        self.max_tokens = {role: config.role(role).max_tokens for role in config.models}
        # "auto" fell back to the embedded model: the one line that says so (RunStarted's
        # config says which roles), or None.
        self.auto_notice: str | None = None
        self.judge_notice: str | None = None  # the judge is the embedded model
        self.resumed_from = config.resume
        # --batch: each batch's last reported status and counts, by batch id.
        self.batches: dict[str, BatchUpdated] = {}
        self.usage = Usage()  # every finished call's tokens and cost
        self.spent: Decimal = Decimal(0)
        self.reserved: Decimal = Decimal(0)
        self.cap: Decimal | None = config.budget_usd
        self.concurrency: dict[str, tuple[int, str]] = {}
        self.default_concurrency = config.concurrency
        self.tool_count = 0
        self.tool_errors = 0
        self.tools: deque[ToolCallRecord] = deque(maxlen=MAX_TOOL_ROWS)
        self.reducer_inputs: int | None = None
        self.reduced: tuple[int, ...] = ()  # the workers the reducer was given
        self.reducer_prompt = config.reducer_prompt
        self.reducer_input_html = ""  # rendered once by liveview: the input never changes
        self.reducer_text: list[str] = []
        self.reducer_attempt = 1
        # A tree reduction: its first level's parts, the part calls merged per level and
        # the ones in flight (a reducer-<level>.<i> step each).
        self.reducer_parts = 0
        self.parts_merged: dict[int, int] = {}
        self.parts_running: set[str] = set()
        # The checks' and the judge's scores, as they land (after the reducer).
        self.scores: list[ScoreRecord] = []
        self.dirty: set[str] = set(SECTIONS)

    # -- folding events (O(1) each) ----------------------------------------------------

    def _worker(self, index: int, task: str = "") -> WorkerLive:
        worker = self.workers.get(index)
        if worker is None:
            if not task and 0 < index <= len(self.plan):
                task = self.plan[index - 1]
            worker = self.workers[index] = WorkerLive(index, task)
        return worker

    def _live(self, worker_id: str) -> WorkerLive:
        """The worker of a dotted id: a plan's worker, or a node of the tree."""
        parent, dot, index = worker_id.rpartition(".")
        if not dot:
            return self._worker(int(worker_id))
        node = self.nodes.get(worker_id)
        if node is None:
            node = self.nodes[worker_id] = WorkerLive(int(index), "", parent=parent)
            self.kids.setdefault(parent, []).append(worker_id)
        return node

    def _of_step(self, step: str) -> WorkerLive | None:
        """The worker a call of ``step`` belongs to: ``worker-<id>``, or the parent whose
        split's reducer ``reducer-of-<id>`` is; None for the planner, reducer and judge."""
        worker_id = owner_of_step(step)
        return None if worker_id is None else self._live(worker_id)

    @property
    def tree_size(self) -> int:
        """Every worker of the tree: the plan's and their descendants."""
        return max(len(self.plan), len(self.workers)) + len(self.nodes)

    def _count(self, label: str, delta: int) -> None:
        self.counts[label] = self.counts.get(label, 0) + delta

    def _set_waiting(self, worker: WorkerLive, waiting: bool) -> None:
        if worker.waiting != waiting:
            worker.waiting = waiting
            self.waiting += 1 if waiting else -1

    def apply(self, event: Event) -> None:
        self.now = max(self.now, event.t)
        self.dirty.add("header")
        match event:
            case RunStarted():
                self.task, self.phase = event.task, "planning"
                # the run's own config has "auto" resolved to the model really used
                self.models = {role: str(event.config.get(role, {}).get("model", model))
                               for role, model in self.models.items()}
                self.auto_notice = auto_notice(event.config)
                self.judge_notice = judge_notice(event.config)
                self.max_tokens = {role: max_tokens_of(event.config, role) or limit
                                   for role, limit in self.max_tokens.items()}
            case PlanReady():
                self.plan, self.plan_cut_from = event.tasks, event.truncated_from
                self.plan_raw = event.raw
                self.phase = "running"
                self.dirty.update(("plan", "workers"))
            case CallStarted():
                if event.step.startswith("judge-"):
                    self._scoring()
                worker = self._of_step(event.step)
                if worker is None and reducer_part_of_step(event.step) is not None:
                    self.parts_running.add(event.step)
                    self.dirty.add("reducer")
                if worker is not None:
                    worker.attempt = event.attempt
                    self._set_waiting(worker, False)
                    self.dirty.add("workers")
            case CallRetried():
                worker = self._of_step(event.step)
                if worker is not None:
                    worker.retries += 1
                    self.dirty.add("workers")
            case RateLimitWait():
                worker = self._of_step(event.step)
                if worker is not None:
                    self._set_waiting(worker, event.waiting)
                    self.dirty.add("workers")
            case CallFinished():
                self._call_finished(event)
            case BudgetUpdated():
                self.spent, self.reserved = event.spent_usd, event.reserved_usd
                self.cap = event.cap_usd
                self.dirty.add("budget")
            case ConcurrencyChanged():
                self.concurrency[event.endpoint] = (event.limit, event.reason)
            case WorkerStarted() if event.parent is None:
                worker = self._worker(event.index, event.task)
                worker.status, worker.started = "running", event.t
                self.running[event.index] = None
                self._count("running", 1)
                self.dirty.add("workers")
            case WorkerStarted():
                worker = self._live(event.worker_id)
                worker.task = worker.task or event.task
                worker.status, worker.started = "running", event.t
                self.nodes_running[event.worker_id] = None
                self.dirty.add("workers")
            case WorkerSplit():
                self._split(event)
            case ToolCallFinished():
                self._tool_finished(event.tool_call)
            case BatchUpdated():
                self.batches[event.batch_id] = event
            case WorkerFinished() if event.worker.parent is None:
                self._worker_finished(event.worker)
            case WorkerFinished():
                self._node_finished(event.worker)
            case ReducerStarted():
                self.phase, self.reducer_inputs = "reducing", len(event.inputs)
                self.reduced, self.reducer_parts = event.inputs, event.parts
                self.dirty.add("reducer")
            case ReducerDelta():
                if event.attempt != self.reducer_attempt:
                    # A retried stream starts over: the cut attempt's text is not the answer.
                    self.reducer_text, self.reducer_attempt = [], event.attempt
                self.reducer_text.append(event.text)
                self.dirty.add("reducer")
            case ScoreRecorded():
                self.scores.append(event.score)
                self._scoring()
            case RunFinished():
                self.phase = _FINAL_STATUS.get(event.status, event.status)
                self.error = event.error
                if event.answer is not None and not self.reducer_text:
                    self.reducer_text.append(event.answer)  # a reducer that did not stream
                self.dirty.update(("reducer", "workers", "budget"))

    def _scoring(self) -> None:
        """The checks have landed or the judge was called: the answer is being scored
        (a lane would otherwise read "reducing" while only its judge runs)."""
        if self.phase in ("running", "reducing"):
            self.phase = "scoring"
        self.dirty.add("header")

    def _call_finished(self, event: CallFinished) -> None:
        call = event.call
        self.calls += 1
        if call.source == "cache":
            self.cached_calls += 1
            self.dirty.add("header")
        self.usage += call.usage
        self.cut_calls += call.cut
        if self.cap is None:
            self.dirty.add("budget")
        worker = self._of_step(call.step)
        if worker is None:
            part = reducer_part_of_step(call.step)
            if part is not None:
                self.parts_running.discard(call.step)
                if call.error is None:
                    self.parts_merged[part[0]] = self.parts_merged.get(part[0], 0) + 1
                    self.parts_cut += call.cut
                self.dirty.add("reducer")
            elif call.step == "reducer" and call.error is None:
                self.reducer_cut = call.cut
                self.dirty.add("reducer")
            return
        worker.attempts_done += call.attempts
        worker.attempt = 0
        worker.calls += 1
        worker.retries_done = worker.retries
        if call.error is not None and call.status is not None:
            worker.fail_status = call.status
        if call.error is None:
            worker.cut = call.cut  # its last answer decides (a repair may follow a cut)
        worker.usage += call.usage
        self.dirty.add("workers")

    def _tool_finished(self, record: ToolCallRecord) -> None:
        self.tool_count += 1
        self.tool_errors += record.error is not None
        self.tools.append(record)
        worker = self._live(record.worker_id)
        worker.tools += 1
        if len(worker.tool_records) < MAX_WORKER_TOOLS:
            worker.tool_records.append(record)
        self.dirty.update(("tools", "workers"))

    def _worker_finished(self, record: WorkerRecord) -> None:
        worker = self._worker(record.index, record.task)
        if record.index in self.running:  # a worker cancelled before its slot never ran
            del self.running[record.index]
            self._count("running", -1)
        self._set_waiting(worker, False)
        worker.finish(record)
        self._count(worker.status, 1)
        self._leaving(self.recent, self.workers)
        self.recent.append(record.index)
        self.leaves_done += not record.children
        self.dirty.add("workers")

    @staticmethod
    def _leaving(recent: deque[Any], workers: dict[Any, WorkerLive]) -> None:
        """The worker leaving the ``recent`` window forgets its rendered cell (a tree may
        show it again as an ancestor, rendered anew): ``MAX_ROWS`` cells, not N."""
        if len(recent) == recent.maxlen and recent[0] in workers:
            workers[recent[0]].finished_cell = None

    def _split(self, event: WorkerSplit) -> None:
        parent = self._live(event.parent)
        parent.split = len(event.tasks)
        self.splits += 1
        for index, task in enumerate(event.tasks, start=1):
            self._live(f"{event.parent}.{index}").task = task
        self.dirty.add("workers")

    def _node_finished(self, record: WorkerRecord) -> None:
        worker = self._live(record.id)
        worker.task = worker.task or record.task
        self.nodes_running.pop(record.id, None)
        self._set_waiting(worker, False)
        worker.finish(record)
        self._leaving(self.nodes_recent, self.nodes)
        self.nodes_recent.append(record.id)
        self.leaves_done += not record.children
        self.dirty.add("workers")

    def parent_task(self, worker: WorkerLive) -> str:
        """The task a child was sent: its parent's sub-task."""
        return "" if worker.parent is None else self._live(worker.parent).task

    def child_answers(self, worker: WorkerLive) -> list[ChildAnswer]:
        """``worker``'s children as its drill-down lists them, those finished so far with
        their answers."""
        answers = []
        for kid in self.kids.get(worker.id, ()):
            node = self.nodes[kid]
            output = None if node.record is None else node.record.output
            answers.append(ChildAnswer(kid, node.task, node.status, output))
        return answers

    def children_done(self, worker: WorkerLive) -> int:
        """How many of ``worker``'s children have finished."""
        return sum(1 for kid in self.kids.get(worker.id, ())
                   if self.nodes[kid].record is not None)

    # -- rendering ---------------------------------------------------------------------

    @property
    def finished(self) -> int:
        return sum(self.counts.values()) - self.counts.get("running", 0)

    @property
    def status(self) -> str:
        if self.cancelling and self.phase in ("planning", "running", "reducing", "scoring"):
            return "cancelling…"
        if self.phase == "running":
            return self.progress
        return self.phase

    @property
    def progress(self) -> str:
        """``10/12 done · 2 running · 0 failed``: done counts every worker that finished."""
        failed = sum(n for label, n in self.counts.items() if label.startswith("failed"))
        parts = [f"{self.finished}/{len(self.plan)} done",
                 f"{self.counts.get('running', 0)} running", f"{failed} failed"]
        for label in ("skipped", "cancelled"):
            n = sum(v for k, v in self.counts.items() if k.split(" ", 1)[0] == label)
            if n:
                parts.append(f"{n} {label}")
        if self.splits:
            parts += [counted(self.splits, "split"),
                      f"{self.leaves_done}/{self.tree_size - self.splits} leaves done"]
        return " · ".join(parts)
