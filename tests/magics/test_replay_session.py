"""A replay asks what its recording asked, whatever the session's defaults: an exported
notebook's cells replay in a kernel whose ``%swarm config`` (or ``SWARMKIT_*``
environment) holds other request-shaping options, while an option given on the replay
cell itself (or as a keyword) still changes the requests and misses."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import nbformat
import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

import swarmkit
from swarmkit.errors import ReplayMiss
from swarmkit.magics import SwarmMagics, swarm_config
from swarmkit.testing import FakeServer
from tests.support.fakekey import run_options, swarm_line

pytestmark = pytest.mark.usefixtures("fake_key")

TASK = "Name three rivers"
# Every kind of request-shaping default a session may hold: sampling, token limits,
# the worker count, prompts (one with braces, set the way a notebook must), no reducer.
SESSION = ("config temperature=0.3 max_tokens=512 workers=2 seed=11 "
           "reducer_prompt='Merge tersely.' reduce=false")


def closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def run_cells(shell: InteractiveShell, notebook: Path) -> list[Any]:
    """Run the notebook's code cells in ``shell``; the outputs of its last cell."""
    cells = [c.source for c in nbformat.read(notebook, as_version=4).cells
             if c.cell_type == "code"]
    for source in cells[:-1]:
        assert shell.run_cell(source).success, source
    with capture_output() as captured:
        result = shell.run_cell(cells[-1])
    if result.error_in_exec is not None:
        raise result.error_in_exec
    return captured.outputs


def test_an_exported_replay_cell_replays_whatever_the_session_config_holds(
    shell: InteractiveShell, magics: SwarmMagics, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with FakeServer(plan_tasks=3) as server, capture_output():
        shell.run_cell_magic("swarm", swarm_line(server, "--workers 3"), TASK)
    recorded = shell.user_ns["_swarm"]
    notebook = recorded.export(tmp_path / "rivers.ipynb").notebook
    monkeypatch.chdir(tmp_path)  # where the notebook's kernel would run
    shell.run_line_magic("swarm", SESSION)

    swarm_config(system_prompt="Answer as {a pirate}.")
    outputs = run_cells(shell, Path(notebook))
    replayed = shell.user_ns["_swarm"]
    assert replayed.run_id == recorded.run_id and replayed.answer == recorded.answer
    assert [o.data["text/plain"] for o in outputs] == [recorded.tables().text()]
    # The session keeps its own defaults for its next live cells.
    assert magics.session_options["temperature"] == "0.3"


def test_an_option_on_the_replay_cell_itself_still_misses(
    shell: InteractiveShell, magics: SwarmMagics, tmp_path: Path,
) -> None:
    cassette = tmp_path / "rivers.swarm.json"
    with FakeServer(plan_tasks=3) as server, capture_output():
        shell.run_cell_magic("swarm", swarm_line(server, f"--workers 3 --record {cassette}"),
                             TASK)
    shell.run_line_magic("swarm", "config temperature=0.3")
    with pytest.raises(UsageError, match=r"ReplayMiss: replay miss at planner.*temperature"):
        shell.run_cell_magic("swarm", swarm_line(
            closed_port_url(), f"--workers 3 --replay {cassette} --temperature 0.9"), TASK)


def test_run_sync_replays_the_recording_whatever_the_swarmkit_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    cassette = tmp_path / "rivers.swarm.json"
    with FakeServer(plan_tasks=3) as server:
        recorded = swarmkit.run_sync(TASK, **run_options(server, workers=3,
                                                         record=str(cassette)))
    monkeypatch.setenv("SWARMKIT_WORKERS", "2")
    monkeypatch.setenv("SWARMKIT_MODEL", "another-model")
    replayed = swarmkit.run_sync(TASK, replay=str(cassette), history=False)
    assert replayed.run_id == recorded.run_id and replayed.answer == recorded.answer
    with pytest.raises(ReplayMiss, match="replay miss at planner"):
        swarmkit.run_sync(TASK, replay=str(cassette), history=False, workers=2)
