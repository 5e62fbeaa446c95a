"""The ``swarmkit`` command against FakeServer, as a real subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from swarmkit.testing import FakeServer, Fault, FaultRule

ROOT = Path(__file__).resolve().parents[1]


def swarmkit_cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, CLI_TEST_KEY="sk-cli-test", PYTHONPATH=str(ROOT))
    return subprocess.run(
        [sys.executable, "-m", "swarmkit", *args],
        capture_output=True, text=True, timeout=120, env=env, input=stdin, check=False,
    )


def common(server: FakeServer) -> list[str]:
    return ["--model", "gpt-4.1-mini", "--base-url", server.base_url,
            "--api-key-env", "CLI_TEST_KEY"]


def test_run_prints_the_worker_table_totals_and_answer() -> None:
    with FakeServer(plan_tasks=3) as server:
        done = swarmkit_cli("run", "Compare three databases", *common(server), "--workers", "5",
                            "--budget", "0.5")
    assert done.returncode == 0, done.stderr
    assert "completed" in done.stdout and "tokens in" in done.stdout
    assert "Final answer merging 3 results" in done.stdout
    assert "workers 3/3" in done.stderr  # the progress line, shown on the terminal stream


def test_run_json_is_a_loadable_run() -> None:
    import swarmkit

    with FakeServer(plan_tasks=2) as server:
        done = swarmkit_cli("run", "-", *common(server), "--json", stdin="task from stdin")
    assert done.returncode == 0, done.stderr
    run = swarmkit.Run.from_json(done.stdout)
    assert run.task == "task from stdin" and len(run.workers) == 2
    assert json.loads(done.stdout)["status"] == "completed"


def test_failed_run_exits_non_zero() -> None:
    with FakeServer(faults=[FaultRule(Fault.status(400), step="planner")]) as server:
        done = swarmkit_cli("run", "task", *common(server))
    assert done.returncode == 1
    assert "ProviderError" in done.stdout


def test_bad_option_is_a_one_line_usage_error() -> None:
    done = swarmkit_cli("run", "task", "--model", "gpt-4.1-mini", "--budget", "lots")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "swarmkit: ConfigError: budget must be a USD amount like 0.50, got 'lots'"
    ]
