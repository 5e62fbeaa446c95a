"""Bring your own sub-tasks from Python: ``run_sync(task, tasks=...)``, ``plan_from=``,
``reduce=False``, against the loopback FakeServer with the real openai client."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from decimal import Decimal
from functools import partial
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import swarmkit
import swarmkit.config.tasks as tasks_module
from swarmkit.config.tasks import MAX_GIVEN_TASKS, MAX_ONE_PROCESS_TASKS, given_tasks
from swarmkit.errors import ConfigError
from swarmkit.store import Cassette
from swarmkit.testing import FakeServer, Fault, FaultRule
from tests.support.fakekey import QUICK_RETRIES, run_options

pytestmark = pytest.mark.usefixtures("fake_key")

ROOT = Path(__file__).resolve().parents[2]

options = partial(run_options, **QUICK_RETRIES, history=False)



def test_given_tasks_are_the_plan_every_task_gets_a_worker_and_no_planner_is_asked() -> None:
    tasks = [f"sub-task {i}" for i in range(12)]  # more than the default 8 workers
    with FakeServer() as server:
        run = swarmkit.run_sync("The whole job", tasks=tasks, **options(server))
    assert server.count("planner") == 0 and server.count("reducer") == 1
    assert server.count("worker-*") == 12
    assert run.status == "completed" and run.answer
    assert run.plan == tasks and run.config["tasks"] == tasks
    assert run.config["max_workers"] == 8  # the planner's cap; it does not cut given tasks
    roles = {row[0] for row in run.tables().role_rows()}
    assert "planner" not in roles and "workers" in roles


def test_a_series_and_a_dataframe_with_a_template() -> None:
    frame = pd.DataFrame({"city": ["Lima", "Quito"], "n": [3, 4], "extra": [None, None]})
    with FakeServer() as server:
        run = swarmkit.run_sync("Cities", tasks=frame, task_template="{n} facts about {city}",
                                **options(server))
        series = swarmkit.run_sync("Cities", tasks=frame["city"], **options(server))
    assert run.plan == ["3 facts about Lima", "4 facts about Quito"]
    assert series.plan == ["Lima", "Quito"]
    assert server.count("planner") == 0


def test_plan_from_a_run_or_its_id_reuses_the_plan(tmp_path: Path) -> None:
    history = str(tmp_path / "history.db")
    with FakeServer(plan_tasks=3) as server:
        first = swarmkit.run_sync("Name rivers", **options(server, history=True,
                                                           history_path=history))
        assert server.count("planner") == 1
        server.clear()
        by_run = swarmkit.run_sync("Name rivers", plan_from=first,
                                   **options(server, system_prompt="Be brief."))
        by_id = swarmkit.run_sync("Name rivers", plan_from=first.run_id[:6],
                                  **options(server, history_path=history))
    assert server.count("planner") == 0 and server.count("worker-*") == 6
    assert by_run.plan == by_id.plan == first.plan and len(first.plan) == 3


def test_no_reduce_ends_with_every_worker_output_and_no_answer() -> None:
    with FakeServer() as server:
        run = swarmkit.run_sync("Map only", tasks=["a", "b", "c"], reduce=False,
                                budget=Decimal("1"), **options(server))
        server.add_fault(FaultRule(Fault.status(400), step="worker-2"))
        partial = swarmkit.run_sync("Map only", tasks=["a", "b", "c"], reduce=False,
                                    **options(server))
    assert server.count("reducer") == 0
    assert run.status == "completed" and run.answer is None and run.error is None
    assert [bool(w.output) for w in run.workers] == [True, True, True]
    assert "the reducer was skipped (--no-reduce)" in run.tables().text()
    assert "the reducer was skipped" in run.tables().html()
    assert partial.status == "partial" and partial.answer is None
    assert [w.status for w in partial.workers] == ["completed", "failed", "completed"]


def test_a_tasks_run_replays_from_its_cassette_without_being_given_the_tasks(
    tmp_path: Path,
) -> None:
    cassette = tmp_path / "given.swarm.json"
    with FakeServer() as server:
        recorded = swarmkit.run_sync("Review", tasks=["x", "y"], reduce=False,
                                     record=str(cassette), **options(server))
    assert Cassette.load(str(cassette)).run["config"]["tasks"] == ["x", "y"]
    replayed = swarmkit.run_sync("Review", replay=str(cassette), model="gpt-4.1-mini",
                                 history=False)
    assert replayed.run_id == recorded.run_id and replayed.plan == ["x", "y"]
    assert replayed.tables().text() == recorded.tables().text()


def test_swarmkit_never_imports_pandas_for_a_list_of_tasks() -> None:
    script = ("import sys, swarmkit\n"
              "from swarmkit.config.swarmconfig import SwarmConfig\n"
              "SwarmConfig().with_options(tasks=['a', 'b'])\n"
              "print('pandas' in sys.modules)\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=env, timeout=60, check=True)
    assert done.stdout.strip() == "False"


@pytest.mark.parametrize(("value", "template", "message"), [
    ([], None, "tasks is empty"),
    (["a", 2], None, "item 1 is an int"),
    (["a", "  "], None, "item 1 is empty"),
    ("one string", None, "not a str"),
    (["a"], "{x}", "task_template fills a DataFrame's rows, but tasks is a list"),
    (pd.DataFrame({"a": [1]}), None, "add task_template"),
    (pd.DataFrame({"a": [1]}), "{b}", "names the column {b}.*its columns are a"),
    (pd.DataFrame({"a": [1]}), "no placeholder", "task_template names no column"),
    (["t"] * (MAX_GIVEN_TASKS + 1), None, "over the 1,000,000 one run takes"),
    # A gap in a column the template reads would reach the model as "nan" or "None".
    (pd.DataFrame({"a": ["x", None]}), "{a}", "row 1 has no value in column a"),
    (pd.DataFrame({"a": [1.0, float("nan")]}), "{a}", r"row 1 has no value in column a \(nan\)"),
    (pd.DataFrame({"a": pd.array(["x", None], dtype="string")}), "{a}",
     r"row 1 has no value in column a .*df\.fillna"),
    (pd.DataFrame({"a": pd.to_datetime(["2026-01-01", None])}), "on {a}",
     "row 1 has no value in column a"),
])
def test_bad_tasks_are_one_line_config_errors(value: Any, template: str | None,
                                              message: str) -> None:
    with pytest.raises(ConfigError, match=message) as caught:
        given_tasks(value, template)
    assert "\n" not in str(caught.value)


def test_one_process_takes_fewer_tasks_than_a_cluster_and_says_how_to_run_more() -> None:
    over = ["t"] * (MAX_ONE_PROCESS_TASKS + 1)
    with pytest.raises(ConfigError, match=r"tasks has 100,001 sub-tasks, over the 100,000 a "
                       r"run in one process takes; shard them with cluster=\"ray\"") as caught:
        swarmkit.SwarmConfig().with_options(tasks=over)
    assert "\n" not in str(caught.value)
    # The same tasks on a cluster are one run; the cluster named in an earlier step
    # (%swarm config cluster=ray, then the cell's tasks) counts too.
    assert len(swarmkit.SwarmConfig().with_options(tasks=over, cluster="ray").tasks) == len(over)
    on_ray = swarmkit.SwarmConfig().with_options(cluster="ray")
    assert len(on_ray.with_options(tasks=over).tasks) == len(over)
    assert len(swarmkit.SwarmConfig().with_options(tasks=["t"] * MAX_ONE_PROCESS_TASKS).tasks
               ) == MAX_ONE_PROCESS_TASKS


def test_workers_set_below_the_given_tasks_is_refused_not_cut() -> None:
    with pytest.raises(ConfigError, match="workers 2 is fewer than the 3 given tasks"):
        swarmkit.SwarmConfig().with_options(tasks=["a", "b", "c"], workers=2)
    config = swarmkit.SwarmConfig().with_options(tasks=["a", "b"], workers=5)
    assert config.tasks == ("a", "b")


def test_the_live_dashboard_follows_a_given_tasks_run_with_no_planner_and_no_reducer() -> None:
    from swarmkit.display.widget import Dashboard

    tasks = [f"row {i}" for i in range(40)]
    with FakeServer() as server:
        config = swarmkit.SwarmConfig().with_options(**options(server), tasks=tasks,
                                                     reduce=False)
        dashboard = Dashboard(task="Map the rows", config=config)
        run = swarmkit.run_sync("Map the rows", config=config, sinks=[dashboard])
        dashboard.close()
    assert run.status == "completed" and server.count("planner") == 0
    assert "plan: 40 sub-tasks" in dashboard.sections["plan"].value
    assert "planner's raw reply" not in dashboard.sections["plan"].value
    assert "<b>40 workers</b>: 40 completed" in dashboard.sections["workers"].value
    assert dashboard.sections["reducer"].value == ""


def test_a_sharded_runs_recording_of_more_tasks_replays_in_one_process(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_key: str) -> None:
    # The limit is lowered to 3 here, so a recording of 4 tasks stands for one of more
    # than 100,000 made on a cluster (its recorded config says cluster="ray").
    file = tmp_path / "run.swarm.json"
    with swarmkit.testing.FakeServer() as server:
        run = swarmkit.run_sync("Name rivers", **run_options(server, history=False),
                                tasks=["a", "b", "c", "d"], record=str(file))
    data = json.loads(file.read_text())
    data["run"]["config"].update(cluster="ray", shards=2)
    file.write_text(json.dumps(data))
    monkeypatch.setattr(tasks_module, "MAX_ONE_PROCESS_TASKS", 3)
    with pytest.raises(ConfigError, match="over the 3 a run in one process takes"):
        swarmkit.run_sync("Name rivers", **run_options(None, history=False),
                          tasks=["a", "b", "c", "d"])
    replayed = swarmkit.run_sync("Name rivers", replay=str(file), history=False)
    assert str(replayed) == str(run) and replayed._repr_html_() == run._repr_html_()
    # Its tasks given again with the replay (as a cell may write them) are no live run.
    again = swarmkit.run_sync("Name rivers", replay=str(file), history=False,
                              tasks=["a", "b", "c", "d"])
    assert str(again) == str(run)
