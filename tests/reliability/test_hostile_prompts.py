"""Prompts are data; what a model says is text; exports never clobber a file.

IPython expands ``{expression}`` and ``$name`` on every magic line, so a prompt written
onto an exported ``%%swarm`` or ``%swarm config`` line would be evaluated on replay. Each
test runs a real swarm against FakeServer with such prompts (from Python, from
``%swarm config`` and from ``swarm_config()``), exports it, and replays the notebook
with ``pytest --nbval`` in a fresh kernel: the replay only matches when every request is
byte for byte the recorded one, and a marker file proves no brace was ever evaluated.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

import swarmkit
from swarmkit.api.result import Run
from swarmkit.errors import ExportError
from swarmkit.magics import SwarmMagics
from swarmkit.store import Cassette
from swarmkit.testing import FakeReply, FakeRequest, FakeServer, role_of_step
from tests.support.notebooks import run_nbval

INJECTION = "<img src=x onerror=alert(1)>"


@pytest.fixture(scope="module")
def server() -> Iterator[FakeServer]:
    with FakeServer(plan_tasks=2, lifetime=300) as fake:
        yield fake


def hostile_prompts(marker: Path) -> dict[str, str]:
    evaluate = f"{{open({str(marker)!r}, 'w').write('evaluated')}}"
    return {
        "system_prompt": f"List {{2*2}} rivers. {evaluate} Costs in $HOME.",
        "reducer_prompt": "Merge into {len('ab')} lines;\nsay ${PATH} and $$x verbatim.",
        "planner_prompt": "Split into at most {max_workers} parts {{as JSON}}; cost $USD.",
    }


def code_sources(path: Path) -> list[str]:
    notebook = nbformat.read(path, as_version=4)
    return [cell.source for cell in notebook.cells if cell.cell_type == "code"]


def magic_lines(path: Path) -> list[str]:
    return [line for source in code_sources(path) for line in source.splitlines()[:1]
            if line.lstrip().startswith("%") or "%swarm" in line]


def sent_system_prompts(server: FakeServer) -> dict[str, str]:
    """The system prompt each role sent (the last request of each role)."""
    sent = {}
    for request in server.requests:
        messages = request.body.get("messages") or []
        if messages and messages[0].get("role") == "system":
            sent[role_of_step(request.step)] = messages[0]["content"]
    return sent


def assert_replays_offline(notebook: Path) -> None:
    checked = run_nbval(notebook.name, cwd=notebook.parent)
    assert checked.returncode == 0, checked.stdout[-3000:] + checked.stderr[-3000:]


# -- prompts are data ----------------------------------------------------------------------


@pytest.mark.kernel
def test_prompts_with_braces_and_dollars_survive_export_and_replay_unchanged(
    server: FakeServer, tmp_path: Path
) -> None:
    marker = tmp_path / "evaluated.txt"
    prompts = hostile_prompts(marker)
    task = "Name {2*2} rivers in {{braces}}, for $HOME and {n}"
    server.clear()
    run = swarmkit.run_sync(task, model="fake-model", base_url=server.base_url, workers=2,
                            history=False, **prompts)
    sent = sent_system_prompts(server)
    assert sent["worker"] == prompts["system_prompt"]
    assert sent["reducer"] == prompts["reducer_prompt"]

    result = run.export(tmp_path / "rivers-{n}-$x.ipynb")
    # The cassette name goes on the %%swarm line: its braces and $ are replaced.
    assert result.cassettes == (tmp_path / "rivers-_n_-_x.swarm.json",)
    config = Cassette.load(result.cassettes[0]).run["config"]
    assert {name: config[name] for name in prompts} == prompts
    # No magic line holds a brace or a $; the values are Python literals in a plain cell.
    assert not [line for line in magic_lines(result.notebook) if {"{", "}", "$"} & set(line)]
    sources = code_sources(result.notebook)
    setup = next(source for source in sources if "swarm_config(" in source)
    assert all(repr(value) in setup for value in prompts.values())
    swarm_cell = next(source for source in sources if source.startswith("%%swarm"))
    assert swarm_cell.endswith(f" --no-interpolate\n{task}")
    assert_replays_offline(result.notebook)
    assert not marker.exists()


@pytest.mark.kernel
def test_prompts_set_with_swarm_config_survive_swarm_export_and_replay(
    shell: InteractiveShell, magics: SwarmMagics, server: FakeServer, tmp_path: Path
) -> None:
    marker = tmp_path / "evaluated.txt"
    prompts = hostile_prompts(marker)
    # In a notebook, {{ }} on a magic line gives literal braces; swarm_config() needs none.
    shell.run_cell("%swarm config 'reducer_prompt=Reply in {{lang}} for $5'")
    assert magics.session_options["reducer_prompt"] == "Reply in {lang} for $5"
    result = shell.run_cell("from swarmkit.magics import swarm_config\n"
                            f"options = swarm_config(system_prompt={prompts['system_prompt']!r})")
    assert result.success and not marker.exists()
    server.clear()
    with capture_output():
        shell.run_cell(f"%%swarm --model fake-model --base-url {server.base_url} --workers 2 "
                       "--quiet --no-interpolate\nName {2*2} rivers for $HOME")
    run = shell.user_ns["_swarm"]
    assert run.task == "Name {2*2} rivers for $HOME"
    assert sent_system_prompts(server)["worker"] == prompts["system_prompt"]

    exported = shell.run_line_magic("swarm", f"export {tmp_path / 'session.ipynb'}")
    setup = next(s for s in code_sources(exported.notebook) if "swarm_config(" in s)
    assert repr(prompts["system_prompt"]) in setup and "'Reply in {lang} for $5'" in setup
    assert_replays_offline(exported.notebook)
    assert not marker.exists()


def test_swarm_config_from_python_sets_the_session_as_written(
    shell: InteractiveShell, magics: SwarmMagics
) -> None:
    result = shell.run_cell("from swarmkit.magics import swarm_config\n"
                            "swarm_config(system_prompt='{2*2} and $HOME', workers=3)")
    assert result.success
    assert magics.session_options == {"system_prompt": "{2*2} and $HOME", "workers": 3}
    shell.run_cell("swarm_config(reset=True, reducer_prompt='{x}')")
    assert magics.session_options == {"reducer_prompt": "{x}"}
    from swarmkit.magics import swarm_config

    with pytest.raises(UsageError, match="workers must be at least 1"):
        swarm_config(workers=0)
    assert magics.session_options == {"reducer_prompt": "{x}"}


def test_swarm_rerun_sends_the_past_runs_braced_prompts_unchanged(
    shell: InteractiveShell, magics: SwarmMagics, server: FakeServer
) -> None:
    prompts = {"system_prompt": "Answer {2*2} ways in $HOME",
               "reducer_prompt": "Merge {len('ab')} and ${PATH}"}
    for name, value in prompts.items():
        magics.session_options[name] = value
    with capture_output():
        shell.run_cell_magic("swarm", f"--model fake-model --base-url {server.base_url} "
                                      "--workers 2 --quiet --no-interpolate", "Name {n} rivers")
    first = shell.user_ns["_swarm"]
    magics.session_options.clear()
    server.clear()
    with capture_output():
        shell.run_line_magic("swarm", f"rerun {first.run_id} --worker 1 --out again")
    again = shell.user_ns["again"]
    assert again.task == "Name {n} rivers"
    # Worker 1 is asked again; the reducer's request is unchanged, so the cache answers it.
    assert sent_system_prompts(server) == {"worker": prompts["system_prompt"]}
    assert {name: again.config[name] for name in prompts} == prompts


# -- what a model says is text ---------------------------------------------------------------


@swarmkit.tool
def stock(item: str) -> int:
    """How many of an item are in stock.

    Args:
        item: The item's name.
    """
    return {"bolts": 40}.get(item, 0)


def hostile_model(request: FakeRequest) -> FakeReply | None:
    if request.role == "planner":
        return FakeReply(content=json.dumps({"tasks": [f"Count {INJECTION}", "Count `nuts`"]}))
    if request.role == "worker" and not any(m.get("role") == "tool" for m in request.messages):
        return FakeReply(tool_calls=[(f"x`{INJECTION}", {"item": INJECTION}),
                                     ("stock", {"item": f"*{INJECTION}*"})])
    if request.role == "reducer":
        return FakeReply(content=f"**Done** {INJECTION} [x](javascript:alert(1))")
    return None


@pytest.mark.kernel
def test_tool_names_arguments_plan_and_answers_from_a_model_are_escaped_in_the_export(
    tmp_path: Path,
) -> None:
    with FakeServer(hostile_model, plan_tasks=2) as fake:
        run = swarmkit.run_sync(f"Check {INJECTION} | stock", model="fake-model",
                                base_url=fake.base_url, workers=2, history=False,
                                tools=[stock])
    assert {t.tool for t in run.tool_calls} == {f"x`{INJECTION}", "stock"}
    result = run.export(tmp_path / "tools.ipynb")
    notebook = nbformat.read(result.notebook, as_version=4)
    header = notebook.cells[0].source
    # Shown as text: no tag, and the backtick cannot close a code span.
    assert "<" not in header and "x\\`&lt;img src=x onerror=alert(1)&gt;" in header
    assert "| task | Check &lt;img src=x onerror=alert(1)&gt; \\| stock |" in header
    outputs = [output for cell in notebook.cells if cell.cell_type == "code"
               for output in cell.get("outputs", [])]
    pages = [o["data"]["text/html"] for o in outputs if "text/html" in o.get("data", {})]
    assert pages and all("<img" not in page and 'href="javascript' not in page
                         for page in pages)
    assert all("&lt;img src=x onerror=alert(1)&gt;" in page for page in pages)
    assert_replays_offline(result.notebook)


# -- exports never clobber a file --------------------------------------------------------------


@pytest.fixture(scope="module")
def small_run(server: FakeServer) -> Run:
    return swarmkit.run_sync("Name two queues", model="fake-model", base_url=server.base_url,
                             workers=2, history=False)


def one_line(message: str) -> str:
    assert message and "\n" not in message and "Traceback" not in message
    return message


@pytest.mark.kernel
def test_export_refuses_to_replace_a_notebook_or_cassette_unless_told_to(
    small_run: Run, tmp_path: Path
) -> None:
    notebook, cassette = tmp_path / "mine.ipynb", tmp_path / "mine.swarm.json"
    notebook.write_text("my own notebook")
    with pytest.raises(ExportError) as caught:
        small_run.export(notebook)
    message = one_line(str(caught.value))
    assert str(notebook) in message and "overwrite=True" in message
    assert notebook.read_text() == "my own notebook" and not cassette.exists()

    notebook.unlink()
    cassette.write_text("my own cassette")
    with pytest.raises(ExportError, match=r"mine\.swarm\.json already exists"):
        small_run.export(notebook)
    assert cassette.read_text() == "my own cassette" and not notebook.exists()

    result = small_run.export(notebook, overwrite=True)
    assert Cassette.load(result.cassettes[0]).run_id == small_run.run_id
    assert nbformat.read(result.notebook, as_version=4).cells
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine.ipynb", "mine.swarm.json"]


@pytest.mark.kernel
def test_swarm_export_refuses_an_existing_notebook_without_force(
    shell: InteractiveShell, magics: SwarmMagics, small_run: Run, tmp_path: Path
) -> None:
    shell.user_ns["queues"] = small_run
    target = tmp_path / "queues.ipynb"
    target.write_text("keep me")
    with pytest.raises(UsageError) as caught:
        shell.run_line_magic("swarm", f"export queues {target}")
    message = one_line(str(caught.value))
    assert str(target) in message and "--force" in message
    assert target.read_text() == "keep me"
    result = shell.run_line_magic("swarm", f"export queues {target} --force")
    assert result.notebook == target and target.read_text() != "keep me"


@pytest.mark.kernel
def test_a_failed_export_leaves_no_file_behind(small_run: Run, tmp_path: Path) -> None:
    target = tmp_path / "folder.ipynb"
    target.mkdir()  # the notebook cannot be written over a folder, even with overwrite
    with pytest.raises(ExportError, match="cannot write") as caught:
        small_run.export(target, overwrite=True)
    one_line(str(caught.value))
    assert [p.name for p in tmp_path.iterdir()] == ["folder.ipynb"]
    assert list(target.iterdir()) == []


def test_a_cassette_name_a_magic_line_would_expand_is_refused(
    small_run: Run, tmp_path: Path
) -> None:
    from swarmkit.export.exporter import ReplayNotebook

    book = ReplayNotebook()
    book.swarm(small_run, name="{2*2}.swarm.json")
    with pytest.raises(ExportError, match="cannot name the cassette"):
        book.write(tmp_path / "named.ipynb")
    assert list(tmp_path.iterdir()) == []


def test_swarmkit_demo_refuses_to_replace_a_notebook_before_starting_a_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from swarmkit.cli.command import main

    target = tmp_path / "demo.ipynb"
    target.write_text("keep me")
    assert main(["demo", "--out", str(target)]) == 2
    error = capsys.readouterr().err
    assert one_line(error.strip()).startswith(f"jswarm: not running the demo: {target}")
    assert "--force" in error and "starting the embedded model" not in error
    assert target.read_text() == "keep me"


# -- any text, through IPython's own transformations ---------------------------------------

PROMPT_TEXT = st.lists(
    st.sampled_from([*"ab {}$\n\r'\"\\-#%!?=\t", "{{", "}}", "$x", "{2*2}", "{n}",
                     "none", "\u2028", "é"]),
    min_size=1, max_size=12,
).map("".join)


def ipython_sees(shell: InteractiveShell, cell: str) -> tuple[str, str]:
    """The (line, body) a ``%%swarm`` cell hands the magic: IPython's own transform, then
    its expansion of the line, exactly as ``run_cell_magic`` does."""
    call = ast.parse(shell.transform_cell(cell)).body[0]
    assert isinstance(call, ast.Expr) and isinstance(call.value, ast.Call)
    _, line, body = (ast.literal_eval(arg) for arg in call.value.args)
    return shell.var_expand(line), body


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(system=PROMPT_TEXT, reducer=PROMPT_TEXT, task=PROMPT_TEXT)
def test_any_prompt_text_reaches_the_replayed_config_unchanged(
    shell: InteractiveShell, magics: SwarmMagics, system: str, reducer: str, task: str
) -> None:
    from swarmkit.config.template import interpolate
    from swarmkit.errors import ConfigError
    from swarmkit.export.cellsource import swarm_cells
    from swarmkit.magics.flags import parse_line

    task = task.strip()
    try:
        config = swarmkit.SwarmConfig().with_options(system_prompt=system,
                                                     reducer_prompt=reducer).summary()
    except ConfigError:
        assume(False)
    assume(task and "\r" not in task and "\u2028" not in task)
    magics.session_options = {}
    cells, _ = swarm_cells(Run("r1", task, config=config), config, "r.swarm.json", {})
    for setup in cells[:-1]:
        assert shell.run_cell(setup).success
    line, body = ipython_sees(shell, cells[-1])
    args = parse_line(line, shell.user_ns)
    replayed = magics.session_config(**args.config_options)
    assert (replayed.system_prompt, replayed.reducer_prompt) == (system, reducer)
    assert (interpolate(body, shell.user_ns) if args.interpolate else body).strip() == task

