"""Truncation is never silent: a call that stopped at its max tokens (``finish_reason``
``length``) is marked in ``run.calls``, the totals line, the spend by role, the worker
table and its drill-down, above the answer, in the live view and the lanes, whichever way
it was served (streamed or not, from the cache, replayed from a cassette)."""

from __future__ import annotations

from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

import pytest

import swarmkit
from swarmkit.api.result import Run
from swarmkit.config.swarmconfig import SwarmConfig
from swarmkit.display.lanes import lane_text, render_lane
from swarmkit.display.livehtml import render_section
from swarmkit.display.livestate import LiveState
from swarmkit.record.events import Event
from swarmkit.record.rows import CallRecord
from swarmkit.record.runrecord import RunRecord
from swarmkit.testing import FakeReply, FakeRequest, FakeServer
from swarmkit.testing.synthetic import synthetic_run
from tests.support.events import Events
from tests.support.fakekey import run_options

pytestmark = pytest.mark.usefixtures("fake_key")

TASK = "Name three rivers"
ANSWER_CUT = ("⚠ the answer was cut at max tokens (300); raise reducer_max_tokens "
              "(e.g. %swarm config reducer_max_tokens=600) or --max-tokens")
WORKER_CUT = ("cut at max tokens (120); raise worker_max_tokens "
              "(e.g. %swarm config worker_max_tokens=240) or --max-tokens")


def cut_worker_and_reducer(request: FakeRequest) -> FakeReply | None:
    """Worker 2 and the final reducer stop at their max tokens; the rest finish."""
    if request.step == "worker-2":
        return FakeReply(content="The Danube rises in the Black Forest and", finish_reason="length")
    if request.step == "reducer":
        return FakeReply(content="Three rivers: the Danube, the", finish_reason="length")
    return None


options = partial(run_options, history=False, worker_max_tokens=120, reducer_max_tokens=300)


def cut_run(**extra: Any) -> tuple[Run, FakeServer, list[Event]]:
    sink = Events()
    with FakeServer(cut_worker_and_reducer, plan_tasks=3) as server:
        run = swarmkit.run_sync(TASK, sinks=[sink], **options(server, **extra))
    return run, server, sink.events


def worker_line(text: str, index: int) -> str:
    table = text.split("\nworker ", 1)[1]
    return next(line for line in table.splitlines() if line.startswith(f"{index} "))


def assert_marked_as_cut(run: RunRecord) -> None:
    """Worker 2 and the final reducer are marked everywhere a static view shows calls."""
    assert {c.step: c.finish_reason for c in run.calls} == {
        "planner": "stop", "worker-1": "stop", "worker-2": "length", "worker-3": "stop",
        "reducer": "length"}
    assert [c.step for c in run.calls if c.cut] == ["worker-2", "reducer"]
    # Cut is not failed: the worker and the run completed.
    assert run.status == "completed" and run.worker(2).status == "completed"
    tables = run.tables()  # type: ignore[attr-defined]
    text = tables.text()
    assert " · 5 calls" in tables.totals()
    assert " · 2 cut at max tokens · tokens " in tables.totals()
    assert "completed · cut at max tokens" in worker_line(text, 2)
    assert "cut" not in worker_line(text, 1) and "cut" not in worker_line(text, 3)
    assert f"workers cut at max tokens\nworker 2 · {WORKER_CUT}\n" in text
    assert "calls cut at max tokens: worker-2, reducer\n" in text
    assert text.split("\nanswer\n", 1)[1] == f"{ANSWER_CUT}\nThree rivers: the Danube, the\n"
    # Spend by role: the cut column counts each role's cut calls, before the model.
    rows = {row[0]: row for row in tables.role_rows()}
    assert tables.role_headers[-2:] == ("cut", "model")
    assert (rows["planner"][-2], rows["workers"][-2], rows["reducer"][-2],
            rows["total"][-2]) == (0, 1, 1, 2)
    page = tables.html()
    warning = f'<p class="sk-warn">{ANSWER_CUT}</p>'
    assert page.index("<p><b>answer</b></p>") < page.index(warning) < page.index(
        'class="swarmkit-answer"')
    assert page.count(">completed · cut at max tokens</td>") == 1
    assert page.count(f'<p class="sk-warn">⚠ {WORKER_CUT}</p>') == 1  # worker 2's drill-down
    assert "<th>cut</th>" in page
    # The timeline's bar of each cut call (a row of its own) says so on hover.
    tips = [t for t in page.split("<title>")[1:] if t.startswith(("worker-", "reducer "))]
    assert [t.split(" · ")[0] for t in tips if "· cut at max tokens</title>" in t] == [
        "worker-2", "reducer"]


def test_a_streamed_worker_and_reducer_cut_by_max_tokens_are_marked_as_cut() -> None:
    run, server, _ = cut_run()
    reducer = next(r for r in server.requests if r.step == "reducer")
    assert reducer.body.get("stream") is True  # stream_reducer is on for a hosted server
    assert_marked_as_cut(run)


def test_a_non_streamed_reducer_cut_by_max_tokens_is_marked_as_cut() -> None:
    run, server, _ = cut_run(stream_reducer=False)
    assert not any(r.body.get("stream") for r in server.requests)
    assert_marked_as_cut(run)


def test_a_replay_from_a_cassette_keeps_the_cut_marks(tmp_path: Path) -> None:
    cassette = tmp_path / "cut.swarm.json"
    run, _, _ = cut_run(record=str(cassette))
    replayed = swarmkit.run_sync(TASK, replay=str(cassette), history=False,
                                 worker_max_tokens=120, reducer_max_tokens=300)
    assert_marked_as_cut(replayed)
    assert replayed.tables().mime_bundle()[0] == run.tables().mime_bundle()[0]


