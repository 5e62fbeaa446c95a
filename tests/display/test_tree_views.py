"""The views of a tree (depth > 1), from a real tree run on the loopback FakeServer
(worker 2 splits in three, its first child in two): the live rows each under its
parent with its own status, the counters of leaves and splits, the static tables'
dotted ids and depth column, spend by depth, the nested timeline, the drill-down of a
split, and the row cut keeping a child with its parent."""

from __future__ import annotations

import io
import re
from dataclasses import replace
from typing import Any

import pytest

import swarmkit
from swarmkit.api.result import Run
from swarmkit.config.swarmconfig import SwarmConfig
from swarmkit.display.byrole import role_spend
from swarmkit.display.drilldown import worker_details
from swarmkit.display.history import RunDiff
from swarmkit.display.lanes import lane_workers
from swarmkit.display.livehtml import render_section
from swarmkit.display.livestate import MAX_ROWS, LiveState
from swarmkit.display.progress import ProgressLine
from swarmkit.display.rowcut import DISPLAY_ROWS
from swarmkit.display.timeline import timeline_svg
from swarmkit.display.treelayout import ancestors, tree_key
from swarmkit.record.events import Event, WorkerSplit, WorkerStarted
from swarmkit.record.rows import WorkerRecord
from swarmkit.testing import FakeServer, split_everywhere, split_script
from swarmkit.testing.synthetic import synthetic_events, synthetic_run
from tests.support.fakekey import FAKE_KEY, KEY_ENV, QUICK_RETRIES, run_options

pytestmark = pytest.mark.usefixtures("fake_key")

SPLITS = {"worker-2": ["Postgres", "Qdrant", "Milvus"],
          "worker-2.1": ["pgvector", "pgvecto.rs"]}
ORDER = ["1", "2", "2.1", "2.1.1", "2.1.2", "2.2", "2.3", "3"]


class _Events:
    def __init__(self) -> None:
        self.events: list[Event] = []

    def on_event(self, event: Event) -> None:
        self.events.append(event)


@pytest.fixture(scope="module")
def tree() -> tuple[Run, list[Event]]:
    sink = _Events()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(KEY_ENV, FAKE_KEY)
        with FakeServer(split_script(SPLITS), plan_tasks=3) as server:
            run = swarmkit.run_sync("Survey the vector databases", sinks=[sink],
                                    **run_options(server, history=False, workers=3,
                                                  concurrency=2, depth=3, **QUICK_RETRIES))
    assert run.status == "completed"
    return run, sink.events


def _fold(events: list[Event], run: Run) -> LiveState:
    state = LiveState(task=run.task, config=SwarmConfig.from_summary(run.config))
    for event in events:
        state.apply(event)
    return state


def _row_ids(html: str) -> list[str]:
    """The worker id of each body row: ``2`` or, for a child, ``↳ 2.1``."""
    cells = re.findall(r'<tr[^>]*><td class="sk-num">(.*?)</td>', html)
    return [re.sub(r"<[^>]+>|↳|\u2009", "", cell) for cell in cells]


def test_the_live_view_shows_each_child_under_its_parent(tree: Any) -> None:
    run, events = tree
    state = _fold(events, run)
    html = render_section(state, "workers")
    assert _row_ids(html) == ORDER
    assert html.count("↳") == 5  # the five children, marked
    assert 'padding-left:2.4em' in html  # a grandchild indented two levels
    assert "tree: 5 children in 2 splits, 6/6 leaves done" in html
    assert state.splits == 2 and state.leaves_done == 6
    assert "2 splits · 6/6 leaves done" in state.progress


def test_mid_run_a_parent_waits_on_its_children_with_their_own_status(tree: Any) -> None:
    run, events = tree
    split = next(n for n, e in enumerate(events)
                 if isinstance(e, WorkerSplit) and e.parent == "2")
    started = next(n for n, e in enumerate(events)
                   if isinstance(e, WorkerStarted) and e.worker_id == "2.1")
    state = _fold(events[:started + 1], run)
    html = render_section(state, "workers")
    assert state.splits == 1 and set(state.nodes) == {"2.1", "2.2", "2.3"}
    assert "running (split: 0/3 done)" in html
    rows = html.split("<tr")
    child = next(r for r in rows if "2.1</span>" in r)
    assert 'sk-st-running' in child and "Postgres" in child
    pending = next(r for r in rows if "2.3</span>" in r)
    assert "pending" in pending and "Milvus" in pending
    assert split < started


