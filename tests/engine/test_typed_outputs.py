"""Typed worker outputs (``output_type`` / ``--schema``) end to end against FakeServer:
the ladder, one repair, ``failed (schema)``, ``worker.data`` through Run JSON, the
history and a cassette, the DataFrame's columns and the reducer's JSON."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pydantic
import pytest

import swarmkit
from swarmkit.display.drilldown import run_worker_messages
from swarmkit.engine.ladder import forget_rungs
from swarmkit.errors import ConfigError
from swarmkit.record.runrecord import RunRecord
from swarmkit.testing import FakeReply, FakeRequest, FakeServer, Fault
from tests.support.fakekey import QUICK_RETRIES, run_options, swarm_line

options = partial(run_options, **QUICK_RETRIES)


class Verdict(pydantic.BaseModel):
    name: str
    score: int


VERDICT_DICT: dict[str, Any] = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "score": {"type": "integer"}},
    "required": ["name", "score"],
}


@pytest.fixture(autouse=True)
def _fresh(fake_key: str) -> Iterator[None]:
    forget_rungs()
    yield
    forget_rungs()


class Script:
    """Planner: four tasks. worker-2 is wrong once (repaired), worker-3 always (failed),
    the others right first time. Counts each worker's requests."""

    def __init__(self) -> None:
        self.seen: Counter[str] = Counter()

    def __call__(self, request: FakeRequest) -> FakeReply | Fault | None:
        if request.step == "planner":
            return FakeReply(content=json.dumps({"tasks": ["a", "b", "c", "d"]}))
        if request.step == "reducer":
            return FakeReply(content="merged")
        self.seen[request.step] += 1
        if request.step == "worker-2" and self.seen[request.step] == 1:
            return FakeReply(content='{"name": "two"}')
        if request.step == "worker-3":
            return FakeReply(content='{"name": "three", "score": "high"}')
        return FakeReply(content=json.dumps({"name": request.step, "score": 7}))


def test_invalid_reply_is_repaired_once_and_a_second_miss_fails_the_worker() -> None:
    script = Script()
    with FakeServer(script) as server:
        run = swarmkit.run_sync("rate things", **options(server, output_type=Verdict))
        requests = server.requests
    by_index = {w.index: w for w in run.workers}
    assert by_index[1].data == {"name": "worker-1", "score": 7}
    assert by_index[2].data == {"name": "worker-2", "score": 7}  # the repaired reply
    assert by_index[4].status == "completed"
    failed = by_index[3]
    assert failed.status_label == "failed (schema)" and failed.data is None
    assert "score" in failed.error and "integer" in failed.error
    assert "\n" not in failed.error
    assert script.seen == {"worker-1": 1, "worker-2": 2, "worker-3": 2, "worker-4": 1}
    # The repair sends the reply back with the one-line validation error.
    repair = [r for r in requests if r.step == "worker-2"][1].body["messages"]
    assert repair[-2] == {"role": "assistant", "content": '{"name": "two"}'}
    assert "'score' is a required property" in repair[-1]["content"]
    # Every worker was asked for the schema, strictly, and told so in words.
    first = next(r for r in requests if r.step == "worker-1").body
    assert first["response_format"]["type"] == "json_schema"
    assert first["response_format"]["json_schema"]["schema"] == Verdict.model_json_schema()
    assert "JSON schema" in first["messages"][-1]["content"]
    # The drill-down rebuilds that conversation, the schema's request included.
    assert run_worker_messages(run, by_index[1]) == first["messages"]
    # The reducer gets the JSON of the workers that have data.
    reducer = next(r for r in requests if r.step == "reducer").body["messages"][-1]["content"]
    assert '{"name": "worker-1", "score": 7}' in reducer
    assert "three" not in reducer
    assert run.status == "partial"


