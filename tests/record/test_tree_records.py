"""The tree in the record (depth > 1): ``WorkerRecord.children``, ``depth``, ``parent``
and the dotted ``id``; their JSON and history round-trip, left out when unset so a flat
run reads and writes as before; the builder keeping children inside their parent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from swarmkit.config.swarmconfig import SwarmConfig
from swarmkit.engine.recordbuilder import RunRecordBuilder
from swarmkit.errors import ConfigError
from swarmkit.record.events import RunStarted, WorkerFinished
from swarmkit.record.rows import ToolCallRecord, WorkerRecord
from swarmkit.record.runrecord import RunRecord
from swarmkit.record.steps import (
    child_reducer_step,
    reducer_part_of_step,
    worker_id_of_step,
    worker_of_step,
)
from swarmkit.store.history import History

LEAF = WorkerRecord(3, "leaf", "completed", output="c", depth=3, parent="2.1")
CHILD = WorkerRecord(1, "child", "completed", output="b", depth=2, parent="2",
                     children=(LEAF,))
CUT = WorkerRecord(2, "cut", "skipped", reason="budget", depth=2, parent="2")
ROOT = WorkerRecord(2, "root", "completed", output="a", children=(CHILD, CUT))


def test_dotted_ids_and_the_walk() -> None:
    assert [w.id for w in ROOT.walk()] == ["2", "2.1", "2.1.3", "2.2"]
    assert [w.depth for w in ROOT.walk()] == [1, 2, 3, 2]
    assert LEAF.step == "worker-2.1.3"
    assert worker_id_of_step("worker-2.1.3") == "2.1.3"
    assert worker_id_of_step("worker-7") == "7" and worker_of_step("worker-7") == 7
    assert worker_of_step("worker-2.1") is None  # a top-level index only
    assert worker_id_of_step("reducer-of-2") is None
    assert reducer_part_of_step(child_reducer_step("2.1")) is None  # no tree-reduction part


def test_a_flat_worker_writes_no_tree_keys() -> None:
    flat = WorkerRecord(1, "a", "completed").to_dict()
    assert not {"children", "depth", "parent"} & flat.keys()
    assert WorkerRecord.from_dict(flat) == WorkerRecord(1, "a", "completed")


def test_a_tree_round_trips_through_run_json_and_the_history(tmp_path: Path) -> None:
    run = RunRecord("r1", "task", config=SwarmConfig.from_options(depth=3).summary(),
                    status="completed", plan=["root"], workers=[ROOT], answer="x")
    assert [w.id for w in run.walk()] == ["2", "2.1", "2.1.3", "2.2"]
    assert run.worker("2.1.3") == LEAF and run.worker(2) == ROOT
    with pytest.raises(KeyError, match=r"has no worker 2\.9"):
        run.worker("2.9")
    again = RunRecord.from_json(run.to_json())
    assert again == run and again.workers[0].children[0].children[0] == LEAF
    assert "".join(run.json_parts()) == run.to_json(indent=None)
    with History(tmp_path / "history.db") as history:
        history.save(run)
        assert history.load_run("r1").workers == [ROOT]


@pytest.mark.parametrize("bad", [{"parent": "2.x"}, {"parent": "0"}, {"depth": 0},
                                 {"depth": 99}, {"children": [{"index": 1}]}])
def test_a_garbled_tree_is_refused_field_by_field(bad: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        WorkerRecord.from_dict({**CHILD.to_dict(), **bad})


def test_a_tool_call_of_a_child_names_its_parent() -> None:
    call = ToolCallRecord(1, 1, "c1", "split_task", "{}", "r", None, 0.0, 0.1, parent="2")
    assert call.worker_id == "2.1"
    assert ToolCallRecord.from_dict(json.loads(json.dumps(call.to_dict()))) == call
    top = ToolCallRecord(2, 1, "c1", "t", "{}", "r", None, 0.0, 0.1)
    assert "parent" not in top.to_dict() and top.worker_id == "2"


def test_the_builder_keeps_children_inside_their_parent() -> None:
    builder = RunRecordBuilder()
    builder.on_event(RunStarted("r1", "task", {}, "2026-01-01T00:00:00+00:00"))
    builder.on_event(WorkerFinished(CHILD, t=1.0))  # a child: only inside its parent
    builder.on_event(WorkerFinished(ROOT, t=2.0))
    assert builder.run is not None and builder.run.workers == [ROOT]


def test_the_tree_options_and_their_summary() -> None:
    flat = SwarmConfig().summary()
    assert not {"depth", "max_children", "max_total_workers"} & flat.keys()
    tree = SwarmConfig.from_options(depth=2, max_children=6, max_total_workers=20)
    assert SwarmConfig.from_summary(tree.summary()) == tree
    assert SwarmConfig().max_children == 4
    for bad, says in (({"depth": 9}, "depth must be between 1 and 8"),
                      ({"max_children": 1}, "max_children must be at least 2"),
                      ({"max_total_workers": 0}, "max_total_workers must be at least 1"),
                      ({"depth": 2, "batch": True}, "batch: a run with depth > 1")):
        with pytest.raises(ConfigError, match=says):
            SwarmConfig.from_options(**bad)
