"""The dashboard's HTML sections: bounded, ordered, escaped."""

from __future__ import annotations

import re

from swarmkit.config.swarmconfig import SwarmConfig
from swarmkit.display.livehtml import render_changed, render_section
from swarmkit.display.livestate import MAX_ROWS, SECTIONS, LiveState
from swarmkit.record.events import CallStarted, RateLimitWait
from swarmkit.testing.synthetic import synthetic_events

CONFIG = SwarmConfig().with_options(model="gpt-4.1-mini", workers=200, concurrency=20)


def _shown(html: str) -> list[int]:
    """The worker index of each body row of a rendered table."""
    return [int(n) for n in re.findall(r'<tr[^>]*><td class="sk-num">(\d+)</td>', html)]


def _fold(events: list[object]) -> LiveState:
    state = LiveState(task="t", config=CONFIG)
    for event in events:
        state.apply(event)  # type: ignore[arg-type]
    return state


def test_render_changed_returns_only_dirty_sections_and_clears_them() -> None:
    state = LiveState(task="t", config=CONFIG)
    assert set(render_changed(state)) == set(SECTIONS)
    assert render_changed(state) == {}


def test_big_runs_show_running_workers_first_then_latest_finished() -> None:
    events = synthetic_events(200, concurrency=20)
    state = _fold(events[: len(events) // 2])
    running = list(state.running)
    assert running
    html = render_section(state, "workers")
    shown = _shown(html)
    assert len(shown) == MAX_ROWS
    assert shown[: len(running)] == running[:MAX_ROWS]
    assert shown[len(running)] == state.recent[-1]  # newest finished right after running
    assert "running first, then the latest finished" in html
    assert "pending" in html.split("<table")[0]


def test_small_runs_show_every_worker_in_index_order_including_pending() -> None:
    config = SwarmConfig().with_options(model="m", workers=5)
    state = LiveState(task="t", config=config)
    for event in synthetic_events(5, concurrency=2)[:8]:
        state.apply(event)
    html = render_section(state, "workers")
    assert _shown(html) == [1, 2, 3, 4, 5]
    assert '<td class="sk-st-pending">pending</td>' in html and "showing" not in html


def test_waiting_workers_are_labelled_and_counted() -> None:
    events = synthetic_events(5, concurrency=5)
    state = _fold(events[:12])
    state.apply(CallStarted("worker-1", 1, "m", t=1.0))
    state.apply(RateLimitWait("worker-1", True, t=1.0))
    html = render_section(state, "workers")
    assert '<td class="sk-st-waiting">waiting (rate limit)</td>' in html
    assert "1 waiting (rate limit)" in html


def test_plan_list_is_capped() -> None:
    state = _fold(synthetic_events(200, concurrency=20)[:10])
    html = render_section(state, "plan")
    assert "plan: 200 sub-tasks" in html and "… 150 more" in html


def test_the_header_says_done_running_and_failed_plainly() -> None:
    config = SwarmConfig().with_options(model="m", workers=10)
    state = LiveState(task="t", config=config)
    events = synthetic_events(10, concurrency=3, fail_every=4)
    for event in events[: len(events) * 2 // 3]:
        state.apply(event)
    done = state.finished
    failed = sum(n for label, n in state.counts.items() if label.startswith("failed"))
    assert failed and state.phase == "running"
    expected = f"{done}/10 done · {len(state.running)} running · {failed} failed"
    assert state.status == expected and expected in render_section(state, "header")


def test_a_failed_worker_says_why_and_its_row_is_marked() -> None:
    state = _fold(synthetic_events(5, concurrency=5, fail_every=5))
    html = render_section(state, "workers")
    row = html.split('<tr class="sk-failed">', 1)[1].split("</tr>", 1)[0]
    assert "failed (provider)" in row and 'class="sk-st-failed"' in row
    assert "ProviderError: HTTP 500 after retries — the server failed" in row


def test_attempts_and_retries_agree_at_every_event_and_with_the_static_table() -> None:
    events = synthetic_events(9, concurrency=3, retry_every=2, tool_every=3, fail_every=4)
    state = LiveState(task="t", config=CONFIG)
    for event in events:
        state.apply(event)
        for w in state.workers.values():
            in_flight = 1 if w.attempt else 0
            assert w.attempts == w.calls + in_flight + w.shown_retries
            assert w.shown_retries == w.retries  # every retry announced is counted
    from swarmkit.engine.recordbuilder import RunRecordBuilder

    recorder = RunRecordBuilder()
    for event in events:
        recorder.on_event(event)
    assert recorder.run is not None
    for record in recorder.run.workers:
        live = state.workers[record.index]
        assert (live.attempts, live.shown_retries) == (record.attempts,
                                                       record.attempts - record.calls)


def test_a_finished_row_opens_on_its_escaped_output() -> None:
    from dataclasses import replace

    from swarmkit.record.events import WorkerFinished

    events = synthetic_events(3, concurrency=3)
    hostile = "<script>alert(1)</script> **bold**"
    events = [replace(e, worker=replace(e.worker, output=hostile))
              if isinstance(e, WorkerFinished) else e for e in events]
    html = render_section(_fold(events), "workers")
    assert html.count("<details>") == 3 and "<script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt; <b>bold</b>" in html
    assert "messages sent" in html and "Your sub-task (1 of 3)" in html


def test_the_planner_reply_and_the_reducer_input_open_live_too() -> None:
    events = synthetic_events(3, concurrency=3)
    state = _fold(events)
    plan = render_section(state, "plan")
    assert "planner&#x27;s raw reply" in plan and "{&quot;tasks&quot;: [...]}" in plan
    reducer = render_section(state, "reducer")
    assert "reducer&#x27;s input (3 workers)" in reducer
    assert "Worker 2 (sub-task: Sub-task 2" in reducer and "Findings of worker 3." in reducer
