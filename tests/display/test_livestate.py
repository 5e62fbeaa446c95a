"""LiveState: events folded into the figures the dashboard shows."""

from __future__ import annotations

from decimal import Decimal

from swarmkit.config.swarmconfig import SwarmConfig
from swarmkit.display.livehtml import render_section
from swarmkit.display.livestate import MAX_ROWS, SECTIONS, LiveState
from swarmkit.record.events import (
    CallRetried,
    CallStarted,
    PlanReady,
    RateLimitWait,
    RunFinished,
    RunStarted,
    ScoreRecorded,
    WorkerFinished,
    WorkerStarted,
)
from swarmkit.record.rows import ScoreRecord, WorkerRecord
from swarmkit.testing.synthetic import synthetic_events, synthetic_run

CONFIG = SwarmConfig().with_options(model="gpt-4.1-mini", workers=3, concurrency=2)


def _state(*events: object) -> LiveState:
    state = LiveState(task="t", config=CONFIG)
    state.apply(RunStarted("r", "t", CONFIG.summary(), ""))
    state.apply(PlanReady(("a", "b", "c"), "{}", t=0.1))
    for event in events:
        state.apply(event)  # type: ignore[arg-type]
    return state


def test_final_figures_match_the_run_recorder() -> None:
    events = synthetic_events(30, concurrency=5, retry_every=4, tool_every=3, fail_every=7)
    run = synthetic_run(30, concurrency=5, retry_every=4, tool_every=3, fail_every=7)
    state = LiveState(task="t", config=CONFIG)
    for event in events:
        state.apply(event)
    assert state.calls == len(run.calls)
    assert state.prompt_tokens == run.usage.prompt_tokens
    assert state.completion_tokens == run.usage.completion_tokens
    assert state.cost == run.cost_usd
    assert state.tool_count == len(run.tool_calls)
    assert {k: v for k, v in state.counts.items() if v} == run.status_counts()
    for record in run.workers:
        live = state.workers[record.index]
        assert (live.attempts, live.tools, live.cost) == (record.attempts, record.tool_calls,
                                                          record.cost_usd)
    assert sum(w.retries for w in state.workers.values()) == len(run.retries)
    assert state.status == "done" and not state.running and state.waiting == 0


def test_rate_limit_wait_retry_and_attempt_are_tracked() -> None:
    state = _state(
        WorkerStarted(2, "b", t=0.2),
        CallStarted("worker-2", 1, "m", t=0.2),
        CallRetried("worker-2", 1, "429", 0.5, 429, t=0.3),
        RateLimitWait("worker-2", True, t=0.3),
    )
    worker = state.workers[2]
    assert worker.waiting and worker.retries == 1 and state.waiting == 1
    state.apply(CallStarted("worker-2", 2, "m", t=0.8))
    assert not worker.waiting and worker.attempt == 2 and state.waiting == 0


def test_a_worker_cancelled_before_it_started_does_not_unbalance_the_counts() -> None:
    state = _state(
        WorkerStarted(1, "a", t=0.2),
        WorkerFinished(WorkerRecord(1, "a", "cancelled"), t=0.3),
        WorkerFinished(WorkerRecord(3, "c", "cancelled"), t=0.3),
        RunFinished("cancelled", None, "run cancelled", 0.3, t=0.3),
    )
    assert state.counts == {"running": 0, "cancelled": 2}
    assert state.status == "cancelled" and state.error == "run cancelled"


def test_only_changed_sections_are_marked() -> None:
    state = _state()
    state.dirty.clear()
    state.apply(WorkerStarted(1, "a", t=0.2))
    assert state.dirty == {"header", "workers"}
    assert set(SECTIONS) >= state.dirty


def test_memory_of_finished_workers_for_display_is_bounded() -> None:
    state = LiveState(task="t", config=CONFIG)
    for event in synthetic_events(300, concurrency=30):
        state.apply(event)
    assert len(state.recent) == MAX_ROWS
    assert state.cost is not None and state.cost > Decimal(0)


def test_scores_are_kept_as_they_land() -> None:
    check = ScoreRecord("contains('Paris')", 1.0, "found 'Paris'", "check")
    judge = ScoreRecord("judge", None, None, "judge", error="no score", step="judge-0")
    state = _state(ScoreRecorded(check, t=1.0))
    assert state.scores == [check] and "header" in state.dirty
    state.apply(ScoreRecorded(judge, t=1.2))
    state.apply(RunFinished("completed", "Paris", None, duration=1.3, t=1.3))
    assert state.scores == [check, judge] and state.phase == "done"


def test_the_phase_is_scoring_once_the_checks_land_or_the_judge_is_called() -> None:
    from swarmkit.record.events import ReducerStarted

    judged = _state(ReducerStarted((1, 2, 3), t=0.5), CallStarted("judge-0", 1, "j", 0.9))
    assert judged.phase == "scoring"  # not "reducing": only the judge runs now
    checked = _state(ReducerStarted((1, 2, 3), t=0.5),
                     ScoreRecorded(ScoreRecord("short", 1.0, None, "check"), t=0.8))
    assert checked.phase == "scoring" and checked.scores[0].name == "short"
    ended = _state(ScoreRecorded(ScoreRecord("short", 1.0, None, "check"), t=0.8),
                   RunFinished("completed", "answer", None, 1.0, t=1.0))
    assert ended.phase == "done"  # the end wins over scoring
    cancelling = _state(ReducerStarted((1,), t=0.5), CallStarted("judge-0", 1, "j", 0.9))
    cancelling.cancelling = True
    assert cancelling.status.startswith("cancelling")


def test_the_view_keeps_the_rendered_cells_of_its_recent_rows_only() -> None:
    workers = 3 * MAX_ROWS
    state = LiveState(task="t", config=CONFIG)
    finished = 0
    for event in synthetic_events(workers, concurrency=5):
        state.apply(event)
        if isinstance(event, WorkerFinished):
            finished += 1
            render_section(state, "workers")  # each finished worker is rendered in view
    cells = [i for i, w in state.workers.items() if w.finished_cell is not None]
    assert finished == workers and 0 < len(cells) <= MAX_ROWS
    assert set(cells) <= set(state.recent)
    # A cell is a cache: dropped, the row renders the same again.
    shown = render_section(state, "workers")
    for worker in state.workers.values():
        worker.finished_cell = None
    assert render_section(state, "workers") == shown
