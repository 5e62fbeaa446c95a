"""The ``swarmkit`` command against FakeServer, as a real subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from swarmkit.testing import FakeReply, FakeRequest, FakeServer, Fault, FaultRule

ROOT = Path(__file__).resolve().parents[1]


def swarmkit_cli(
    *args: str, stdin: str | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, CLI_TEST_KEY="sk-cli-test", PYTHONPATH=str(ROOT))
    return subprocess.run(
        [sys.executable, "-m", "swarmkit", *args],
        capture_output=True, text=True, timeout=120, env=env, input=stdin, check=False,
        cwd=cwd,
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


def test_system_prompt_and_record_then_replay_offline(tmp_path: Path) -> None:
    cassette = tmp_path / "calls.json"
    options = ["--system", "Answer like a ship's captain.", "--workers", "2"]
    with FakeServer(plan_tasks=2) as server:
        done = swarmkit_cli("run", "Name two harbours", *common(server), *options,
                            "--record", str(cassette), "--json")
        base_url = server.base_url
    assert done.returncode == 0, done.stderr
    recorded = cassette.read_text(encoding="utf-8")
    assert "Answer like a ship's captain." in recorded and "sk-cli-test" not in recorded
    first = json.loads(done.stdout)
    # The server is gone: the replay answers from the cassette alone.
    again = swarmkit_cli("run", "Name two harbours", "--model", "gpt-4.1-mini", "--base-url",
                         base_url, "--api-key-env", "CLI_TEST_KEY", *options,
                         "--replay", str(cassette), "--json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["answer"] == first["answer"]


def test_run_help_lists_the_magics_options() -> None:
    from swarmkit.config.options import OPTIONS

    done = swarmkit_cli("run", "--help")
    assert done.returncode == 0
    for row in OPTIONS:
        if row.on("cli"):
            assert row.flag_name in done.stdout, row.name
    for flag in ("--system", "--reducer-prompt", "--planner-prompt", "--record", "--replay",
                 "--no-cache", "--no-history", "--budget-tokens", "--rpm", "--tools",
                 "--max-tool-hops", "--planner-api-key-env", "--worker-base-url",
                 "MODULE:NAME"):
        assert flag in done.stdout, flag


def test_tools_are_imported_by_module_and_name(tmp_path: Path) -> None:
    (tmp_path / "cli_tools.py").write_text(
        "import swarmkit\n\n\n@swarmkit.tool\ndef lookup(word: str) -> str:\n"
        '    """Look a word up."""\n    return word.upper()\n\n\nTOOLS = [lookup]\n'
        "NOT_A_TOOL = 3\n",
        encoding="utf-8",
    )
    with FakeServer(plan_tasks=2) as server:
        done = swarmkit_cli("run", "task", *common(server), "--tools", "cli_tools:TOOLS",
                            "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    for spec, says in [("cli_tools", "--tools takes MODULE:NAME, got 'cli_tools'"),
                       ("cli_tools:nothing", "--tools cli_tools:nothing: module 'cli_tools' "
                        "has no attribute 'nothing'"),
                       ("cli_tools:NOT_A_TOOL", "--tools cli_tools:NOT_A_TOOL: is a int, "
                        "not a tool")]:
        bad = swarmkit_cli("run", "task", "--model", "gpt-4.1-mini", "--tools", spec,
                           cwd=tmp_path)
        assert bad.returncode == 2, bad.stderr
        lines = bad.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"swarmkit: ConfigError: {says}")


def test_run_no_reduce_ends_with_the_workers_outputs_and_no_reducer_call(
    tmp_path: Path,
) -> None:
    with FakeServer(plan_tasks=3) as server:
        done = swarmkit_cli("run", "Compare three databases", *common(server), "--no-reduce",
                            "--no-history", cwd=tmp_path)
        assert server.count("reducer") == 0 and server.count("worker-*") == 3
    assert done.returncode == 0, done.stderr
    assert "the reducer was skipped (--no-reduce)" in done.stdout
def test_schema_file_types_the_workers_outputs(tmp_path: Path) -> None:
    schema = {"type": "object", "properties": {"name": {"type": "string"}},
              "required": ["name"]}
    (tmp_path / "named.json").write_text(json.dumps(schema), encoding="utf-8")

    def handler(request: FakeRequest) -> FakeReply | None:
        if request.step.startswith("worker"):
            return FakeReply(content=json.dumps({"name": request.step}))
        return None  # the default planner and reducer

    with FakeServer(handler, plan_tasks=2) as server:
        done = swarmkit_cli("run", "task", *common(server), "--json", "--history-path",
                            str(tmp_path / "h.db"), "--schema-file",
                            str(tmp_path / "named.json"))
        missing = swarmkit_cli("run", "task", *common(server), "--schema-file",
                               str(tmp_path / "nope.json"))
    assert done.returncode == 0, done.stderr
    workers = json.loads(done.stdout)["workers"]
    assert [w["data"] for w in workers] == [{"name": "worker-1"}, {"name": "worker-2"}]
    assert missing.returncode == 2 and "--schema-file" in missing.stderr
    assert len(missing.stderr.strip().splitlines()) == 1


def test_run_resume_continues_a_run_from_the_history(tmp_path: Path) -> None:
    history = str(tmp_path / "h.db")
    with FakeServer(plan_tasks=3) as server:
        first = swarmkit_cli("run", "Three lakes", *common(server), "--json",
                             "--history-path", history)
        assert first.returncode == 0, first.stderr
        run_id = json.loads(first.stdout)["run_id"]
        server.clear()
        again = swarmkit_cli("run", "Three lakes", *common(server), "--history-path", history,
                             "--resume", run_id[:6])
        assert server.count() == 0  # every call was answered before
    assert again.returncode == 0, again.stderr
    assert f"4 calls (resumed: 4 from history, run {run_id})" in again.stdout  # no planner