def test_the_progress_line_counts_splits_and_leaves(tree: Any) -> None:
    _, events = tree
    line = ProgressLine(io.StringIO())
    for event in events:
        line.on_event(event)
    assert line.line().startswith("workers 3/3 · 2 splits · leaves 6/6 · spent $")


def test_the_static_tables_show_dotted_ids_and_a_depth_column(tree: Any) -> None:
    run, _ = tree
    tables = run.tables()
    assert tables.worker_headers[:3] == ("worker", "depth", "task")
    assert [row[:2] for row in tables.worker_rows()] == [
        (i, i.count(".") + 1) for i in ORDER]
    assert "tree: 8 workers, 2 splits, 6 leaves, depth 3" in tables.totals()
    text = tables.text()
    assert re.search(r"^2\.1\.2 +3 +pgvecto\.rs +completed", text, re.M)
    html = tables.html()
    assert "<th>depth</th>" in html or '<th class="sk-num">depth</th>' in html
    assert "each child under its parent" in html


def test_spend_by_role_shows_each_depth_and_adds_up(tree: Any) -> None:
    run, _ = tree
    rows = run.tables().role_rows()
    roles = [row[0] for row in rows]
    assert roles == ["planner", "workers · depth 1", "workers · depth 2",
                     "workers · depth 3", "reducer (splits)", "reducer", "total"]
    calls = {row[0]: row[1] for row in rows}
    assert calls["reducer (splits)"] == 2 and calls["workers · depth 3"] == 2
    assert sum(calls[r] for r in roles[:-1]) == calls["total"] == len(run.calls)
    spend = role_spend(run.calls, by_depth=True)
    assert sum(r.cost_usd for r in spend[:-1]) == spend[-1].cost_usd == run.usage.cost


def test_the_timeline_nests_children_under_their_parent(tree: Any) -> None:
    run, _ = tree
    svg = run.tables().html().split('class="swarmkit-timeline"')[1]
    labels = re.findall(r'<text x="([\d.]+)" y="[\d.]+" font-size="\d+">([^<]+)</text>',
                        svg)
    workers = [(x, text) for x, text in labels if text.startswith(("worker-", "↳"))]
    assert [text for _, text in workers] == [
        "worker-1", "worker-2", "↳2.1", "↳2.1.1", "↳2.1.2", "↳2.2", "↳2.3", "worker-3"]
    assert [x for x, _ in workers][1:4] == ["4.0", "12.0", "20.0"]
    assert "reducer-of-2 · ok" in svg  # the split's merge, on its parent's lane
    assert ">reducer-of-2<" not in svg


def test_the_drill_down_shows_the_split_call_and_the_child_answers(tree: Any) -> None:
    run, events = tree
    html = run.tables().html()
    parent = html.split("<b>sub-task 2</b>")[1].split("</details>")[0]
    assert "split_task" in parent and "Postgres" in parent
    assert "child answers (3 of 3)" in parent
    assert "2.1 · completed · Postgres" in parent
    child = html.split("<b>sub-task 2.1.2</b>")[1].split("</details>")[0]
    # a child's messages are rebuilt from its parent: its sub-task is the child's task
    sent = child.split("<b>messages sent</b>")[1].split("<b>output</b>")[0]
    assert "Overall task: Postgres" in sent and "sub-task (2 of 2): pgvecto.rs" in sent
    live = render_section(_fold(events, run), "workers")
    assert "child answers (3 of 3)" in live and "2.2 · completed · Qdrant" in live


def test_a_flat_run_has_no_tree_columns() -> None:
    run = synthetic_run(5)
    tables = run.tables()
    assert not tables.tree and "depth" not in tables.worker_headers
    assert "tree:" not in tables.text() and "reducer (splits)" not in tables.text()
    assert "↳" not in tables.html() and "each child under" not in tables.html()


