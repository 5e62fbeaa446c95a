"""``SWARMKIT_LIVE``: a ``%%swarm --replay FILE`` cell runs live instead, in a real IPython
shell against the loopback FakeServer, whose request log counts what went live."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

from swarmkit.api.result import Run
from swarmkit.magics import SwarmMagics
from swarmkit.store import Cassette
from swarmkit.testing import FakeReply, FakeRequest, FakeServer
from tests.support.fakekey import KEY_ENV, swarm_line
from tests.support.notebooks import offline_env

ROOT = Path(__file__).resolve().parents[2]
TASK = "Name three rivers"
NAMES = ("_swarm", "rivers", "stock")


@pytest.fixture(autouse=True)
def _clean(shell: InteractiveShell, monkeypatch: pytest.MonkeyPatch,
           fake_key: str) -> Iterator[None]:
    # setenv first (fake_key's too), so the test's own %env changes are undone after it.
    monkeypatch.setenv("SWARMKIT_LIVE", "0")
    yield
    for name in NAMES:
        shell.user_ns.pop(name, None)


line_for = partial(swarm_line, flags="--workers 2 --no-cache --quiet")


def cell(shell: InteractiveShell, line: str, task: str = TASK) -> tuple[Run, str]:
    """The cell's Run and what it printed before its tables."""
    with capture_output() as captured:
        shell.run_cell_magic("swarm", line, task)
    run = shell.user_ns["_swarm"]
    assert isinstance(run, Run)
    return run, captured.stdout


def recorded(shell: InteractiveShell, server: FakeServer, path: Path, extra: str = "") -> Run:
    run, _ = cell(shell, line_for(server, f"--record {path} {extra}"))
    return run


def test_swarmkit_live_runs_a_replay_cell_live_against_the_server(
    shell: InteractiveShell, magics: SwarmMagics, server: FakeServer, tmp_path: Path
) -> None:
    cassette = tmp_path / "rivers.swarm.json"
    first = recorded(shell, server, cassette)
    made = len(server.requests)
    assert made == 4  # planner, two workers, reducer
    replayed, said = cell(shell, line_for(server, f"--replay {cassette}"))
    assert replayed.run_id == first.run_id and len(server.requests) == made
    assert "SWARMKIT_LIVE" not in said

    shell.run_line_magic("env", "SWARMKIT_LIVE=1")  # as a user flips it in the notebook
    live, said = cell(shell, line_for(server, f"--replay {cassette}"))
    assert said.strip() == ("SWARMKIT_LIVE is set: running live instead of replaying "
                            "rivers.swarm.json")
    assert len(server.requests) == 2 * made
    assert live.run_id != first.run_id and live.status == "completed"
    assert all(call.source == "live" for call in live.calls)

    shell.run_line_magic("env", "SWARMKIT_LIVE=0")  # and back: the cell replays again
    again, said = cell(shell, line_for(server, f"--replay {cassette}"))
    assert again.run_id == first.run_id and len(server.requests) == 2 * made
    assert said == ""


@pytest.mark.parametrize(("live", "models", "needs"), [
    ("1", "", "gpt-4.1-mini needs"),
    # The models that need one key are named together.
    ("on", "--planner-model gpt-4.1 --reducer-model gpt-4.1", "gpt-4.1 and gpt-4.1-mini need"),
    # Only the planner is hosted here, so only its model is named; the embedded
    # workers and reducer could run (the replay never starts them).
    ("yes", "--worker-model local --reducer-model local", "gpt-4.1-mini needs"),
])
def test_without_the_key_a_replay_cell_keeps_replaying_and_names_the_models_that_need_it(
    shell: InteractiveShell, magics: SwarmMagics, server: FakeServer, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch, live: str, models: str, needs: str,
) -> None:
    cassette = tmp_path / "rivers.swarm.json"
    first = recorded(shell, server, cassette, models)
    made = len(server.requests)
    monkeypatch.delenv(KEY_ENV)
    monkeypatch.setenv("SWARMKIT_LIVE", live)
    replayed, said = cell(shell, line_for(server, f"--replay {cassette} {models}"))
    assert said.strip() == ("SWARMKIT_LIVE is set, but replaying rivers.swarm.json: "
                            f"{needs} {KEY_ENV}")
    assert len(server.requests) == made  # not one request went out
    assert replayed.run_id == first.run_id


