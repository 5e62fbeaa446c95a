"""A tree (depth > 1) through a run's life: recorded and replayed byte for byte, stopped
and merged, interrupted with its finished leaves kept, and resumed with only the
missing leaves asked again (the cache serves the rest, counted at the FakeServer)."""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path
from typing import Any

import pytest

import swarmkit
from swarmkit.api.entry import create_engine
from swarmkit.api.result import Run
from swarmkit.errors import StoreError
from swarmkit.record.events import Event, WorkerFinished
from swarmkit.store import History, rerun_config
from swarmkit.testing import FakeReply, FakeRequest, FakeServer, run_problems, split_reply
from tests.support.fakekey import QUICK_RETRIES, run_options

pytestmark = pytest.mark.usefixtures("fake_key")

TASK = "Survey the vector databases"
LEAVES = [f"Database {i}" for i in range(1, 7)]


def slow_tree(request: FakeRequest) -> FakeReply | None:
    """Worker 2 splits into six leaves, each a slow answer; the rest answer at once."""
    if request.step == "worker-2" and len(request.messages) == 2:
        return split_reply(LEAVES)
    if request.step.startswith("worker-2."):
        return FakeReply(content=f"Notes on {request.step}", latency=0.15)
    return None


def options(server: FakeServer, history: Path, **extra: Any) -> dict[str, Any]:
    return run_options(server, **{"workers": 3, "depth": 2, "max_children": 6,
                                  "concurrency": 2, "history_path": str(history),
                                  **QUICK_RETRIES, **extra})


async def cut_short(server: FakeServer, history: Path, how: str, leaves: int) -> Run:
    """A run that is interrupted (``how`` "interrupt") or stopped ("stop") once
    ``leaves`` leaves of worker 2 have finished."""
    engines: list[Any] = []
    done: list[str] = []

    class CutAfterLeaves:
        def on_event(self, event: Event) -> None:
            if (isinstance(event, WorkerFinished) and event.worker.parent == "2"
                    and event.worker.status == "completed"):
                done.append(event.worker.id)
                if len(done) == leaves:
                    engine = engines[0]
                    asyncio.get_running_loop().call_soon(
                        engine.stop if how == "stop" else lambda: engine.cancel(how))

    engine = await create_engine(task=TASK, sinks=[CutAfterLeaves()],
                                 **options(server, history))
    engines.append(engine)
    try:
        return await engine.execute(TASK)  # type: ignore[no-any-return]
    finally:
        await engine.caller.aclose()


def test_a_recorded_tree_replays_byte_identical(tmp_path: Path) -> None:
    cassette = tmp_path / "tree.swarm.json"
    with FakeServer(slow_tree, plan_tasks=3) as server:
        run = swarmkit.run_sync(TASK, record=str(cassette),
                                **{**options(server, tmp_path / "h.db"), "history": False})
    again = swarmkit.run_sync(TASK, replay=str(cassette), history=False)
    assert run.status == again.status == "completed" and run_problems(again) == []
    assert again.workers == run.workers and again.calls[-1].source == "replay"
    assert [w.id for w in again.workers[1].walk()] == ["2", *(f"2.{i}" for i in range(1, 7))]
    assert again.tables().text() == run.tables().text()
    assert again.tables().html() == run.tables().html()
    assert again.answer == run.answer
    # The split's record is the recording's, but for where it was served from.
    assert [(t.tool, t.result, t.started, t.duration) for t in again.tool_calls] == [
        (t.tool, t.result, t.started, t.duration) for t in run.tool_calls]
    twice = swarmkit.run_sync(TASK, replay=str(cassette), history=False)
    assert twice.to_json() == again.to_json()