def _big_tree(top: int, children: int) -> list[WorkerRecord]:
    workers = []
    for i in range(1, top + 1):
        kids = tuple(WorkerRecord(j, f"part {j} of {i}", "failed" if (i, j) == (30, 3)
                                  else "completed", reason="provider" if (i, j) == (30, 3)
                                  else None, depth=2, parent=str(i))
                     for j in range(1, children + 1))
        workers.append(WorkerRecord(i, f"task {i}", "completed", children=kids))
    return workers


def test_a_long_tree_is_cut_with_every_shown_child_under_its_parent() -> None:
    run = synthetic_run(3)
    run.workers = _big_tree(40, 4)  # 200 rows
    tables = run.tables()
    shown = tables._worker_cut.shown
    assert shown is not None and len(shown) <= DISPLAY_ROWS
    ids = [tables.rows[p].id for p in shown]
    for worker_id in ids:
        if "." in worker_id:
            assert worker_id.rpartition(".")[0] in ids
    assert "30.3" in ids and "30" in ids  # the failed child, with its parent
    assert "worker 30.3 · failed (provider)" in tables.text()
    assert "did not complete, each with its parents); run.tables()" in tables.text()


def test_a_big_live_tree_shows_a_bounded_view_each_child_with_its_parent() -> None:
    sink = _Events()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(KEY_ENV, FAKE_KEY)
        with FakeServer(split_everywhere(4), plan_tasks=20) as server:
            run = swarmkit.run_sync("Survey twenty fields", sinks=[sink],
                                    **run_options(server, history=False, workers=20,
                                                  concurrency=8, depth=2, **QUICK_RETRIES))
    assert run.status == "completed"
    events = sink.events
    middle = len(events) * 2 // 3
    state = _fold(events[:middle], run)
    assert state.tree_size > MAX_ROWS
    ids = _row_ids(render_section(state, "workers"))
    assert 0 < len(ids) <= MAX_ROWS and ids == sorted(ids, key=tree_key)
    for worker_id in ids:
        assert all(parent in ids for parent in ancestors(worker_id)), worker_id
    running = [*map(str, state.running), *state.nodes_running]
    assert running and set(running[:10]) <= set(ids)  # the running ones come first
    final = _fold(events, run)
    assert final.splits == 20 and final.leaves_done == 80
    assert "20 splits · 80/80 leaves done" in final.progress


def test_a_tree_too_big_for_a_lane_each_gets_a_lane_per_subtree() -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(KEY_ENV, FAKE_KEY)
        with FakeServer(split_everywhere(5), plan_tasks=50) as server:
            run = swarmkit.run_sync("Survey fifty fields", **run_options(
                server, history=False, workers=50, concurrency=16, depth=2, max_children=5,
                **QUICK_RETRIES))
    assert run.status == "completed"
    svg = timeline_svg(run)
    labels = re.findall(r'font-size="\d+"(?: fill-opacity="0.6")?>([^<]+)</text>', svg)
    workers = [label for label in labels if label.startswith("worker-")]
    assert workers == [f"worker-{i} +5" for i in range(1, 51)]  # 52 lanes, each labelled
    assert "300 workers: a lane per top-level worker and its tree" in svg


def test_a_diff_of_a_tree_against_a_flat_run_pairs_workers_by_dotted_id(tree: Any) -> None:
    run, _ = tree
    flat = synthetic_run(3)
    text = RunDiff(run, flat).text()
    rows = [line.split()[0] for line in text.splitlines()
            if re.match(r"^\d+(\.\d+)* +(completed|-)", line)]
    assert rows == ORDER
    assert re.search(r"^2\.1\.1 +completed .* - +- +- +only in A$", text, re.M)


def test_a_comparison_lane_of_a_tree_counts_its_splits_and_leaves(tree: Any) -> None:
    run, events = tree
    assert lane_workers(_fold(events, run)) == (
        "3/3 done (3 ok) · 2 splits, 6/6 leaves done")
    assert "split" not in lane_workers(_fold(list(synthetic_events(3)), synthetic_run(3)))


def test_a_cut_childs_drill_down_says_how_to_reach_it_whole(tree: Any) -> None:
    run, _ = tree
    child = run.worker("2.1.2")
    long = replace(child, output="x" * 5_000)
    html = worker_details(run, long, [], None, "pgvecto.rs")
    assert "run.worker(&#x27;2.1.2&#x27;).output has the whole text" in html
    assert run.worker("2.1.2") is child