def test_dataframe_has_one_row_per_worker_with_the_typed_columns() -> None:
    pandas = pytest.importorskip("pandas")
    with FakeServer(Script()) as server:
        run = swarmkit.run_sync("rate things", **options(server, output_type=VERDICT_DICT))
    frame = run.to_dataframe()
    assert len(frame) == 4
    assert {"name", "score", "status", "error"} <= set(frame.columns)
    rows = frame.set_index("index")
    assert rows.loc[1, "name"] == "worker-1" and rows.loc[1, "score"] == 7
    assert rows.loc[3, "status"] == "failed" and pandas.isna(rows.loc[3, "name"])


def test_data_round_trips_through_run_json_and_the_history(tmp_path: Path) -> None:
    with FakeServer(Script()) as server:
        run = swarmkit.run_sync("rate things", **options(server, output_type=Verdict))
    again = RunRecord.from_json(run.to_json())
    assert [w.data for w in again.workers] == [w.data for w in run.workers]
    assert again.config["output_schema"] == json.dumps(
        Verdict.model_json_schema(), sort_keys=True, separators=(",", ":"))
    loaded = swarmkit.load_run(run.run_id)
    assert [w.data for w in loaded.workers] == [w.data for w in run.workers]
    # A Run JSON from before typed outputs (no "data" key) still loads.
    old = json.loads(run.to_json())
    for worker in old["workers"]:
        worker.pop("data", None)
    old["config"].pop("output_schema")
    assert all(w.data is None for w in RunRecord.from_json(json.dumps(old)).workers)


def test_replay_from_the_cassette_gives_the_same_data(tmp_path: Path) -> None:
    cassette = tmp_path / "typed.json"
    with FakeServer(Script()) as server:
        recorded = swarmkit.run_sync("rate things", **options(
            server, output_type=Verdict, record=str(cassette)))
        replayed = swarmkit.run_sync("rate things", **options(
            server, output_type=recorded.config["output_schema"], replay=str(cassette)))
        assert server.count() == len(recorded.calls)  # the replay asked nothing
    assert [(w.status_label, w.data, w.error) for w in replayed.workers] == [
        (w.status_label, w.data, w.error) for w in recorded.workers]
    assert replayed.tables().text() == recorded.tables().text()


@pytest.mark.parametrize("server_kind", ["vllm", "llama-server"])
def test_a_server_refusing_json_schema_sends_workers_down_the_ladder(server_kind: str) -> None:
    def handler(request: FakeRequest) -> FakeReply | Fault:
        if (request.response_format or {}).get("type") == "json_schema":
            return Fault.format_refusal(server_kind)
        if request.step == "planner":
            return FakeReply(content=json.dumps({"tasks": ["a", "b"]}))
        return FakeReply(content=json.dumps({"name": request.step, "score": 1}))

    with FakeServer(handler) as server:
        run = swarmkit.run_sync("rate", **options(server, output_type=Verdict, concurrency=1))
        formats = [(r.step, (r.body.get("response_format") or {}).get("type"))
                   for r in server.requests if r.step.startswith("worker")]
        server.clear()
        swarmkit.run_sync("rate again", **options(server, output_type=Verdict))
        later = {(r.body.get("response_format") or {}).get("type")
                 for r in server.requests if r.step.startswith("worker")}
    assert [w.data for w in run.workers] == [{"name": "worker-1", "score": 1},
                                             {"name": "worker-2", "score": 1}]
    # The first worker pays for the refusal; the rung is remembered for the rest.
    assert formats == [("worker-1", "json_schema"), ("worker-1", "json_object"),
                       ("worker-2", "json_object")]
    assert later == {"json_object"}


def test_a_bad_output_type_is_a_one_line_config_error() -> None:
    with pytest.raises(ConfigError, match="output_type must be a pydantic model"):
        swarmkit.run_sync("x", output_type=42)
    with pytest.raises(ConfigError, match="not a valid JSON schema"):
        swarmkit.run_sync("x", output_type={"type": "no-such-type"})


# -- through the real shell, and exported -------------------------------------------------


