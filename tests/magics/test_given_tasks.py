"""``%%swarm --tasks / --task-template / --plan-from / --no-reduce`` in a real IPython
shell against the loopback FakeServer: bring your own sub-tasks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

from swarmkit.api.result import Run
from swarmkit.magics import SwarmMagics
from swarmkit.testing import FakeServer
from tests.support.fakekey import swarm_line

ROOT = Path(__file__).resolve().parents[2]
NAMES = ("_swarm", "rows", "topics", "first", "numbers", "rivers")


@pytest.fixture(autouse=True)
def _forget_names(shell: InteractiveShell) -> Iterator[None]:
    yield
    for name in NAMES:
        shell.user_ns.pop(name, None)


line_for = partial(swarm_line, flags="--quiet")



def cell(shell: InteractiveShell, line: str, task: str = "Review the rows") -> tuple[Run, str]:
    with capture_output() as captured:
        shell.run_cell_magic("swarm", line, task)
    run = shell.user_ns["_swarm"]
    assert isinstance(run, Run)
    return run, captured.outputs[-1].data["text/plain"]


def worker_prompts(server: FakeServer) -> list[str]:
    return [str(r.body["messages"][-1]["content"]) for r in server.requests
            if r.step and r.step.startswith("worker-")]


def test_tasks_over_a_thousand_row_dataframe_make_no_planner_request(
    shell: InteractiveShell, magics: SwarmMagics, server: FakeServer
) -> None:
    shell.user_ns["rows"] = pd.DataFrame({
        "title": [f"paper {i}" for i in range(1000)],
        # braces that are not a placeholder stay as written, as in a cell
        "body": [f'abstract {i} {{"n": {i}}}' for i in range(1000)],
    })
    run, text = cell(shell, line_for(
        server, "--tasks rows --task-template 'Review {title}: {body}' --concurrency 64"))

    assert server.count("planner") == 0
    assert server.count("worker-*") == 1000
    assert server.count("reducer") == 1
    assert run.status == "completed" and run.answer
    assert len(run.plan) == 1000 and len(run.workers) == 1000
    assert run.plan[7] == 'Review paper 7: abstract 7 {"n": 7}'
    asked = [prompt.split(" of 1000): ", 1)[1] for prompt in worker_prompts(server)]
    assert sorted(asked) == sorted(run.plan)
    # The plan is recorded as given, and the run has no planner call or row.
    assert run.config["tasks"] == run.plan and run.plan_raw == ""
    assert all(call.step != "planner" for call in run.calls)
    assert "planner" not in text.split("by role", 1)[1].split("\n\n", 1)[0]
    assert run.tables().html()  # the timeline and drill-downs cope with no planner


def test_tasks_from_a_list_and_a_series(
    shell: InteractiveShell, magics: SwarmMagics, server: FakeServer
) -> None:
    shell.user_ns["topics"] = ["rivers of Peru", "lakes of Chile"]
    run, _ = cell(shell, line_for(server, "--tasks topics"))
    assert run.plan == ["rivers of Peru", "lakes of Chile"]
    shell.user_ns["topics"] = pd.Series(["deserts", "glaciers", "fjords"])
    server.clear()
    run, _ = cell(shell, line_for(server, "--tasks topics --no-cache"))
    assert run.plan == ["deserts", "glaciers", "fjords"]
    assert server.counts_by_step()["planner"] == 0 and server.count("worker-*") == 3


def test_plan_from_a_run_variable_or_a_run_id_makes_no_planner_request(
    shell: InteractiveShell, magics: SwarmMagics, server: FakeServer
) -> None:
    first, _ = cell(shell, line_for(server, "--workers 3 --out first"), "Name three rivers")
    assert server.count("planner") == 1 and len(first.plan) == 3
    server.clear()

    second, _ = cell(shell, line_for(server, "--plan-from first --system 'Answer in French.'"),
                     "Name three rivers")
    assert server.count("planner") == 0
    assert server.count("worker-*") == 3
    assert second.plan == first.plan
    assert all(r.body["messages"][0]["content"] == "Answer in French."
               for r in server.requests if r.step.startswith("worker-"))

    server.clear()
    third, _ = cell(shell, line_for(server, f"--plan-from {first.run_id[:8]} --no-cache"),
                    "Name three rivers")
    assert server.count("planner") == 0 and third.plan == first.plan


def test_no_reduce_keeps_every_worker_output_and_says_there_is_no_answer(
    shell: InteractiveShell, magics: SwarmMagics, server: FakeServer
) -> None:
    shell.user_ns["topics"] = ["alpha", "beta", "gamma"]
    run, text = cell(shell, line_for(server, "--tasks topics --no-reduce"))
    assert server.count("reducer") == 0 and server.count("planner") == 0
    assert run.status == "completed" and run.answer is None and run.error is None
    assert [w.status for w in run.workers] == ["completed"] * 3
    assert all(w.output for w in run.workers)
    assert "the reducer was skipped (--no-reduce)" in text
    assert "reducer" not in text.split("by role", 1)[1].split("\n\n", 1)[0]


def test_a_tasks_run_replays_from_its_cassette_in_a_fresh_shell_without_the_variable(
    shell: InteractiveShell, magics: SwarmMagics, server: FakeServer, tmp_path: Path
) -> None:
    cassette = tmp_path / "tasks.swarm.json"
    shell.user_ns["rivers"] = ["the Amazon", "the Nile", "the Danube"]
    recorded, recorded_text = cell(
        shell, line_for(server, f"--tasks rivers --no-reduce --record {cassette}"))
    server.stop()
    script = (
        "from IPython.utils.capture import capture_output\n"
        "from swarmkit.testing import swarm_shell\n"
        "import json\n"
        "shell = swarm_shell()\n"
        "assert 'rivers' not in shell.user_ns\n"
        "with capture_output() as out:\n"
        f"    shell.run_cell_magic('swarm', '--replay {cassette}', 'Review the rows')\n"
        "run = shell.user_ns['_swarm']\n"
        "text = out.outputs[-1].data['text/plain']\n"
        "print(json.dumps([run.run_id, run.plan, run.answer, text]))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SWARMKIT_HISTORY": str(tmp_path / "h.db")}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    run_id, plan, answer, text = json.loads(done.stdout.strip().splitlines()[-1])
    assert run_id == recorded.run_id and plan == recorded.plan and answer is None
    assert text == recorded_text


@pytest.mark.parametrize(("line", "names", "message"), [
    ("--tasks nowhere", {}, r"--tasks nowhere names no variable in the notebook"),
    ("--tasks numbers", {"numbers": [1, 2]}, r"--tasks must be strings, but item 0 is an int"),
    ("--tasks numbers", {"numbers": 42}, r"--tasks must be a list of strings, a pandas Series"),
    ("--tasks numbers", {"numbers": []}, r"--tasks is empty"),
    ("--tasks rows", {"rows": pd.DataFrame({"title": ["a"]})}, r"add task_template"),
    ("--tasks rows --task-template 'Review {title}: {body}'",
     {"rows": pd.DataFrame({"title": ["a"], "name": ["b"]})},
     r"names the column \{body\}, which the DataFrame does not have; its columns are "
     r"title, name"),
    ("--tasks numbers --workers 1", {"numbers": ["a", "b"]},
     r"--workers 1 is fewer than the 2 given tasks"),
    ("--task-template '{x}'", {}, r"--task-template needs tasks"),
    ("--plan-from numbers", {"numbers": ["a"]}, r"--plan-from numbers is a list, not a Run"),
    ("--plan-from feedbeef", {}, r"no run 'feedbeef' in history"),
])
def test_bad_inputs_are_one_line_usage_errors(
    shell: InteractiveShell, magics: SwarmMagics, server: FakeServer, line: str,
    names: dict[str, Any], message: str,
) -> None:
    shell.user_ns.update(names)
    with pytest.raises(UsageError, match=message) as caught:
        shell.run_cell_magic("swarm", line_for(server, line), "Review the rows")
    assert "\n" not in str(caught.value)
    assert server.count() == 0


def test_dry_run_with_given_tasks_asks_nothing_and_prices_their_fan_out(
    shell: InteractiveShell, magics: SwarmMagics, server: FakeServer
) -> None:
    shell.user_ns["topics"] = ["alpha", "beta"]
    with capture_output() as captured:
        shell.run_cell_magic("swarm", line_for(server, "--tasks topics --no-reduce --dry-run"),
                             "Review the rows")
    assert server.count() == 0
    text = captured.outputs[-1].data["text/plain"]
    assert "dry run: 2 workers planned" in text and "1. alpha" in text
    assert "reducer" not in text


def test_rerun_of_a_worker_in_a_given_tasks_run_needs_no_variable(
    shell: InteractiveShell, magics: SwarmMagics, server: FakeServer
) -> None:
    shell.user_ns["topics"] = ["alpha", "beta", "gamma"]
    first, _ = cell(shell, line_for(server, "--tasks topics"))
    del shell.user_ns["topics"]
    server.clear()
    server.handler = lambda request: "a new draft" if request.step == "worker-2" else None
    with capture_output():
        shell.run_line_magic("swarm", f"rerun {first.run_id[:8]} --worker 2")
    assert server.counts_by_step() == {"worker-2": 1, "reducer": 1}
    assert shell.user_ns["_swarm"].plan == first.plan
    assert shell.user_ns["_swarm"].worker(2).output == "a new draft"
