"""The call store from a notebook: the magic's cache, --record/--replay/--no-cache, and the
``%swarm history / show / rerun / diff`` subcommands, in a real IPython shell and kernels."""

from __future__ import annotations

import itertools
import json
import os
import socket
from functools import partial
from pathlib import Path
from typing import Any

import nbformat
import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output
from nbclient import NotebookClient

from swarmkit.api.result import Run
from swarmkit.display import RunDiff, RunListing
from swarmkit.magics import SwarmMagics
from swarmkit.testing import FakeRequest, FakeServer
from tests.support.fakekey import swarm_line

ROOT = Path(__file__).resolve().parents[2]
TASK = "Name three rivers"

line_for = partial(swarm_line, flags="--workers 3")



def cell(shell: InteractiveShell, line: str, task: str = TASK) -> tuple[Run, list[Any]]:
    with capture_output() as captured:
        shell.run_cell_magic("swarm", line, task)
    return shell.user_ns["_swarm"], captured.outputs


def closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def test_rerunning_a_cell_with_a_changed_reducer_prompt_calls_only_the_reducer(
    shell: InteractiveShell, magics: SwarmMagics, server: FakeServer
) -> None:
    cell(shell, line_for(server.base_url))
    assert server.count() == 5
    server.clear()

    second, outputs = cell(shell, line_for(server.base_url, "--reducer-prompt 'Be terse.'"))

    assert server.counts_by_step() == {"reducer": 1}
    assert [c.source for c in second.calls].count("cache") == 4
    assert "5 calls (4 cached)" in outputs[0].data["text/plain"]
    server.clear()
    cell(shell, line_for(server.base_url, "--no-cache"))
    assert server.count() == 5


def test_session_config_can_turn_the_cache_off(
    shell: InteractiveShell, magics: SwarmMagics, server: FakeServer
) -> None:
    cell(shell, line_for(server.base_url))
    shell.run_line_magic("swarm", "config cache=false")
    server.clear()
    cell(shell, line_for(server.base_url))
    assert server.count() == 5


def test_record_and_replay_cells_show_identical_output_with_the_server_gone(
    shell: InteractiveShell, magics: SwarmMagics, tmp_path: Path
) -> None:
    cassette = tmp_path / "rivers.swarm.json"
    with FakeServer(lifetime=60, latency=0.02) as server:
        recorded, recorded_outputs = cell(
            shell, line_for(server.base_url, f"--record {cassette}"))
    replayed, replayed_outputs = cell(
        shell, line_for(closed_port_url(), f"--replay {cassette}"))
    assert replayed.run_id == recorded.run_id
    assert len(replayed_outputs) == len(recorded_outputs) == 1
    assert replayed_outputs[0].data == recorded_outputs[0].data
    # --background is ignored in replay: the cell still ends with the one final display.
    background, background_outputs = cell(
        shell, line_for(closed_port_url(), f"--replay {cassette} --background"))
    assert background.run_id == recorded.run_id
    assert [o.data for o in background_outputs] == [recorded_outputs[0].data]

    with pytest.raises(UsageError, match="ReplayMiss: replay miss at planner") as caught:
        cell(shell, line_for(closed_port_url(), f"--replay {cassette}"), "Name three lakes")
    assert "\n" not in str(caught.value)
    (tmp_path / "junk.json").write_text("{garbled")
    with pytest.raises(UsageError, match=r"junk.json is not JSON \(line 1"):
        cell(shell, line_for(closed_port_url(), f"--replay {tmp_path / 'junk.json'}"))


def test_history_show_and_diff(
    shell: InteractiveShell, magics: SwarmMagics, server: FakeServer
) -> None:
    first, first_outputs = cell(shell, line_for(server.base_url))
    second, _ = cell(shell, line_for(server.base_url, "--reducer-prompt Other"))

    listing = shell.run_line_magic("swarm", "history 5")
    assert isinstance(listing, RunListing)
    assert [r.run_id for r in listing.runs] == [second.run_id, first.run_id]
    assert second.run_id in listing.text() and "<table>" in listing._repr_html_()

    with capture_output() as captured:
        shell.run_line_magic("swarm", f"show {first.run_id[:6]}")
    assert captured.outputs[0].data == first_outputs[0].data

    diff = shell.run_line_magic("swarm", f"diff {first.run_id} {second.run_id}")
    assert isinstance(diff, RunDiff)
    assert diff.text().startswith(f"run {first.run_id} (A) vs run {second.run_id} (B)")

    for line, message in [
        ("history many", "expected how many runs"),
        ("show", "expected one run id"),
        ("show nosuchrun", "no run 'nosuchrun' in history"),
        ("diff one", "expected two run ids"),
        ("rerun", "the following arguments are required: run, --worker"),
        (f"rerun {first.run_id} --worker 7", "has workers 1 to 3"),
    ]:
        with pytest.raises(UsageError, match=message):
            shell.run_line_magic("swarm", line)


def test_rerun_a_worker_bills_only_that_worker_and_the_reducer(
    shell: InteractiveShell, magics: SwarmMagics, server: FakeServer
) -> None:
    drafts = itertools.count(1)

    def handler(request: FakeRequest) -> str | None:
        return f"draft {next(drafts)}" if request.step == "worker-2" else None

    server.handler = handler
    first, _ = cell(shell, line_for(server.base_url))
    server.clear()

    with capture_output() as captured:
        shell.run_line_magic("swarm", f"rerun {first.run_id[:8]} --worker 2 --out again")

    assert server.counts_by_step() == {"worker-2": 1, "reducer": 1}
    again = shell.user_ns["again"]
    assert shell.user_ns["_swarm"] is again
    assert again.worker(2).output == "draft 2"
    assert {c.step for c in again.calls if c.source == "live"} == {"worker-2", "reducer"}
    assert again.cost_usd is not None and again.cost_usd < first.cost_usd  # type: ignore[operator]
    assert captured.outputs[0].data == again.tables().mime_bundle()[0]


@pytest.mark.kernel
def test_history_and_cache_survive_a_kernel_restart(tmp_path: Path) -> None:
    env = dict(os.environ)
    env.pop("SWARMKIT_HISTORY")  # the default: .swarmkit/history.db beside the notebook
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))

    def execute(*sources: str) -> list[Any]:
        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_code_cell(s) for s in ("%load_ext swarmkit", *sources)]
        NotebookClient(nb, timeout=60, kernel_name="python3",
                       resources={"metadata": {"path": str(tmp_path)}}).execute(env=env)
        return [c.outputs for c in nb.cells[1:]]

    with FakeServer(lifetime=120) as server:
        line = line_for(server.base_url, "--quiet --out r")
        first = execute(f"%%swarm {line}\n{TASK}", "print(r.run_id)")
        run_id = first[1][0]["text"].strip()
        assert server.count() == 5 and (tmp_path / ".swarmkit" / "history.db").exists()
        server.clear()

        second = execute(
            "%swarm history 3",
            "from swarmkit.store import History\n"
            f"print(History().load_run({run_id!r}).answer)",
            f"%%swarm {line}\n{TASK}",
            "import json; print(json.dumps([c.source for c in r.calls]))",
        )
    assert run_id in second[0][0]["data"]["text/plain"]
    assert second[1][0]["text"].strip() == "Final answer merging 3 results"
    assert server.count() == 0
    assert json.loads(second[3][0]["text"]) == ["cache"] * 5