def test_live_instead_of_replay_takes_the_given_tasks_from_the_cassette(
    shell: InteractiveShell, magics: SwarmMagics, server: FakeServer, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cassette = tmp_path / "tasks.swarm.json"
    shell.user_ns["rivers"] = ["the Amazon", "the Nile"]
    recorded(shell, server, cassette, "--tasks rivers --no-reduce")
    made = len(server.requests)
    monkeypatch.setenv("SWARMKIT_LIVE", "1")
    live, _ = cell(shell, line_for(server, f"--replay {cassette}"))  # no --tasks here
    sent = server.requests[made:]
    assert [r.step for r in sent].count("planner") == 0
    assert sorted(str(r.body["messages"][-1]["content"]).rsplit(": ", 1)[-1]
                  for r in sent) == ["the Amazon", "the Nile"]
    assert live.plan == ["the Amazon", "the Nile"] and live.answer is None


def stock_model(request: FakeRequest) -> FakeReply:
    """One task; the worker calls ``stock`` once when offered, then reports its result."""
    if request.role == "planner":
        return FakeReply(content=json.dumps({"tasks": ["count the bolts"]}))
    if request.role == "reducer":
        return FakeReply(content="merged")
    results = [str(m["content"]) for m in request.messages if m.get("role") == "tool"]
    if results or not request.tools:
        return FakeReply(content=" | ".join(results) or "no tools")
    return FakeReply(tool_calls=[("stock", {"item": "bolts"})])


def test_a_recording_whose_workers_called_tools_goes_live_only_with_them(
    shell: InteractiveShell, magics: SwarmMagics, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    shell.run_cell("import swarmkit\n"
                   "@swarmkit.tool\n"
                   "def stock(item: str) -> int:\n"
                   "    '''How many are in stock.'''\n"
                   "    return 40\n")
    cassette = tmp_path / "stock.swarm.json"
    with FakeServer(stock_model, lifetime=120) as server:
        first = recorded(shell, server, cassette, "--tools stock")
        assert [t.name for t in Cassette.load(cassette).tools] == ["stock"]
        made = len(server.requests)
        monkeypatch.setenv("SWARMKIT_LIVE", "1")
        replayed, said = cell(shell, line_for(server, f"--replay {cassette}"))
        assert said.strip() == ("SWARMKIT_LIVE is set, but replaying stock.swarm.json: its "
                                "workers called stock; give them again (--tools, %swarm "
                                "mcp add)")
        assert replayed.run_id == first.run_id and len(server.requests) == made
        live, said = cell(shell, line_for(server, f"--replay {cassette} --tools stock"))
        assert said.startswith("SWARMKIT_LIVE is set: running live")
        assert len(server.requests) > made and live.workers[0].output == "40"


def test_a_value_that_is_not_a_switch_is_a_one_line_usage_error(
    shell: InteractiveShell, magics: SwarmMagics, server: FakeServer, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cassette = tmp_path / "rivers.swarm.json"
    recorded(shell, server, cassette)
    made = len(server.requests)
    monkeypatch.setenv("SWARMKIT_LIVE", "maybe")
    with pytest.raises(UsageError, match=r"^%%swarm: SWARMKIT_LIVE='maybe' is not a switch; "
                                         r"set it to 1 .* or to 0 to replay them$"):
        shell.run_cell_magic("swarm", line_for(server, f"--replay {cassette}"), TASK)
    assert len(server.requests) == made


def test_swarmkit_live_leaves_a_cell_without_replay_alone(
    shell: InteractiveShell, magics: SwarmMagics, server: FakeServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SWARMKIT_LIVE", "1")
    run, said = cell(shell, line_for(server))
    assert said == "" and run.status == "completed" and len(server.requests) == 4


def test_notebook_checks_never_see_swarmkit_live() -> None:
    # notebooks/conftest.py and record.py start nbval's and export's kernels with this.
    env = offline_env({"SWARMKIT_LIVE": "1", "PATH": "/bin"})
    assert "SWARMKIT_LIVE" not in env and env["PATH"] == "/bin"


@pytest.mark.slow
@pytest.mark.kernel
def test_nbval_over_a_tutorial_replays_even_when_its_shell_set_swarmkit_live() -> None:
    # notebooks/conftest.py starts the kernel without it: a live quickstart would need
    # the embedded model and would not reproduce the stored outputs.
    env = {**os.environ, "SWARMKIT_LIVE": "1", "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--nbval", "notebooks/01-quickstart.ipynb",
         "-p", "no:cacheprovider", "-q", "-W", "error"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert " passed" in done.stdout and "failed" not in done.stdout


def test_swarm_export_replays_offline_even_with_swarmkit_live_set(
    shell: InteractiveShell, magics: SwarmMagics, server: FakeServer, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    first, _ = cell(shell, line_for(server))
    made = len(server.requests)
    monkeypatch.setenv("SWARMKIT_LIVE", "1")
    result = shell.run_line_magic("swarm", f"export {tmp_path / 'rivers.ipynb'}")
    # The export's kernel replays: live there (no key, a closed endpoint) it would fail.
    assert len(server.requests) == made
    assert Cassette.load(result.cassettes[0]).run_id == first.run_id


def test_the_magics_help_names_the_switch(shell: InteractiveShell) -> None:
    with capture_output() as captured:
        shell.run_cell_magic("swarm", "--help", "a task")
    assert "%env SWARMKIT_LIVE=1 makes --replay cells run live instead" in captured.stdout