def test_an_interrupted_tree_keeps_its_leaves_and_resumes_only_the_missing(
    tmp_path: Path,
) -> None:
    history = tmp_path / "history.db"
    with FakeServer(slow_tree, plan_tasks=3) as server:
        cut = asyncio.run(cut_short(server, history, "interrupt", leaves=2))
        server.clear()
        resumed = swarmkit.run_sync(TASK, resume=cut.run_id, cache=True,
                                    **options(server, history))
        asked = server.counts_by_step()
        server.clear()
        cached = swarmkit.run_sync(TASK, cache=True, **options(server, history))
        assert server.count() == 0  # the whole tree's requests are deterministic
    assert cached.answer == resumed.answer
    assert [t.result for t in cached.tool_calls] == [t.result for t in resumed.tool_calls]
    assert [w.id for w in cached.workers[1].walk()] == [w.id for w in
                                                        resumed.workers[1].walk()]
    assert cut.status == "cancelled" and cut.error == "run interrupted"
    assert run_problems(cut) == []
    parent = cut.workers[1]
    assert parent.status == "cancelled" and len(parent.children) == 6
    kept = [c.id for c in parent.children if c.status == "completed"]
    assert len(kept) >= 2 and all(c.parent == "2" for c in parent.children)
    # The resume: the plan, the split turn and the kept leaves from the history.
    assert resumed.status == "completed" and run_problems(resumed) == []
    assert asked["planner"] == 0 and asked["worker-2"] == 1  # only its answer after it
    assert all(asked[f"worker-{leaf}"] == 0 for leaf in kept)
    live_leaves = sum(n for step, n in asked.items() if step.startswith("worker-2."))
    assert live_leaves == 6 - len(kept)
    assert [c.status for c in resumed.workers[1].children] == ["completed"] * 6


def test_stop_and_merge_on_a_tree_merges_what_finished_and_keeps_the_leaves(
    tmp_path: Path,
) -> None:
    with FakeServer(slow_tree, plan_tasks=3) as server:
        run = asyncio.run(cut_short(server, tmp_path / "history.db", "stop", leaves=2))
    assert run.status == "stopped" and run.answer is not None
    assert run_problems(run) == []
    one, two, _ = run.workers
    assert one.status == "completed" and two.status_label == "cancelled (stopped)"
    assert sum(c.status == "completed" for c in two.children) >= 2
    assert {c.status_label for c in two.children} <= {"completed", "cancelled (stopped)"}
    assert 2 not in run.reduced and 1 in run.reduced


def test_rerunning_a_child_asks_it_and_what_merges_it_and_nothing_else(
        tmp_path: Path) -> None:
    history = tmp_path / "h.db"
    drafts = itertools.count(1)

    def tree(request: FakeRequest) -> FakeReply | None:
        """Leaf 2.3 answers anew each time it is asked; what merges it carries it up."""
        said = str(request.messages[-1].get("content"))
        if request.step == "worker-2.3":
            return FakeReply(content=f"draft {next(drafts)} of database 3")
        if request.step == "reducer-of-2":
            return FakeReply(content="merged " + ("draft 1" if "draft 1" in
                                                   str(request.messages) else "draft 2"))
        if request.step == "worker-2" and len(request.messages) > 2:
            return FakeReply(content=f"worker 2 from {said}")
        return slow_tree(request)

    with FakeServer(tree, plan_tasks=3) as server:
        first = swarmkit.run_sync(TASK, cache=True, **options(server, history))
        server.clear()
        with History(history) as stored:
            past = stored.load_run(first.run_id)
        with pytest.raises(StoreError, match=r"workers 1 to 3, or a child's dotted id such "
                                             r"as 2\.1; pick one of those, not 2\.9"):
            rerun_config(past, "2.9")
        config = rerun_config(past, "2.3")
        again = swarmkit.run_sync(past.task, config=config)
        asked = server.counts_by_step()
    # The child, its swarm's reducer, its parent's answer after the split, the top reducer.
    assert asked == {"worker-2.3": 1, "reducer-of-2": 1, "worker-2": 1, "reducer": 1}
    assert run_problems(again) == [] and again.status == "completed"
    leaf = next(w for w in again.workers[1].walk() if w.id == "2.3")
    assert leaf.output == "draft 2 of database 3"
    assert [w.id for w in again.workers[1].walk()] == [w.id for w in first.workers[1].walk()]
    assert again.workers[1].output == "worker 2 from merged draft 2"
    assert first.workers[1].output == "worker 2 from merged draft 1"
