"""Export of a comparison: a notebook and one cassette per variant, replaying every
variant offline; ``pytest --nbval`` on the written notebook passes with no server."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from pydantic import BaseModel

import swarmkit
from swarmkit.comparison.result import Comparison
from swarmkit.errors import ExportError
from swarmkit.export.exporter import find_recording
from swarmkit.testing import FakeReply, FakeRequest, FakeServer, swarm_shell
from tests.support.notebooks import offline_env, run_nbval

pytestmark = pytest.mark.kernel

SECRET = "sk-export-compare-0123456789abcdef"
PROMPTS = ("One line.", "A table of the findings, one row per sub-task, then a verdict.")


@pytest.fixture(scope="module")
def server() -> Iterator[FakeServer]:
    with FakeServer(plan_tasks=3, lifetime=300) as fake:
        yield fake


def compare(server: FakeServer, task: str = "Summarise the report", **options: Any
            ) -> Comparison:
    variants = options.pop("variants", [{"reducer_prompt": p} for p in PROMPTS])
    return swarmkit.compare_sync(task, variants=variants, model="fake-model", workers=3,
                                 base_url=server.base_url, history=False, **options)


def code_cells(path: Path) -> list[Any]:
    return [c for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]


def test_a_comparison_exports_a_notebook_that_passes_nbval_with_no_server(
    server: FakeServer, tmp_path: Path
) -> None:
    comparison = compare(server, temperature=0.2)
    result = comparison.export(tmp_path / "prompts.ipynb")
    assert result.cassettes == (tmp_path / "prompts.1.swarm.json",
                                tmp_path / "prompts.2.swarm.json")
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "prompts.1.swarm.json", "prompts.2.swarm.json", "prompts.ipynb"]
    for cassette, run in zip(result.cassettes, comparison.runs, strict=True):
        assert json.loads(cassette.read_text())["run"]["run_id"] == run.run_id
    header = nbformat.read(result.notebook, as_version=4).cells[0].source
    for fact in ("Summarise the report", "reducer\\_prompt=One line.",
                 comparison.runs[0].run_id, comparison.runs[1].run_id,
                 "`prompts.1.swarm.json`", "%%swarm --compare", "shared calls"):
        assert fact in header, fact
    cell = code_cells(result.notebook)[-1]
    # The variants as literals (the long prompt as a named constant), the cassettes in
    # the variants' order, and the options that rebuild the requests.
    assert "{'reducer_prompt': 'One line.'}" in cell.source
    assert f"REDUCER_PROMPT = {PROMPTS[1]!r}" in cell.source
    assert "replay=['prompts.1.swarm.json', 'prompts.2.swarm.json']" in cell.source
    assert "model='fake-model'" in cell.source and "temperature=0.2" in cell.source
    assert server.base_url not in cell.source
    assert cell.source.endswith("\ncomparison")
    [output] = cell.outputs
    assert output["output_type"] == "execute_result"
    assert output["data"]["text/plain"] == str(comparison).rstrip("\n")
    assert output["data"]["text/html"] == comparison._repr_html_()

    env = offline_env(pythonpath=[Path(swarmkit.__file__).parent.parent])
    checked = run_nbval(result.notebook.name, cwd=tmp_path, env=env)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "2 passed" in checked.stdout  # %load_ext and the comparison's cell


def test_a_magic_comparison_keeps_its_labels_and_replays(
    server: FakeServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # the magic's history goes here
    shell = swarm_shell()
    shell.user_ns.update(terse="Answer in one line.", table="Answer with a table.")
    try:
        shell.run_cell_magic("swarm", f"--model fake-model --workers 3 --base-url "
                             f"{server.base_url} --compare system=@terse,@table --quiet "
                             "--out c", "Summarise the report")
        comparison = shell.user_ns["c"]
    finally:
        for name in ("terse", "table", "c", "_swarm"):
            shell.user_ns.pop(name, None)
    assert comparison.labels == ("system=@terse", "system=@table")
    result = comparison.export(tmp_path / "out" / "magic.ipynb")
    cell = code_cells(result.notebook)[-1]
    # Plain dicts would be labelled system_prompt=...: the labels are kept as written.
    assert "Variant(options=(('system_prompt', 'Answer in one line.'),), " \
           "label='system=@terse')" in cell.source
    assert cell.outputs[0]["data"]["text/plain"] == str(comparison).rstrip("\n")


class Review(BaseModel):
    score: int


class Verdict(BaseModel):
    verdict: str


def typed(request: FakeRequest) -> FakeReply | None:
    if request.role == "worker":
        return FakeReply(content=json.dumps({"score": 4, "verdict": "fine"}))
    return None


def test_a_variant_without_a_literal_is_written_as_recorded_under_its_label(
    tmp_path: Path
) -> None:
    with FakeServer(typed, plan_tasks=2) as fake:
        comparison = compare(fake, variants=[{"output_type": Review},
                                             {"output_type": Verdict}])
    result = comparison.export(tmp_path / "typed.ipynb")
    cell = code_cells(result.notebook)[-1]
    # A pydantic model has no literal: its recorded JSON schema replays the same requests.
    assert "from swarmkit.comparison import Variant" in cell.source
    assert "label='output_type=Review'" in cell.source
    assert '"title":"Verdict"' in cell.source
    assert cell.outputs[0]["data"]["text/plain"] == str(comparison).rstrip("\n")


def test_an_existing_file_is_never_replaced_unless_told(
    server: FakeServer, tmp_path: Path
) -> None:
    comparison = compare(server)
    (tmp_path / "prompts.2.swarm.json").write_text("mine")
    with pytest.raises(ExportError) as refused:
        comparison.export(tmp_path / "prompts.ipynb")
    message = str(refused.value)
    assert "prompts.2.swarm.json already exists" in message and "overwrite=True" in message
    assert len(message.splitlines()) == 1
    assert (tmp_path / "prompts.2.swarm.json").read_text() == "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["prompts.2.swarm.json"]
    comparison.export(tmp_path / "prompts.ipynb", overwrite=True)
    assert json.loads((tmp_path / "prompts.2.swarm.json").read_text())["run"]["run_id"] == \
        comparison.runs[1].run_id


def test_a_replay_that_changes_a_variants_answer_fails_and_writes_nothing(
    server: FakeServer, tmp_path: Path
) -> None:
    comparison = compare(server)
    edited = find_recording(comparison.runs[1])
    data = json.loads(edited.dumps())
    next(c for c in data["calls"] if c["step"] == "reducer")["response"]["content"] = "Other."
    path = tmp_path / "edited.swarm.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ExportError) as failed:
        comparison.export(tmp_path / "out" / "prompts.ipynb", cassettes=[None, path])
    message = str(failed.value)
    assert "does not reproduce" in message and len(message.splitlines()) == 1
    assert not (tmp_path / "out").exists()


def test_errors_are_one_line_and_write_nothing(server: FakeServer, tmp_path: Path) -> None:
    comparison = compare(server)
    first = find_recording(comparison.runs[0])
    with pytest.raises(ExportError) as wrong:  # the second variant's cassette is the first's
        comparison.export(tmp_path / "a.ipynb", cassettes=[first, first])
    assert f"records run {comparison.runs[0].run_id}" in str(wrong.value)
    with pytest.raises(ExportError) as suffix:
        comparison.export(tmp_path / "a.txt")
    assert ".ipynb" in str(suffix.value)
    env = {**os.environ, "MY_GATEWAY_KEY": SECRET}
    leaky = compare(server, task=f"Summarise why {SECRET} must stay secret",
                    api_key_env="MY_GATEWAY_KEY", env=env)
    with pytest.raises(ExportError) as leak:
        leaky.export(tmp_path / "leak.ipynb", env=env)
    assert "MY_GATEWAY_KEY" in str(leak.value) and SECRET not in str(leak.value)
    for error in (wrong, suffix, leak):
        assert len(str(error.value).splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


LONGEST = 400


def short_enough(answer: str) -> tuple[bool, str]:
    """A user's check, with a module constant and an import: both go into the notebook."""
    words = re.findall(r"\w+", answer)
    return len(answer) <= LONGEST, f"{len(words)} words"