def test_schema_flag_in_the_shell_shows_the_field_columns(tmp_path: Path) -> None:
    from IPython.core.error import UsageError
    from IPython.utils.capture import capture_output

    from swarmkit.testing import swarm_shell

    shell = swarm_shell()
    shell.user_ns["Verdict"] = Verdict
    with FakeServer(Script()) as server:
        line = swarm_line(server, "--workers 4 --schema Verdict --quiet --out typed")

        with capture_output() as captured:
            shell.run_cell_magic("swarm", line, "rate things")
        with pytest.raises(UsageError, match="--schema Nope: no such name"):
            shell.run_cell_magic("swarm", line.replace("Verdict", "Nope"), "rate things")
    run = shell.user_ns.pop("typed")
    assert [w.data for w in run.workers if w.data] == [
        {"name": f"worker-{i}", "score": 7} for i in (1, 2, 4)]
    assert len(captured.outputs) == 1
    text = captured.outputs[0].data["text/plain"]
    lines = text.splitlines()
    header = next(line for line in lines if line.startswith("worker "))
    assert header.split()[-2:] == ["name", "score"]
    row = next(line for line in lines if line.startswith("1 "))
    assert row.split()[-2:] == ["worker-1", "7"]
    assert "worker 3 · failed (schema): the reply does not match the schema" in text
    html = captured.outputs[0].data["text/html"]
    assert "<th>name</th>" in html and "<th>score</th>" in html


@pytest.mark.kernel
def test_an_exported_typed_run_replays_offline_with_the_recorded_schema(tmp_path: Path) -> None:
    import nbformat

    from tests.support.notebooks import offline_env, run_nbval

    with FakeServer(Script()) as server:
        run = swarmkit.run_sync("rate things", model="fake-model", workers=4, history=False,
                                base_url=server.base_url, output_type=Verdict)
    # Export replays the run in a kernel (no namespace: no Verdict) and checks that its
    # tables equal the run's own, failed (schema) row and field columns included.
    result = run.export(tmp_path / "typed.ipynb")
    cells = [c.source for c in nbformat.read(result.notebook, as_version=4).cells
             if c.cell_type == "code"]
    assert "output_type=" in cells[-2] and "--schema" not in cells[-1]
    env = offline_env(pythonpath=[Path(swarmkit.__file__).parent.parent])
    checked = run_nbval(result.notebook.name, cwd=tmp_path, env=env)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_with_tools_the_final_answer_is_the_one_checked_and_repaired() -> None:
    @swarmkit.tool
    def lookup(order_id: str) -> dict[str, str]:
        """Find an order by its id."""
        return {"order_id": order_id, "status": "shipped"}

    def handler(request: FakeRequest) -> FakeReply:
        if request.step == "planner":
            return FakeReply(content=json.dumps({"tasks": ["order A-17"]}))
        if request.step == "reducer":
            return FakeReply(content="merged")
        last = request.messages[-1]
        if last.get("role") == "user" and "does not match" in str(last.get("content")):
            return FakeReply(content='{"name": "A-17", "score": 1}')  # the repair
        if last.get("role") == "tool":
            return FakeReply(content="It has shipped.")  # not JSON: repaired
        return FakeReply(tool_calls=[("lookup", {"order_id": "A-17"})])

    with FakeServer(handler) as server:
        run = swarmkit.run_sync("orders", tools=[lookup], **options(
            server, output_type=Verdict, workers=1))
        worker_bodies = [r.body for r in server.requests if r.step == "worker-1"]
    [worker] = run.workers
    assert worker.status == "completed" and worker.data == {"name": "A-17", "score": 1}
    assert worker.tool_calls == 1 and len(worker_bodies) == 3
    # The tool turns go without response_format; the repair follows the final answer.
    assert all("response_format" not in body for body in worker_bodies)
    assert worker_bodies[-1]["messages"][-2] == {"role": "assistant",
                                                 "content": "It has shipped."}
