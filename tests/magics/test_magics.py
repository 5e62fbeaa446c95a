"""``%%swarm`` / ``%swarm`` in a real IPython shell against the loopback FakeServer."""

from __future__ import annotations

import json
import os
import re
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
from swarmkit.config.template import interpolate
from swarmkit.magics import SwarmHandle, SwarmMagics, swarm_magics
from swarmkit.magics.dryrun import DryRun
from swarmkit.testing import FakeServer, swarm_shell, wait_until
from tests.support.fakekey import swarm_line
from tests.support.interrupts import sigint_when

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def shell(tmp_path_factory: pytest.TempPathFactory) -> Iterator[InteractiveShell]:
    ip = swarm_shell()
    # Runs keep their history; keep it out of the checkout.
    before = os.environ.get("SWARMKIT_HISTORY")
    os.environ["SWARMKIT_HISTORY"] = str(tmp_path_factory.mktemp("magics") / "history.db")
    yield ip
    if before is None:
        os.environ.pop("SWARMKIT_HISTORY", None)
    else:
        os.environ["SWARMKIT_HISTORY"] = before


@pytest.fixture(scope="module")
def module_server() -> Iterator[FakeServer]:
    with FakeServer(lifetime=300) as fake:
        yield fake


@pytest.fixture
def server(module_server: FakeServer) -> Iterator[FakeServer]:
    module_server.clear()
    module_server.latency = 0.0
    yield module_server
    module_server.latency = 0.0


@pytest.fixture
def magics(shell: InteractiveShell) -> Iterator[SwarmMagics]:
    instance = swarm_magics(shell)
    assert isinstance(instance, SwarmMagics)
    instance.session_options = {}
    instance.last_run = None
    for name in ("_swarm", "r", "topic", "d"):
        shell.user_ns.pop(name, None)
    yield instance
    for handle in list(instance.background):
        if not handle.done():
            handle.cancel_and_collect("test teardown")
    instance.background = {}


line_for = partial(swarm_line, flags="--workers 3")



def planner_prompt(server: FakeServer) -> str:
    planner = [r for r in server.requests if r.step == "planner"]
    assert len(planner) == 1
    return str(planner[0].body["messages"][1]["content"])




# -- a run ---------------------------------------------------------------------------------


def test_cell_runs_a_swarm_and_stores_the_run(
    shell: InteractiveShell, magics: SwarmMagics, server: FakeServer
) -> None:
    with capture_output() as captured:
        result = shell.run_cell_magic("swarm", line_for(server, "--out r"), "Name three rivers")
    assert result is None
    run = shell.user_ns["r"]
    assert isinstance(run, Run) and shell.user_ns["_swarm"] is run and magics.last_run is run
    assert run.status == "completed" and len(run.workers) == 3
    assert server.counts_by_step() == {"planner": 1, "worker-1": 1, "worker-2": 1,
                                       "worker-3": 1, "reducer": 1}
    # Exactly one display: the run's static bundle, with provenance metadata.
    assert len(captured.outputs) == 1
    data, metadata = run.tables().mime_bundle()
    assert captured.outputs[0].data == data
    assert captured.outputs[0].metadata == metadata
    assert captured.stdout == ""


def test_quiet_still_shows_the_final_output(
    shell: InteractiveShell, magics: SwarmMagics, server: FakeServer
) -> None:
    with capture_output() as captured:
        shell.run_cell_magic("swarm", line_for(server, "--quiet"), "Name three lakes")
    assert [set(o.data) for o in captured.outputs] == [{"text/html", "text/plain"}]
    assert shell.user_ns["_swarm"].status == "completed"


def test_session_defaults_apply_and_flags_override_them(
    shell: InteractiveShell, magics: SwarmMagics, server: FakeServer
) -> None:
    shell.run_line_magic(
        "swarm", f"config model=gpt-4.1-mini base_url={server.base_url} workers=2"
    )
    with capture_output():
        shell.run_cell_magic("swarm", "", "Name two seas")
    assert len(shell.user_ns["_swarm"].workers) == 2
    server.clear()
    with capture_output():
        shell.run_cell_magic("swarm", "--workers 1", "Name one sea")
    assert server.count("worker-*") == 1