def test_a_scored_repeated_comparison_exports_every_repeat_scored_again_under_nbval(
    server: FakeServer, tmp_path: Path
) -> None:
    from swarmkit import Check

    comparison = compare(server, checks=[Check.contains("merging"), short_enough],
                         judge="fake-model", repeat=2)
    result = comparison.export(tmp_path / "scored.ipynb")
    # One cassette per run: each variant's two repeats in turn.
    assert [p.name for p in result.cassettes] == [f"scored.{i}.swarm.json" for i in range(1, 5)]
    runs = [run for group in comparison.repeats for run in group]
    for cassette, run in zip(result.cassettes, runs, strict=True):
        assert json.loads(cassette.read_text())["run"]["run_id"] == run.run_id
    cell = code_cells(result.notebook)[-1]
    # The checks are defined above the call (the user's def with its import and constant)
    # and passed again, with the repeats, so the replay scores as the comparison did.
    for line in ("import re", "LONGEST = 400", "def short_enough(answer: str)",
                 "repeat=2", "checks=[swarmkit.Check.contains('merging'), short_enough]"):
        assert line in cell.source, line
    [output] = cell.outputs
    shown = output["data"]["text/plain"]
    assert shown == str(comparison).rstrip("\n")
    for name in ("contains('merging')", "short_enough", "judge"):
        assert f"\n{name} " in shown or f"\n{name}  " in shown, name
    header = nbformat.read(result.notebook, as_version=4).cells[0].source
    assert "2, each 2 times, run concurrently" in header and "repeat 2" in header
    assert "--repeat 2" in header and "not run again" not in header
    env = offline_env(pythonpath=[Path(swarmkit.__file__).parent.parent])
    checked = run_nbval(result.notebook.name, cwd=tmp_path, env=env)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "2 passed" in checked.stdout


def test_a_check_with_no_source_is_left_out_and_the_header_says_so(
    server: FakeServer, tmp_path: Path
) -> None:
    from swarmkit import Check

    comparison = compare(server, checks=[Check(lambda answer: len(answer) > 3, name="long"),
                                         Check.contains("merging")], judge="fake-model")
    result = comparison.export(tmp_path / "lambda.ipynb")
    cell = code_cells(result.notebook)[-1]
    assert "checks=[swarmkit.Check.contains('merging')]" in cell.source
    shown = cell.outputs[0]["data"]["text/plain"]
    assert "contains('merging')" in shown and "\nlong " not in shown
    assert "\nlong " in str(comparison)  # the comparison itself has it
    header = nbformat.read(result.notebook, as_version=4).cells[0].source
    assert "not run again in this notebook, so not shown: long (a lambda" in header
    env = offline_env(pythonpath=[Path(swarmkit.__file__).parent.parent])
    checked = run_nbval(result.notebook.name, cwd=tmp_path, env=env)
    assert checked.returncode == 0, checked.stdout + checked.stderr
