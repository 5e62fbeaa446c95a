"""The dashboard's HTML sections: bounded, ordered, escaped."""

from __future__ import annotations

import re

from swarmkit.config import SwarmConfig
from swarmkit.events import CallStarted, RateLimitWait
from swarmkit.live import MAX_ROWS, SECTIONS, LiveState
from swarmkit.liveview import render_changed, render_section
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
