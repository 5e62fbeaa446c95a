"""Export: a run becomes a notebook + cassette that replays offline and passes nbval.

Runs are real swarms against the loopback FakeServer; notebooks are executed by real
kernels (nbclient at export, ``pytest --nbval`` in a subprocess to validate).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

import swarmkit
from swarmkit.api.result import Run
from swarmkit.cli.command import DEMO_TASK
from swarmkit.errors import ExportError
from swarmkit.export.cellsource import replay_options, swarm_cells, swarm_line
from swarmkit.export.exporter import (
    ExportResult,
    ReplayNotebook,
    export_run,
    find_recording,
)
from swarmkit.magics import SwarmMagics, swarm_magics
from swarmkit.store import Cassette
from swarmkit.testing import FakeReply, FakeRequest, FakeServer, swarm_shell
from swarmkit.tools import tool
from tests.support.notebooks import CLOSED_BASE_URL, offline_env, run_nbval

pytestmark = pytest.mark.kernel

SECRET = "sk-export-test-0123456789abcdef"


@pytest.fixture(scope="module")
def server() -> Iterator[FakeServer]:
    with FakeServer(plan_tasks=3, lifetime=300) as fake:
        yield fake


def record(server: FakeServer, task: str = "Compare three databases", **options: Any) -> Run:
    options = {"model": "fake-model", "workers": 3, "history": False, **options}
    return swarmkit.run_sync(task, base_url=server.base_url, **options)


def code_cells(path: Path) -> list[Any]:
    return [c for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]


def edit_response(cassette: Path, step: str, content: str) -> Path:
    """Change what one recorded call answered, as a hand edit of the file would."""
    data = json.loads(cassette.read_text())
    call = next(call for call in data["calls"] if call["step"] == step)
    call["response"]["content"] = content
    cassette.write_text(json.dumps(data, indent=2))
    return cassette


def swarm_output(path: Path) -> dict[str, Any]:
    cell = next(c for c in code_cells(path) if c.source.startswith("%%swarm"))
    assert len(cell.outputs) == 1
    return dict(cell.outputs[0])


# -- writing -----------------------------------------------------------------------------


def test_export_writes_the_notebook_its_cassette_and_the_replayed_tables(
    server: FakeServer, tmp_path: Path
) -> None:
    run = record(server, reducer_max_tokens=512, temperature=0.2, seed=7)
    result = run.export(tmp_path / "compare.ipynb")
    assert isinstance(result, ExportResult)
    assert result.notebook == tmp_path / "compare.ipynb"
    assert result.cassettes == (tmp_path / "compare.swarm.json",)
    notebook = nbformat.read(result.notebook, as_version=4)
    nbformat.validate(notebook)
    header = notebook.cells[0]
    assert header.cell_type == "markdown"
    for fact in (run.task, run.run_id, "fake-model", "--replay compare.swarm.json",
                 "OPENAI_API_KEY", f"{run.usage.prompt_tokens:,} in"):
        assert fact in header.source
    sources = [c.source for c in code_cells(result.notebook)]
    assert sources == [
        "%load_ext swarmkit",
        "options = %swarm config reducer_max_tokens=512",
        "%%swarm --replay compare.swarm.json --model fake-model --workers 3 "
        f"--temperature 0.2 --seed 7\n{run.task}",
    ]
    output = swarm_output(result.notebook)
    assert output["output_type"] == "display_data"
    assert output["data"]["text/plain"] == run.tables().text()
    assert output["data"]["text/html"] == run.tables().html()
    # Stable files: no timing metadata, no widget state, no machine-specific kernel info.
    assert all("execution" not in c.metadata for c in notebook.cells)
    assert "widgets" not in notebook.metadata
    assert notebook.metadata["language_info"] == {"name": "python"}
    # The cassette beside it is the run's recording, relative to the notebook.
    cassette = Cassette.load(result.cassettes[0])
    assert cassette.run_id == run.run_id
    assert len(cassette.calls) == len(run.calls)
    assert "wrote" in repr(result) and "pytest --nbval" in repr(result)


def test_export_of_the_same_run_writes_the_same_files(server: FakeServer, tmp_path: Path) -> None:
    run = record(server)
    first = run.export(tmp_path / "a" / "run.ipynb")
    second = run.export(tmp_path / "b" / "run.ipynb")
    assert first.notebook.read_bytes() == second.notebook.read_bytes()
    assert first.cassettes[0].read_bytes() == second.cassettes[0].read_bytes()


def test_exported_notebook_passes_nbval_offline_with_no_key(
    server: FakeServer, tmp_path: Path
) -> None:
    run = record(server, task="List {n} risks of a {{big}} migration")
    result = run.export(tmp_path / "risks.ipynb")
    env = offline_env(pythonpath=[Path(swarmkit.__file__).parent.parent])
    assert env["OPENAI_BASE_URL"] == CLOSED_BASE_URL and "OPENAI_API_KEY" not in env
    checked = run_nbval(result.notebook.name, cwd=tmp_path, env=env)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "2 passed" in checked.stdout
    # The braces were already interpolated when the run happened: the replay sends them as is.
    assert "--no-interpolate" in code_cells(result.notebook)[-1].source


def test_nbval_fails_when_a_recorded_response_is_edited(
    server: FakeServer, tmp_path: Path
) -> None:
    result = record(server).export(tmp_path / "edited.ipynb")
    edit_response(result.cassettes[0], "reducer", "An answer nobody recorded")
    checked = run_nbval(result.notebook.name, cwd=tmp_path)
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert "1 failed" in checked.stdout
    assert "Cell outputs differ" in checked.stdout
    assert "An answer nobody recorded" in checked.stdout


def test_nbval_fails_when_a_worker_response_no_longer_leads_to_the_recorded_reducer(
    server: FakeServer, tmp_path: Path
) -> None:
    run = record(server)
    result = run.export(tmp_path / "worker.ipynb")
    path = edit_response(result.cassettes[0], "worker-2", "something else")
    checked = run_nbval(result.notebook.name, cwd=tmp_path)
    assert checked.returncode == 1, checked.stdout + checked.stderr
    assert "1 failed" in checked.stdout and "Cell outputs differ" in checked.stdout
    # Why: the reducer's request now holds the edited text, which was never recorded.
    with pytest.raises(ExportError, match="ReplayMiss: replay miss at reducer"):
        export_run(run, tmp_path / "again" / "worker.ipynb", cassette=path)


# -- refusing --------------------------------------------------------------------------


def test_export_refuses_a_run_whose_cassette_would_hold_the_key(
    server: FakeServer, tmp_path: Path
) -> None:
    env = {**os.environ, "OPENAI_API_KEY": SECRET}
    run = record(server, task=f"Summarise why {SECRET} must never be shared", env=env)
    with pytest.raises(ExportError) as caught:
        export_run(run, tmp_path / "leak.ipynb", env=env)
    message = str(caught.value)
    assert "$OPENAI_API_KEY" in message and SECRET not in message
    assert "\n" not in message
    assert list(tmp_path.iterdir()) == []


def test_export_scans_the_key_variables_the_run_named(server: FakeServer, tmp_path: Path) -> None:
    env = {**os.environ, "MY_GATEWAY_KEY": SECRET}
    run = record(server, task=f"echo {SECRET}", api_key_env="MY_GATEWAY_KEY", env=env)
    with pytest.raises(ExportError, match=r"\$MY_GATEWAY_KEY"):
        export_run(run, tmp_path / "leak.ipynb", env=env)
    assert not (tmp_path / "leak.swarm.json").exists()


def test_a_run_with_no_recording_cannot_be_exported(tmp_path: Path) -> None:
    run = Run("0123456789ab", "never ran", status="completed")
    with pytest.raises(ExportError, match="no recording of run 0123456789ab") as caught:
        export_run(run, tmp_path / "none.ipynb", history_path=tmp_path / "missing.db")
    assert "record=" in str(caught.value)
    assert not (tmp_path / "missing.db").exists()  # looking never creates a database


def test_a_cassette_of_another_run_is_refused(server: FakeServer, tmp_path: Path) -> None:
    first, second = record(server), record(server)
    other = find_recording(second)
    with pytest.raises(ExportError, match=f"records run {second.run_id}, not run {first.run_id}"):
        export_run(first, tmp_path / "x.ipynb", cassette=other)


def test_export_refuses_when_the_replay_does_not_reproduce_the_run(
    server: FakeServer, tmp_path: Path
) -> None:
    run = record(server)
    run.answer = "a different answer than the recording gave"
    with pytest.raises(ExportError, match="does not reproduce its tables"):
        run.export(tmp_path / "differs.ipynb")
    assert not (tmp_path / "differs.ipynb").exists()


def test_export_needs_an_ipynb_path(server: FakeServer, tmp_path: Path) -> None:
    with pytest.raises(ExportError, match=r"\.ipynb"):
        record(server).export(tmp_path / "run.json")


# -- where the recording comes from ---------------------------------------------------------


def test_recording_comes_from_a_file_or_from_the_history(
    server: FakeServer, tmp_path: Path
) -> None:
    cassette = tmp_path / "kept.swarm.json"
    run = record(server, record=str(cassette))
    assert find_recording(run, cassette).run_id == run.run_id
    history = tmp_path / "history.db"
    past = record(server, history=True, history_path=str(history))
    from swarmkit.store import History

    with History(history) as db:
        loaded = db.load_run(past.run_id)
    # A fresh process would only have the history: the export finds the cassette there.
    from swarmkit.export.exporter import _from_history

    found = _from_history(loaded, None)
    assert found is not None and found.run_id == past.run_id
    result = export_run(loaded, tmp_path / "past.ipynb", cassette=found)
    assert swarm_output(result.notebook)["data"]["text/plain"] == past.tables().text()
    # The recording machine's paths stay behind.
    assert str(tmp_path) not in result.cassettes[0].read_text()
    assert str(tmp_path) not in result.notebook.read_text()


def test_a_replayed_run_can_be_exported_again(server: FakeServer, tmp_path: Path) -> None:
    first = record(server).export(tmp_path / "one" / "run.ipynb")
    replayed = swarmkit.run_sync("Compare three databases", model="fake-model", workers=3,
                                 replay=str(first.cassettes[0]))
    again = replayed.export(tmp_path / "two" / "run.ipynb")
    assert again.notebook.read_text() == first.notebook.read_text()


# -- tools -------------------------------------------------------------------------------


def test_a_run_with_tools_replays_without_the_tools_and_shows_their_table(
    tmp_path: Path,
) -> None:
    executed: list[str] = []

    @tool
    def stock(item: str) -> int:
        """How many of an item are in stock.

        Args:
            item: The item's name.
        """
        executed.append(item)
        return {"bolts": 40}.get(item, 0)

    def handler(request: FakeRequest) -> FakeReply | None:
        if request.role == "worker" and not any(m.get("role") == "tool"
                                                for m in request.messages):
            return FakeReply(tool_calls=[("stock", {"item": "bolts"})])
        return None

    with FakeServer(handler, plan_tasks=2) as fake:
        run = swarmkit.run_sync("Check stock", model="fake-model", base_url=fake.base_url,
                                workers=2, history=False, tools=[stock])
    assert len(run.tool_calls) == 2 and executed == ["bolts", "bolts"]
    result = run.export(tmp_path / "tools.ipynb")
    cells = code_cells(result.notebook)
    assert "--tools" not in cells[-2].source  # the replay needs no tool functions
    assert cells[-1].source == "print(_swarm.tables().tool_table())"
    assert cells[-1].outputs[0]["text"] == run.tables().tool_table() + "\n"
    assert executed == ["bolts", "bolts"]  # the replays ran no tool
    checked = run_nbval(result.notebook.name, cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr


# -- several swarms in one notebook ---------------------------------------------------------


def test_a_notebook_of_two_swarms_resets_options_between_them(
    server: FakeServer, tmp_path: Path
) -> None:
    tuned = record(server, reducer_max_tokens=300)
    plain = record(server, task="Name two queues")
    book = ReplayNotebook()
    book.markdown("# Two swarms")
    book.swarm(tuned)
    book.markdown("And a plain one:")
    book.swarm(plain)
    result = book.write(tmp_path / "two.ipynb")
    assert [p.name for p in result.cassettes] == ["two.swarm.json", "two.2.swarm.json"]
    sources = [c.source for c in code_cells(result.notebook)]
    assert sources[1] == "options = %swarm config reducer_max_tokens=300"
    assert sources[3] == "options = %swarm config reset"
    assert sources[4].startswith("%%swarm --replay two.2.swarm.json ")
    checked = run_nbval(result.notebook.name, cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_replay_options_put_what_has_no_flag_in_a_config_cell() -> None:
    config = swarmkit.SwarmConfig().with_options(
        planner_model="moonshot/kimi-k2.5", worker_model="deepseek/deepseek-v3.2",
        reducer_model="claude-sonnet-4.5", base_url="https://gateway.example/v1",
        system_prompt="Be brief.\nUse lists.", budget="0.25", workers=5,
    ).summary()
    options = replay_options(config)
    assert options["planner_model"] == "moonshot/kimi-k2.5"
    assert options["base_url"] == "https://gateway.example/v1"  # a real endpoint is kept
    assert options["budget"] == "0.25" and options["workers"] == "5"
    run = Run("r1", "task", config=config)
    cells, session = swarm_cells(run, config, "r.swarm.json", {})
    assert session == {"system_prompt": "Be brief.\nUse lists."}
    # A line break cannot go on a magic line: a plain Python call carries it.
    assert cells[0] == ("from swarmkit.magics import swarm_config\n"
                        "options = swarm_config(system_prompt='Be brief.\\nUse lists.')")
    assert cells[1].startswith(
        "%%swarm --replay r.swarm.json --planner-model moonshot/kimi-k2.5 "
        "--worker-model deepseek/deepseek-v3.2 --reducer-model claude-sonnet-4.5 "
        "--base-url https://gateway.example/v1 --workers 5 --budget 0.25"
    )
    local = swarmkit.SwarmConfig().with_options(model="local",
                                                base_url="http://127.0.0.1:40111/v1")
    assert "base_url" not in replay_options(local.summary())  # the embedded server's port


# -- %swarm export -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def shell() -> InteractiveShell:
    return swarm_shell()


def test_swarm_export_writes_the_last_run_or_a_named_one(
    shell: InteractiveShell, server: FakeServer, tmp_path: Path
) -> None:
    magics = swarm_magics(shell)
    assert isinstance(magics, SwarmMagics)
    magics.last_run = None
    with pytest.raises(UsageError, match="no swarm has run in this session yet"):
        shell.run_line_magic("swarm", f"export {tmp_path / 'none.ipynb'}")
    shell.run_cell_magic("swarm", f"--base-url {server.base_url} --model fake-model "
                                  "--workers 2 --quiet --out first", "Name two queues")
    first = shell.user_ns["first"]
    result = shell.run_line_magic("swarm", f"export {tmp_path / 'last.ipynb'}")
    assert isinstance(result, ExportResult)
    assert swarm_output(result.notebook)["data"]["text/plain"] == first.tables().text()
    shell.run_cell_magic("swarm", f"--base-url {server.base_url} --model fake-model "
                                  "--workers 2 --quiet", "Name two stacks")
    named = shell.run_line_magic("swarm", f"export first {tmp_path / 'named.ipynb'}")
    assert Cassette.load(named.cassettes[0]).run_id == first.run_id
    with pytest.raises(UsageError, match="expected %swarm export"):
        shell.run_line_magic("swarm", "export first")


# -- swarmkit demo --------------------------------------------------------------------------


@pytest.mark.local
@pytest.mark.slow
def test_swarmkit_demo_runs_the_embedded_model_and_writes_a_notebook_that_replays(
    tmp_path: Path,
) -> None:
    import subprocess
    import sys

    pytest.importorskip("xllamacpp", reason="needs the local extra")
    root = Path(swarmkit.__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": str(root)}
    env.pop("SWARMKIT_HISTORY", None)  # the demo keeps its history beside its notebook
    demo = subprocess.run([sys.executable, "-m", "swarmkit", "demo", "--workers", "3"],
                          cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=600, check=False)
    assert demo.returncode == 0, demo.stdout[-2000:] + demo.stderr[-2000:]
    assert "wrote demo.ipynb and demo.swarm.json" in demo.stdout
    assert demo.stdout.startswith(f"task: {DEMO_TASK}\n")  # what the tables answer
    notebook = nbformat.read(tmp_path / "demo.ipynb", as_version=4)
    assert "embedded local model" in notebook.cells[0].source
    shown = swarm_output(tmp_path / "demo.ipynb")["data"]["text/plain"]
    assert shown in demo.stdout  # the notebook shows the tables the terminal printed
    checked = run_nbval("demo.ipynb", cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr


@pytest.mark.parametrize("text", ["plain", "{x}", "{{x}}", "a }} b", '{"a": {"b": 1}}', "{ x }",
                                  "{{", "}}{{", "{x", "{_a1}", "{1a}", "{{}}"])
def test_the_replay_line_knows_when_interpolation_would_change_the_task(text: str) -> None:
    from swarmkit.config.template import interpolate, interpolation_changes

    try:
        changes = interpolate(text, {}) != text
    except UsageError:
        changes = True
    assert interpolation_changes(text) == changes
    line, _ = swarm_line({"model": "m"}, "c.json", text)
    assert line.endswith("--no-interpolate") == changes