# -- interpolation -------------------------------------------------------------------------


def test_interpolation_fills_names_and_leaves_json_alone(
    shell: InteractiveShell, magics: SwarmMagics, server: FakeServer
) -> None:
    shell.user_ns["topic"] = "rivers"
    cell = 'Compare {topic}. Reply like {"items": [{"name": "x"}]} or {"a": {"b": 1}}; {{topic}}'
    with capture_output():
        shell.run_cell_magic("swarm", line_for(server), cell)
    assert planner_prompt(server) == (
        'Compare rivers. Reply like {"items": [{"name": "x"}]} or {"a": {"b": 1}}; {topic}'
    )


def test_no_interpolate_sends_the_cell_as_written(
    shell: InteractiveShell, magics: SwarmMagics, server: FakeServer
) -> None:
    with capture_output():
        shell.run_cell_magic("swarm", line_for(server, "--no-interpolate"), "About {undefined}")
    assert planner_prompt(server) == "About {undefined}"


def test_a_missing_name_is_a_usage_error_naming_it(
    shell: InteractiveShell, magics: SwarmMagics, server: FakeServer
) -> None:
    with pytest.raises(UsageError, match=r"\{river_name\} names no variable") as error:
        shell.run_cell_magic("swarm", line_for(server), "Describe {river_name}")
    assert "\n" not in str(error.value)
    assert server.count() == 0


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("{a}-{b}", "1-two"),
        ("{{a}}", "{a}"),
        ("{{{a}}}", "{1}"),
        ('{"a": 1}', '{"a": 1}'),
        ('{"a": {"b": {"c": [1]}}}', '{"a": {"b": {"c": [1]}}}'),
        ("{ a }", "{ a }"),
        ("set {1, 2}", "set {1, 2}"),
        ("}}{{", "}}{"),
    ],
)
def test_interpolate_rules(text: str, expected: str) -> None:
    assert interpolate(text, {"a": 1, "b": "two"}) == expected


# -- usage errors --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ("--workers abc", "%%swarm: --workers must be a whole number"),
        ("--workers 0", "workers must be at least 1"),
        ("--concurrency 0", "concurrency must be at least 1"),
        ("--budget lots", "budget must be a USD amount"),
        ("--budget -1", "budget must be a positive USD amount"),
        ("--temperature 5", "temperature must be between 0 and 2"),
        ("--temperature hot", "temperature has a bad value"),
        ("--max-tokens 0", "--max-tokens must be at least 1"),
        ("--seed 1.5", "seed must be a whole number"),
        ("--modle x", "unknown option --modle (did you mean --model?)"),
        ("--wokers 3", "unknown option --wokers (did you mean --workers?)"),
        ("--seed", "expected one argument"),
        ("stray", "unexpected value 'stray'"),
        ("--out 1bad", "--out needs a Python variable name"),
        ("--out class", "--out needs a Python variable name"),
        ("--dry-run --background", "drop --background"),
        ('--system "unclosed', "check the quotes"),
        ("--budget 0.01 --model no-such-model", "no price known for model 'no-such-model'"),
    ],
)
def test_bad_options_are_one_line_usage_errors(
    shell: InteractiveShell, magics: SwarmMagics, server: FakeServer, extra: str, message: str
) -> None:
    with pytest.raises(UsageError) as error:
        shell.run_cell_magic("swarm", line_for(server, extra), "task")
    assert message in str(error.value)
    assert "\n" not in str(error.value)
    assert server.count() == 0


