"""The ``jswarm`` command (``python -m swarmkit``) against FakeServer, as a real subprocess."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from decimal import Decimal
from pathlib import Path

import pytest

from swarmkit.testing import FakeReply, FakeRequest, FakeServer, Fault, FaultRule, wait_until
from tests.support.fakekey import FAKE_KEY, KEY_ENV, swarm_line

ROOT = Path(__file__).resolve().parents[2]


def child_env(**extra: str) -> dict[str, str]:
    """This environment with the fake key set and the checkout on PYTHONPATH."""
    return {**os.environ, KEY_ENV: FAKE_KEY, "PYTHONPATH": str(ROOT), **extra}


def swarmkit_cli(
    *args: str, stdin: str | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    env = child_env()
    return subprocess.run(
        [sys.executable, "-m", "swarmkit", *args],
        capture_output=True, text=True, timeout=120, env=env, input=stdin, check=False,
        cwd=cwd,
    )


def common(server: FakeServer | str) -> list[str]:
    """The model, ``server`` (or a base URL) and the key variable, as arguments."""
    return swarm_line(server).split()


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
        "jswarm: ConfigError: --budget must be a USD amount like 0.50, got 'lots'"
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
    assert "Answer like a ship's captain." in recorded and FAKE_KEY not in recorded
    first = json.loads(done.stdout)
    # The server is gone: the replay answers from the cassette alone.
    again = swarmkit_cli("run", "Name two harbours", *common(base_url), *options,
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
                       ("cli_tools:NOT_A_TOOL", "--tools cli_tools:NOT_A_TOOL: is an int, "
                        "not a tool")]:
        bad = swarmkit_cli("run", "task", "--model", "gpt-4.1-mini", "--tools", spec,
                           cwd=tmp_path)
        assert bad.returncode == 2, bad.stderr
        lines = bad.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"jswarm: ConfigError: {says}")


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


# -- the terminal speaks like a terminal ---------------------------------------------------


def test_help_lists_the_commands_without_rest_markup_and_points_to_run_help() -> None:
    top = swarmkit_cli("--help")
    run = swarmkit_cli("run", "--help")
    assert top.returncode == 0 and run.returncode == 0
    for text in (top.stdout, run.stdout):
        assert "``" not in text and ":func:" not in text
    assert top.stdout.startswith("usage: jswarm ")
    for command, summary in [("run", "run a planner"), ("demo", "embedded local model"),
                             ("history", "most recent runs"), ("show", "show a run"),
                             ("resume", "continue a run"), ("export", "as a notebook")]:
        listed = top.stdout.partition("\ncommands:\n")[2].splitlines()
        line = next(line for line in listed if line.split()[:1] == [command])
        assert summary in line, line
    assert "jswarm run --help" in top.stdout


def test_exit_statuses_are_documented_in_the_help() -> None:
    from swarmkit.cli.exitcodes import EXIT_CODES

    assert EXIT_CODES == {0: "completed", 1: "the run failed",
                          2: "a bad option or value, a missing key, a refused resume, a "
                             "plan held by --confirm-over and not approved",
                          3: "partial: an answer, but some workers failed or were cancelled",
                          124: "timed out (--run-timeout)", 130: "interrupted"}
    for text in (swarmkit_cli("--help").stdout, swarmkit_cli("run", "--help").stdout):
        for code, what in EXIT_CODES.items():
            assert f"  {code:<4} {what}" in text


def test_version_names_the_command_and_the_distribution() -> None:
    import swarmkit

    done = swarmkit_cli("--version")
    assert done.returncode == 0
    assert done.stdout.strip() == (
        f"jswarm {swarmkit.__version__} (swarmkit, jupyter-swarmkit on PyPI)")


def test_a_mistyped_flag_or_command_says_which_was_meant() -> None:
    flag = swarmkit_cli("run", "task", "--model", "gpt-4.1-mini", "--wokers", "3")
    assert flag.returncode == 2
    assert flag.stderr.strip().splitlines() == [
        "jswarm run: unknown option --wokers (did you mean --workers?); see jswarm run --help"]
    command = swarmkit_cli("histroy")
    assert command.returncode == 2 and len(command.stderr.strip().splitlines()) == 1
    assert "(did you mean history?)" in command.stderr


def test_errors_name_the_flag_that_was_typed() -> None:
    for flags, says in [(["--workers", "many"], "--workers must be a whole number, got 'many'"),
                        (["--max-tokens", "0"], "--max-tokens must be at least 1, got 0"),
                        (["--budget", "-1"], "--budget must be a positive USD amount, got -1")]:
        done = swarmkit_cli("run", "task", "--model", "gpt-4.1-mini", *flags)
        assert done.returncode == 2
        assert done.stderr.strip().splitlines() == [f"jswarm: ConfigError: {says}"]


def test_the_progress_line_shows_the_real_spend_without_a_budget() -> None:
    from swarmkit.display.tablefmt import format_cost

    with FakeServer(plan_tasks=3) as server:
        done = swarmkit_cli("run", "Three lakes", *common(server), "--json", "--no-history")
    assert done.returncode == 0, done.stderr
    run = json.loads(done.stdout)
    cost = sum(Decimal(call["cost_usd"]) for call in run["calls"])
    assert cost > 0
    assert done.stderr.strip().splitlines()[-1] == f"workers 3/3 · spent {format_cost(cost)}"


def test_a_partial_run_exits_3_and_a_timed_out_one_124() -> None:
    with FakeServer(plan_tasks=3, faults=[FaultRule(Fault.status(400), step="worker-1")]
                    ) as server:
        partial = swarmkit_cli("run", "Three lakes", *common(server), "--no-history")
    assert partial.returncode == 3, partial.stderr
    assert "partial" in partial.stdout
    assert "workers 2/3 · 1 failed" in partial.stderr
    with FakeServer(plan_tasks=2, faults=[FaultRule(Fault.stall(60), step="worker-*")]
                    ) as server:
        late = swarmkit_cli("run", "Two lakes", *common(server), "--no-history",
                            "--run-timeout", "1")
    assert late.returncode == 124, late.stderr
    assert late.stderr.strip().splitlines()[-1] == "jswarm: timed out (--run-timeout)"
    assert "Traceback" not in late.stderr


def test_history_show_resume_and_export_are_commands(tmp_path: Path) -> None:
    history = ["--history-path", str(tmp_path / "h.db")]
    with FakeServer(plan_tasks=3) as server:
        first = swarmkit_cli("run", "Three lakes", *common(server), "--json", *history)
        run_id = json.loads(first.stdout)["run_id"]
        listed = swarmkit_cli("history", *history)
        shown = swarmkit_cli("show", run_id[:6], *history)
        server.clear()
        # A stored endpoint and key variable are used only when named (as in %swarm resume).
        resumed = swarmkit_cli("resume", run_id[:6], "--base-url", server.base_url,
                               "--api-key-env", KEY_ENV, *history)
        assert server.count() == 0  # every answer came from the history
        exported = swarmkit_cli("export", run_id, str(tmp_path / "lakes.ipynb"), *history)
        missing = swarmkit_cli("show", "fff000", *history)
    assert [done.returncode for done in (listed, shown, resumed, exported)] == [0, 0, 0, 0]
    assert run_id in listed.stdout and "Three lakes" in listed.stdout
    assert f"run {run_id} · completed" in shown.stdout
    assert "Final answer merging 3 results" in shown.stdout
    assert f"resumed: 4 from history, run {run_id}" in resumed.stdout
    assert (tmp_path / "lakes.ipynb").is_file() and (tmp_path / "lakes.swarm.json").is_file()
    assert missing.returncode == 1
    assert missing.stderr.strip().splitlines() == [
        f"jswarm: StoreError: no run 'fff000' in history {tmp_path / 'h.db'}; "
        "see jswarm history"]
    assert "%swarm" not in missing.stderr


# -- Ctrl-C from the first moment ------------------------------------------------------------


def started(*args: str, cwd: Path | None = None) -> subprocess.Popen[str]:
    env = child_env(PYTHONUNBUFFERED="1")
    return subprocess.Popen([sys.executable, "-m", "swarmkit", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=cwd)


def interrupted(process: subprocess.Popen[str]) -> tuple[int, str, str]:
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=60)
    return process.returncode, out, err


def test_ctrl_c_while_importing_the_tools_stops_with_one_line(tmp_path: Path) -> None:
    # Before any run exists: the tools module is still being imported.
    (tmp_path / "slow_tools.py").write_text(
        "import sys, time\nprint('importing', flush=True)\ntime.sleep(60)\n", encoding="utf-8")
    process = started("run", "task", "--model", "gpt-4.1-mini", "--tools", "slow_tools:T",
                      cwd=tmp_path)
    assert process.stdout is not None and process.stdout.readline() == "importing\n"
    code, _, err = interrupted(process)
    assert (code, err) == (130, "jswarm: interrupted\n")


def test_ctrl_c_while_the_planner_thinks_cancels_the_run_cleanly(tmp_path: Path) -> None:
    with FakeServer(faults=[FaultRule(Fault.stall(60), step="planner")]) as server:
        process = started("run", "task", *common(server), cwd=tmp_path)
        assert wait_until(lambda: server.count("planner") == 1)
        code, out, err = interrupted(process)
    assert code == 130, err
    assert "cancelled" in out and "Traceback" not in err
    assert err.strip().splitlines()[-1] == "jswarm: interrupted"


def test_ctrl_c_during_the_fan_out_keeps_the_finished_and_counts_the_cancelled_apart(
    tmp_path: Path,
) -> None:
    stall = FaultRule(Fault.stall(60), step="worker-[3-6]")
    with FakeServer(plan_tasks=6, faults=[stall]) as server:
        process = started("run", "Six lakes", *common(server), "--workers", "6",
                          "--concurrency", "6", cwd=tmp_path)
        assert wait_until(lambda: server.count("worker-*") == 6)
        code, out, err = interrupted(process)
    assert code == 130, err
    progress, said = err.strip().splitlines()[-2:]
    counted = re.fullmatch(r"workers (\d)/6 · (\d) cancelled · spent \$[0-9.]+", progress)
    assert counted is not None, progress
    completed, cancelled = int(counted.group(1)), int(counted.group(2))
    assert completed + cancelled == 6 and cancelled >= 4
    totals = out.splitlines()[0]  # the run's own count agrees with the progress line
    assert f"{completed} completed" in totals and f"{cancelled} cancelled (interrupt)" in totals
    assert re.fullmatch(r"jswarm: interrupted; jswarm resume [0-9a-f]{12} --base-url \S+ "
                        r"--api-key-env \S+ continues it", said)
    assert "interrupted: resume the run to finish the rest" in out
    assert "kernel" not in out + err


def test_ctrl_c_while_the_run_is_being_built_stops_with_one_line(tmp_path: Path) -> None:
    # The run's loop exists, its engine not yet: --resume reads the history in a worker
    # thread, held here behind another writer's lock (like the embedded model starting).
    db = tmp_path / "h.db"
    with FakeServer(plan_tasks=2) as server:
        first = swarmkit_cli("run", "Two lakes", *common(server), "--json",
                             "--history-path", str(db))
        run_id = json.loads(first.stdout)["run_id"]
        writer = sqlite3.connect(db, isolation_level=None)
        writer.execute("BEGIN IMMEDIATE")
        try:
            process = started("run", "Two lakes", *common(server), "--history-path", str(db),
                              "--resume", run_id, cwd=tmp_path)
            assert wait_until(lambda: opened(process.pid, db))
            code, out, err = interrupted(process)
        finally:
            writer.execute("ROLLBACK")
            writer.close()
        assert server.count() == 2 + 1 + 1  # the first run's calls only
    assert (code, out, err) == (130, "", "jswarm: interrupted\n")


def opened(pid: int, path: Path) -> bool:
    fds = Path(f"/proc/{pid}/fd")
    try:
        return any(os.readlink(fd) == str(path) for fd in fds.iterdir())
    except OSError:  # a descriptor closed while looking
        return False


@pytest.mark.local
@pytest.mark.slow
@pytest.mark.parametrize("moment", ["before its server", "while its server loads"])
def test_ctrl_c_while_the_embedded_model_starts_stops_the_demo(
    tmp_path: Path, moment: str
) -> None:
    process = started("demo", "--out", str(tmp_path / "demo.ipynb"), cwd=tmp_path)
    assert process.stderr is not None
    assert process.stderr.readline().startswith("starting the embedded model")
    held: list[int] = []
    try:
        if moment == "before its server":
            time.sleep(0.1)  # the moment of the Ctrl-C, not an assertion about time
        else:
            # The server answers about 0.5 s after it starts: stopped, it stays loading,
            # so the Ctrl-C lands while the command waits for it, whatever the machine.
            assert wait_until(lambda: bool(children(process.pid)))
            held = children(process.pid)
            os.kill(held[0], signal.SIGSTOP)
        code, out, err = interrupted(process)
    finally:
        for pid in held:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    assert (code, err) == (130, "jswarm: interrupted\n")
    assert out == "" and not (tmp_path / "demo.ipynb").exists()


def children(pid: int) -> list[int]:
    """The processes ``pid`` started (Linux's /proc)."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        with contextlib.suppress(OSError):
            found += [int(p) for p in (task / "children").read_text().split()]
    return found
