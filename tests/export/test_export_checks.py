"""Export of a scored run: the notebook defines the run's checks and its ``%%swarm
--replay`` line passes them with ``--check``, so the replay scores again (the judge's
calls come from the cassette); a check the notebook cannot define is left out, and the
header says which and why. Every notebook passes ``pytest --nbval`` with no server."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from IPython.core.interactiveshell import InteractiveShell

import swarmkit
from swarmkit import Check
from swarmkit.api.result import Run
from swarmkit.testing import FakeServer, swarm_shell
from tests.support.notebooks import offline_env, run_nbval

pytestmark = pytest.mark.kernel

WORD = re.compile(r"merg\w*")


@pytest.fixture(scope="module")
def server() -> Iterator[FakeServer]:
    with FakeServer(plan_tasks=2, lifetime=300) as fake:
        yield fake


def cites(answer: str) -> tuple[float, str]:
    """A user's check that reads a module constant (a compiled pattern has no literal)."""
    return (1.0 if WORD.search(answer) else 0.0), "looked for merging"


def counts_words(answer: str) -> tuple[bool, str]:
    found = re.findall(r"\w+", answer)
    return len(found) > 2, f"{len(found)} words"


def record(server: FakeServer, **options: Any) -> Run:
    return swarmkit.run_sync("Compare two queues", model="fake-model", workers=2,
                             base_url=server.base_url, history=False, **options)


def cells(path: Path) -> list[Any]:
    return [c for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]


def nbval_passes(notebook: Path) -> None:
    env = offline_env(pythonpath=[Path(swarmkit.__file__).parent.parent])
    checked = run_nbval(notebook.name, cwd=notebook.parent, env=env)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_a_scored_run_exports_its_checks_and_the_replay_scores_again(
    server: FakeServer, tmp_path: Path
) -> None:
    run = record(server, checks=[Check.contains("merging"), counts_words,
                                 Check(counts_words, name="wordy", on="answer")],
                 judge="fake-model")
    result = run.export(tmp_path / "scored.ipynb")
    code = cells(result.notebook)
    definitions, swarm = code[-2].source, code[-1].source
    assert definitions.startswith("import swarmkit\n")
    for line in ("import re", "def counts_words(answer: str)",
                 "check_1 = swarmkit.Check.contains('merging')",
                 "check_3 = swarmkit.Check(counts_words, name='wordy', on='answer')"):
        assert line in definitions, line
    assert "--check check_1,counts_words,check_3" in swarm.splitlines()[0]
    [shown] = code[-1].outputs
    text = shown["data"]["text/plain"]
    assert text == run.tables().text()
    assert [s.name for s in run.scores] == ["contains('merging')", "counts_words", "wordy",
                                            "judge"]
    header = nbformat.read(result.notebook, as_version=4).cells[0].source
    assert "not run again" not in header
    nbval_passes(result.notebook)


def test_a_check_the_notebook_cannot_define_is_left_out_and_named(
    server: FakeServer, tmp_path: Path
) -> None:
    run = record(server, checks=[cites, Check.contains("merging")], judge="fake-model")
    result = run.export(tmp_path / "partial.ipynb")
    code = cells(result.notebook)
    assert "--check check_1" in code[-1].source and "cites" not in code[-1].source
    text = code[-1].outputs[0]["data"]["text/plain"]
    assert "contains('merging')" in text and "\ncites " not in text
    assert "\njudge " in text.split("answer\n")[0].split("scores\n")[1]
    header = nbformat.read(result.notebook, as_version=4).cells[0].source
    assert "not run again in this notebook, so not shown: cites (it uses WORD, a " \
           "Pattern with no literal to write)" in header
    nbval_passes(result.notebook)


def test_a_run_from_the_history_replays_its_judge_and_names_its_checks(
    server: FakeServer, tmp_path: Path
) -> None:
    history = tmp_path / "history.db"
    run = swarmkit.run_sync("Compare two queues", model="fake-model", workers=2,
                            base_url=server.base_url, history_path=str(history),
                            checks=[counts_words], judge="fake-model")
    loaded = swarmkit.load_run(run.run_id, history_path=history)
    assert loaded.scores == run.scores and loaded.checks == ()
    result = loaded.export(tmp_path / "stored.ipynb", history_path=history)
    text = cells(result.notebook)[-1].outputs[0]["data"]["text/plain"]
    assert "\njudge " in text and "counts_words" not in text
    header = nbformat.read(result.notebook, as_version=4).cells[0].source
    assert "counts\\_words (its function is not in this session" in header
    nbval_passes(result.notebook)


@pytest.fixture
def shell(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> InteractiveShell:
    monkeypatch.setenv("SWARMKIT_HISTORY", str(tmp_path / "history.db"))
    return swarm_shell()


def test_swarm_export_writes_the_checks_defined_in_the_notebook(
    shell: InteractiveShell, server: FakeServer, tmp_path: Path
) -> None:
    shell.run_cell("LIMIT = 3\n\ndef brief(answer):\n    return len(answer.split()) > LIMIT\n")
    shell.run_cell_magic("swarm", f"--base-url {server.base_url} --model fake-model "
                                  "--workers 2 --quiet --check brief --out r", "Name two queues")
    result = shell.run_line_magic("swarm", f"export {tmp_path / 'cell.ipynb'}")
    definitions = cells(result.notebook)[-2].source
    assert "LIMIT = 3" in definitions and "def brief(answer):" in definitions
    assert "--check brief" in cells(result.notebook)[-1].source
    assert cells(result.notebook)[-1].outputs[0]["data"]["text/plain"] == \
        shell.user_ns["r"].tables().text()
    for name in ("LIMIT", "brief", "r"):
        shell.user_ns.pop(name, None)
    nbval_passes(result.notebook)


def test_swarm_export_after_a_repeated_scored_compare_writes_a_cassette_per_run(
    shell: InteractiveShell, server: FakeServer, tmp_path: Path
) -> None:
    shell.run_cell("def brief(answer):\n    return len(answer) < 500\n")
    shell.user_ns.update(one="One line.", table="A table.")
    shell.run_cell_magic("swarm", f"--base-url {server.base_url} --model fake-model "
                                  "--workers 2 --quiet --compare reducer_prompt=@one,@table "
                                  "--repeat 2 --check brief --out c", "Name two queues")
    comparison = shell.user_ns["c"]
    assert [len(group) for group in comparison.repeats] == [2, 2]
    result = shell.run_line_magic("swarm", f"export {tmp_path / 'grid.ipynb'}")
    assert [p.name for p in result.cassettes] == [f"grid.{i}.swarm.json" for i in (1, 2, 3, 4)]
    cell = cells(result.notebook)[-1]
    assert "repeat=2" in cell.source and "checks=[brief]" in cell.source
    assert "def brief(answer):" in cell.source
    assert cell.outputs[0]["data"]["text/plain"] == str(comparison).rstrip("\n")
    for name in ("brief", "one", "table", "c"):
        shell.user_ns.pop(name, None)
    nbval_passes(result.notebook)