def test_a_missing_key_is_a_usage_error_before_any_call(
    shell: InteractiveShell, magics: SwarmMagics, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("SWARMKIT_BASE_URL", raising=False)
    expected = "no API key for the planner model gpt-4.1-mini: set OPENAI_API_KEY"
    with pytest.raises(UsageError, match=re.escape(expected)) as error:
        shell.run_cell_magic("swarm", "--model gpt-4.1-mini", "task")
    assert "\n" not in str(error.value)


def test_an_empty_cell_is_a_usage_error(shell: InteractiveShell, magics: SwarmMagics) -> None:
    with pytest.raises(UsageError, match="the cell is empty"):
        shell.run_cell_magic("swarm", "--model local", "   \n")


def test_help_lists_every_option(shell: InteractiveShell, magics: SwarmMagics) -> None:
    doc = shell.find_cell_magic("swarm").__doc__
    for flag in ("--model", "--planner-model", "--worker-model", "--reducer-model",
                 "--workers", "--concurrency", "--budget", "--max-tokens", "--temperature",
                 "--seed", "--base-url", "--api-key-env", "--system", "--reducer-prompt",
                 "--out", "--background", "--dry-run", "--quiet", "--no-interpolate",
                 "%swarm config", "%swarm prices", "%swarm last", "%swarm cancel"):
        assert flag in doc, flag
    assert "option_strings" not in doc and "%swarm cancel stops the run" in doc
    with capture_output() as captured:
        shell.run_cell("%%swarm?")
    assert "--no-interpolate" in captured.stdout and "%swarm prices" in captured.stdout
    with capture_output() as captured:
        shell.run_cell_magic("swarm", "--help", "ignored")
    assert "--dry-run" in captured.stdout


# -- %swarm subcommands --------------------------------------------------------------------


def test_config_shows_sets_unsets_and_rejects(
    shell: InteractiveShell, magics: SwarmMagics
) -> None:
    table = shell.run_line_magic("swarm", "config")
    assert ("workers", "8", "") in table.rows
    table = shell.run_line_magic("swarm", "config workers=5 budget=0.25 planner_model=gpt-4.1")
    assert ("workers", "5", "session") in table.rows
    assert ("budget", "0.25", "session") in table.rows
    assert ("planner_model", "gpt-4.1", "session") in table.rows
    assert "<table>" in table._repr_html_() and "workers" in repr(table)
    table = shell.run_line_magic("swarm", "config budget=")
    assert ("budget", "-", "") in table.rows
    for bad, message in [("colour=red", "unknown option 'colour'"),
                         ("workers=many", "workers must be a whole number"),
                         ("workers", "expected key=value"),
                         ("prices=x", "%swarm prices")]:
        with pytest.raises(UsageError, match=message):
            shell.run_line_magic("swarm", f"config {bad}")
    assert magics.session_options == {"workers": "5", "planner_model": "gpt-4.1"}
    shell.run_line_magic("swarm", "config reset")
    assert magics.session_options == {}


def test_config_accepts_exactly_the_option_tables_keys(
    shell: InteractiveShell, magics: SwarmMagics
) -> None:
    from swarmkit.config.options import OPTIONS, config_keys

    doc = shell.find_cell_magic("swarm").__doc__
    for row in OPTIONS:
        if row.on("magic"):
            off = row.kind == "bool" and row.magic_switch != "on"
            assert (f"--no-{row.flag_name[2:]}" if off else row.flag_name) in doc
            if row.kind == "bool" and row.magic_switch != "off":
                assert f"{row.flag_name} " in doc
    keys = config_keys()
    assert {"workers", "call_timeout", "planner_temperature", "history"} <= set(keys)
    assert not {"tools", "refresh", "prices", "max_workers"} & set(keys)
    table = shell.run_line_magic("swarm", "config call_timeout=60 planner_temperature=0.5")
    assert ("call_timeout", "60.0", "session") in table.rows
    for bad, says in [("max_workers=3", "unknown option 'max_workers' (did you mean workers?)"),
                      ("refresh=worker-1", "unknown option 'refresh'")]:
        with pytest.raises(UsageError, match=re.escape(says)):
            shell.run_line_magic("swarm", f"config {bad}")
    assert magics.session_options == {"call_timeout": "60", "planner_temperature": "0.5"}
    shell.run_line_magic("swarm", "config reset")


def test_prices_show_filter_add_and_use(
    shell: InteractiveShell, magics: SwarmMagics, server: FakeServer
) -> None:
    table = shell.run_line_magic("swarm", "prices gpt-4.1-mini")
    assert [row[0] for row in table.rows] == ["gpt-4.1-mini"]
    assert len(shell.run_line_magic("swarm", "prices").rows) > 1
    for bad in ("fake-model 1", "fake-model x 2", "fake-model -1 2"):
        with pytest.raises(UsageError):
            shell.run_line_magic("swarm", f"prices {bad}")
    table = shell.run_line_magic("swarm", "prices fake-model 1.00 2.00")
    assert table.rows == [("fake-model", "1.00", "2.00", "-", "session")]
    with capture_output():
        shell.run_cell_magic(
            "swarm", f"--model fake-model --base-url {server.base_url} --workers 2 --budget 1",
            "Name two hills",
        )
    run = shell.user_ns["_swarm"]
    assert run.status == "completed" and run.cost_usd is not None and run.cost_usd > 0


def test_last_shows_the_last_run_again(
    shell: InteractiveShell, magics: SwarmMagics, server: FakeServer
) -> None:
    with pytest.raises(UsageError, match="no swarm has run"):
        shell.run_line_magic("swarm", "last")
    with capture_output() as first:
        shell.run_cell_magic("swarm", line_for(server), "Name three mountains")
    with capture_output() as again:
        shell.run_line_magic("swarm", "last")
    assert [o.data for o in again.outputs] == [o.data for o in first.outputs]


def test_unknown_subcommand_is_a_usage_error(shell: InteractiveShell, magics: SwarmMagics) -> None:
    with pytest.raises(UsageError, match="unknown command 'histroy'; use one of config"):
        shell.run_line_magic("swarm", "histroy")
    with capture_output() as captured:
        shell.run_line_magic("swarm", "")
    assert "%swarm cancel" in captured.stdout


# -- dry run -------------------------------------------------------------------------------


def test_dry_run_calls_only_the_planner_and_bounds_the_cost(
    shell: InteractiveShell, magics: SwarmMagics, server: FakeServer
) -> None:
    with capture_output() as captured:
        shell.run_cell_magic("swarm", line_for(server, "--dry-run --out d --workers 8"),
                             "Name four capitals")
    assert server.counts_by_step() == {"planner": 1}
    estimate = shell.user_ns["d"]
    assert isinstance(estimate, DryRun) and len(estimate.plan) == 4
    assert shell.user_ns["_swarm"] is estimate  # like a run's result (README: _swarm)
    planner, workers, reducer = estimate.roles
    assert planner.measured and planner.calls == 1 and planner.cost_usd is not None
    assert workers.calls == 4 and reducer.calls == 1
    assert workers.tokens is not None and workers.tokens > 4 * 1024  # prompt bound + max_tokens
    assert estimate.cost_usd == planner.cost_usd + workers.cost_usd + reducer.cost_usd
    assert len(captured.outputs) == 1 and "dry run: 4 workers planned" in captured.outputs[0].data[
        "text/plain"]


# -- background, cancel and interrupt ------------------------------------------------------


def test_background_returns_at_once_and_lands_in_swarm(
    shell: InteractiveShell, magics: SwarmMagics, server: FakeServer
) -> None:
    server.latency = 0.05
    with capture_output() as captured:
        handle = shell.run_cell_magic("swarm", line_for(server, "--background --out r"),
                                      "Name three deserts")
    assert isinstance(handle, SwarmHandle) and shell.user_ns["_swarm_handle"] is handle
    assert not handle.done()
    assert handle.state in ("starting", "planning", "running")
    assert f" {handle.state}; %swarm cancel stops it" in repr(handle)
    run = handle.result()
    assert wait_until(lambda: shell.user_ns.get("r") is run)
    assert run.status == "completed" and shell.user_ns["_swarm"] is run
    assert repr(handle) == f"<SwarmHandle {run.run_id} completed; the Run is in _swarm>"
    assert len(captured.outputs) == 1  # the placeholder; its display id is updated at the end


def test_cancel_stops_a_background_run_and_keeps_what_finished(
    shell: InteractiveShell, magics: SwarmMagics, server: FakeServer
) -> None:
    server.latency = 0.3
    with capture_output():
        handle = shell.run_cell_magic(
            "swarm", line_for(server, "--background --workers 8 --concurrency 2"),
            "Name four forests",
        )
    assert wait_until(lambda: server.count("worker-*") >= 3)
    with capture_output() as captured:
        shell.run_line_magic("swarm", "cancel")
    assert handle.done()
    run = shell.user_ns["_swarm"]
    assert run.status == "cancelled"
    assert repr(handle) == f"<SwarmHandle {run.run_id} cancelled; the Run is in _swarm>"
    statuses = {w.status for w in run.workers}
    assert "cancelled" in statuses and statuses <= {"completed", "cancelled"}
    finished = sum(1 for w in run.workers if w.status == "completed")
    assert captured.stdout == (
        f"swarm cancelled: {finished} of 4 workers finished; partial run in _swarm\n"
    )
    assert wait_until(lambda: server.in_flight == 0)
    with capture_output() as captured:
        shell.run_line_magic("swarm", "cancel")
    assert captured.stdout == "no background swarm is running\n"


def test_interrupt_keeps_the_partial_run_and_the_shell_usable(
    shell: InteractiveShell, magics: SwarmMagics, server: FakeServer
) -> None:
    """A real SIGINT lands in the waiting cell, as a kernel interrupt does."""
    server.latency = 0.3
    trigger = sigint_when(lambda: server.count("worker-*") >= 3)  # once workers run
    with capture_output() as captured:
        shell.run_cell_magic("swarm", line_for(server, "--workers 8 --concurrency 2 --out r"),
                             "Name four islands")
    trigger.join()
    run = shell.user_ns["r"]
    assert shell.user_ns["_swarm"] is run and run.status == "cancelled"
    finished = sum(1 for w in run.workers if w.status == "completed")
    # The notice uses the Run's status word, and the partial run's tables are shown.
    assert captured.stdout == (
        f"swarm cancelled (interrupt): {finished} of 4 workers finished; "
        "partial run in _swarm and r\n"
    )
    assert run.error == "run interrupted"
    (output,) = captured.outputs
    assert output.data["text/plain"] == run.tables().text()
    assert wait_until(lambda: server.in_flight == 0)
    server.latency = 0.0
    with capture_output():
        shell.run_cell_magic("swarm", line_for(server), "Name three islands")
    assert shell.user_ns["_swarm"].status == "completed"


def test_interrupt_while_planning_keeps_an_empty_cancelled_run(
    shell: InteractiveShell, magics: SwarmMagics, server: FakeServer
) -> None:
    server.latency = 5.0
    trigger = sigint_when(lambda: server.in_flight >= 1)  # while planning
    with capture_output() as captured:
        shell.run_cell_magic("swarm", line_for(server), "Name three volcanoes")
    trigger.join()
    run = shell.user_ns["_swarm"]
    assert run.status == "cancelled" and run.plan == [] and run.workers == []
    assert captured.stdout == (
        "swarm cancelled (interrupt) while planning; partial run in _swarm\n")
    assert wait_until(lambda: server.in_flight == 0)


# -- loading -------------------------------------------------------------------------------


def test_load_ext_imports_no_model_client() -> None:
    code = (
        "import json, sys\n"
        "from IPython.core.interactiveshell import InteractiveShell\n"
        "shell = InteractiveShell.instance()\n"
        "shell.run_line_magic('load_ext', 'swarmkit')\n"
        "shell.run_line_magic('swarm', 'config workers=3')\n"
        "names = ('openai', 'httpx2', 'httpx', 'ipywidgets')\n"
        "print(json.dumps({n: n in sys.modules for n in names}))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, check=True, cwd=ROOT, timeout=60)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == {
        "openai": False, "httpx2": False, "httpx": False, "ipywidgets": False,
    }