def test_calls_served_from_the_cache_keep_their_cut_marks(tmp_path: Path) -> None:
    history = str(tmp_path / "history.db")
    with FakeServer(cut_worker_and_reducer, plan_tasks=3) as server:
        swarmkit.run_sync(TASK, **options(server, history=True, history_path=history,
                                          cache=True))
        again = swarmkit.run_sync(TASK, **options(server, history=True, history_path=history,
                                                  cache=True))
    assert {c.source for c in again.calls} == {"cache"}
    assert_marked_as_cut(again)


def test_a_cut_call_round_trips_through_run_json_and_an_old_record_loads_uncut() -> None:
    run, _, _ = cut_run()
    assert Run.from_json(run.to_json()).calls == run.calls
    old = run.to_dict()
    for call in old["calls"]:
        call.pop("finish_reason")  # a file written before the field
    loaded = RunRecord.from_dict(old)
    assert all(c.finish_reason is None and not c.cut for c in loaded.calls)
    assert "cut" not in Run.of(loaded).tables().totals()


def test_the_live_view_marks_a_cut_worker_and_a_cut_answer() -> None:
    _, server, events = cut_run()
    config = SwarmConfig.from_options(**options(server))
    state = LiveState(task=TASK, config=config)
    for event in events:
        state.apply(event)
    assert state.cut_calls == 2 and state.reducer_cut
    assert "5 calls · 2 cut at max tokens · tokens" in render_section(state, "header")
    workers = render_section(state, "workers")
    assert workers.count(">completed · cut at max tokens</td>") == 1
    assert f"⚠ {WORKER_CUT}" in workers  # worker 2's drill-down
    assert ANSWER_CUT in render_section(state, "reducer")
    assert "workers 3/3 done (3 ok) · 2 cut at max tokens · tokens" in lane_text("A", state)
    assert "2 cut at max tokens" in render_lane("A", state)


def parts_handler(request: FakeRequest) -> FakeReply | None:
    if request.role == "worker":
        return FakeReply(content=f"{request.step} says " + "w" * 400)
    if request.step == "reducer-1.1":
        return FakeReply(content="partial answer that stops", finish_reason="length")
    return FakeReply(content=f"{request.step} merged")


def test_a_cut_reducer_part_is_marked_and_the_answer_says_it_merged_cut_text() -> None:
    with FakeServer(parts_handler) as server:
        run = swarmkit.run_sync("Summarise the rows", tasks=[f"row {i}" for i in range(1, 25)],
                                **options(server, reducer_max_input_tokens=3000))
    parts = [c for c in run.calls if c.step.startswith("reducer-")]
    assert len(parts) > 1 and [c.step for c in parts if c.cut] == ["reducer-1.1"]
    text = run.tables().text()
    assert "calls cut at max tokens: reducer-1.1\n" in text
    assert text.split("\nanswer\n", 1)[1].startswith(
        f"⚠ 1 of the reducer's {len(parts)} partial answers were cut at max tokens (300), "
        "so the answer merges cut text; raise reducer_max_tokens")
    assert "reducer-1.1 · ok · 1 attempt(s)" in run.tables().html()


def test_a_planner_cut_by_max_tokens_is_marked_on_its_row() -> None:
    def planner_cut(request: FakeRequest) -> FakeReply | None:
        if request.role == "planner":
            return FakeReply(content='{"tasks": ["Rivers of Europe", "Rivers of Asia"]}',
                             finish_reason="length")
        return None

    with FakeServer(planner_cut) as server:
        run = swarmkit.run_sync(TASK, **options(server))
    assert [c.step for c in run.calls if c.cut] == ["planner"]
    tables = run.tables()
    assert {row[0]: row[-2] for row in tables.role_rows()}["planner"] == 1
    assert "calls cut at max tokens: planner\n" in tables.text()
    assert "characters) · cut at max tokens</summary>" in tables.html()
    assert tables.answer_warning() is None  # the answer itself was not cut


def test_a_run_with_no_cut_call_has_no_cut_column_or_mark() -> None:
    with FakeServer(plan_tasks=2) as server:
        run = swarmkit.run_sync(TASK, **options(server))
    tables = run.tables()
    assert "cut" not in tables.role_headers
    assert "cut at max tokens" not in tables.text() and "cut at max" not in tables.html()


def test_a_long_run_displays_its_cut_workers_among_the_rows_it_shows() -> None:
    run = synthetic_run(200)
    run.calls = [replace(c, finish_reason="length") if c.step == "worker-100" else c
                 for c in run.calls]
    tables = run.tables()
    assert tables.cut_workers == {"100"}
    shown = tables.worker_table(shown=tables._worker_cut.shown)
    assert "completed · cut at max tokens" in shown
    assert "those that did not complete or were cut at max tokens" in tables.text()


def test_a_call_record_is_cut_only_when_it_finished_with_length() -> None:
    call = synthetic_run(1).calls[0]
    assert isinstance(call, CallRecord)
    assert [replace(call, finish_reason=r).cut for r in ("length", "stop", None)] == [
        True, False, False]


def test_a_worker_cut_in_batch_mode_is_marked_as_cut() -> None:
    with FakeServer(cut_worker_and_reducer, plan_tasks=3) as server:
        run = swarmkit.run_sync(TASK, **options(server, batch=True, batch_poll=0.02))
        assert server.batches.created == 1
    assert run.batches and run.status == "completed"
    assert_marked_as_cut(run)
