"""A tree reduction's parts (``reducer-1.1`` ...) in the live view and the timeline: shown
as reducer steps, never as workers, from a real run against the loopback FakeServer."""

from __future__ import annotations

import re
from typing import Any

import pytest

import swarmkit
from swarmkit.config.swarmconfig import SwarmConfig
from swarmkit.display.livehtml import render_section
from swarmkit.display.livestate import LiveState
from swarmkit.display.timeline import MAX_PART_LANES, timeline_svg
from swarmkit.record.events import CallFinished, Event, ReducerStarted
from swarmkit.record.steps import reducer_part_of_step
from swarmkit.testing import FakeReply, FakeRequest, FakeServer
from tests.support.events import Events
from tests.support.fakekey import run_options

pytestmark = pytest.mark.usefixtures("fake_key")


def handler(request: FakeRequest) -> FakeReply | None:
    if request.role == "worker":
        return FakeReply(content=f"{request.step} says " + "w" * 400)
    return FakeReply(content=f"{request.step} merged")


def tree_run(workers: int, **extra: Any) -> tuple[Any, list[Event], SwarmConfig]:
    sink = Events()
    with FakeServer(handler) as server:
        options = run_options(server, history=False, reducer_max_input_tokens=3000, **extra)
        run = swarmkit.run_sync("Summarise the rows",
                                tasks=[f"row {i}" for i in range(1, workers + 1)],
                                sinks=[sink], **options)
        config = SwarmConfig.from_options(**options)

    return run, sink.events, config


def test_the_live_view_counts_the_parts_and_shows_no_worker_for_them() -> None:
    run, events, config = tree_run(24)
    parts = [c.step for c in run.calls if reducer_part_of_step(c.step) is not None]
    state = LiveState(task=run.task, config=config)
    first_part_done = next(i for i, e in enumerate(events)
                           if isinstance(e, CallFinished) and e.call.step in parts)
    started = [e for e in events if isinstance(e, ReducerStarted)]
    assert len(started) == 1 and started[0].parts == len(parts)
    for event in events[:first_part_done + 1]:
        state.apply(event)
    midway = render_section(state, "reducer")
    assert f"merging 24 workers in {len(parts)} parts: 1/{len(parts)} merged" in midway
    assert "reducer&#x27;s input" not in midway and "reducer's input" not in midway
    for event in events[first_part_done + 1:]:
        state.apply(event)
    done = render_section(state, "reducer")
    assert f"{len(parts)}/{len(parts)} merged" in done and "running" not in done
    assert sorted(state.workers) == list(range(1, 25))  # no worker row for a part
    assert state.calls == len(run.calls)


def test_the_timeline_gives_parts_their_lanes_and_one_lane_per_level_past_many() -> None:
    few, _, _ = tree_run(12)
    labels = re.findall(r'text-anchor="end" font-size="\d+"[^>]*>([^<]+)</text>',
                        timeline_svg(few))
    parts = [c.step for c in few.calls if reducer_part_of_step(c.step) is not None]
    assert 1 < len(parts) <= MAX_PART_LANES
    assert labels[-len(parts) - 1:] == [*sorted(parts, key=reducer_part_of_step), "reducer"]

    many, _, _ = tree_run(80)
    level1 = [c.step for c in many.calls if (reducer_part_of_step(c.step) or (0,))[0] == 1]
    assert len(level1) > MAX_PART_LANES
    svg = timeline_svg(many)
    assert f">reducer-1.1–{len(level1)}<" in svg and ">reducer-1.2<" not in svg
