"""When a run traces: ``otel=True``, ``--otel``, ``%swarm config otel=...``, and
automatically when an application configured a global tracer provider; and swarmkit
without OpenTelemetry installed.

The global provider can be set once per process, and a missing package can only be
simulated in a fresh interpreter, so these run in subprocesses (``sys.modules[...] =
None`` makes ``import opentelemetry`` fail as if it were not installed)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from swarmkit.cli.command import _parser
from swarmkit.config.options import config_keys
from swarmkit.magics.flags import parse_line
from swarmkit.telemetry.loader import INSTALL_HINT

ROOT = Path(__file__).resolve().parents[2]
BLOCK_OTEL = "import sys; sys.modules['opentelemetry'] = None\n"


def python(code: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "FAKE_KEY": "sk-enable-test-0000"}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=120)


def test_the_options_are_flags_config_keys_and_cli_arguments() -> None:
    assert parse_line("--otel --otel-content", {}).config_options == {
        "otel": True, "otel_content": True}
    assert parse_line("--no-otel", {}).config_options == {"otel": False}
    assert {"otel", "otel_content"} <= set(config_keys())
    args = _parser().parse_args(["run", "a task", "--otel", "--otel-content"])
    assert (args.otel, args.otel_content) == (True, True)
    args = _parser().parse_args(["run", "a task", "--no-otel"])
    assert args.otel is False and args.otel_content is None


def test_a_configured_global_provider_turns_traces_on_and_otel_false_off() -> None:
    """The magic, end to end: automatic with a global provider, off by ``%swarm config
    otel=false``, on again by ``--otel`` on the line (flags beat the session config)."""
    code = """
from IPython.utils.capture import capture_output
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from swarmkit.testing import FakeServer, swarm_shell

spans = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(spans))
trace.set_tracer_provider(provider)
shell = swarm_shell()
counts = []
with FakeServer() as server:
    line = (f"--model gpt-4.1-mini --base-url {server.base_url} --api-key-env FAKE_KEY "
            "--workers 2 --quiet --no-cache")
    for config, extra in (("", ""), ("otel=false", ""), ("otel=false", "--otel")):
        if config:
            shell.run_line_magic("swarm", f"config {config}")
        spans.clear()
        with capture_output():
            shell.run_cell_magic("swarm", f"{line} {extra}", "Plan a picnic")
        roots = [s for s in spans.get_finished_spans() if s.parent is None]
        counts.append((len(roots), len(spans.get_finished_spans())))
print(counts)
"""
    done = python(code)
    assert done.returncode == 0, done.stderr
    # 1 run + planner + 2 workers + reducer, each step with its one attempt: 9 spans.
    assert done.stdout.strip().splitlines()[-1] == "[(1, 9), (0, 0), (1, 9)]"


def test_without_opentelemetry_swarmkit_runs_and_otel_true_says_what_to_install() -> None:
    code = BLOCK_OTEL + """
import swarmkit
from swarmkit.errors import ConfigError
from swarmkit.testing import FakeServer

with FakeServer() as server:
    run = swarmkit.run_sync("Plan a picnic", model="gpt-4.1-mini", base_url=server.base_url,
                            api_key_env="FAKE_KEY", history=False, workers=2)
    print(run.status, len(server.requests))
    try:
        swarmkit.run_sync("Plan a picnic", model="gpt-4.1-mini", base_url=server.base_url,
                          api_key_env="FAKE_KEY", history=False, otel=True)
    except ConfigError as exc:
        print(f"ConfigError: {exc}")
    print(len(server.requests))
print("opentelemetry" in sys.modules and sys.modules["opentelemetry"] is None)
"""
    done = python(code)
    assert done.returncode == 0, done.stderr
    # The refused run sent no request: the error comes before anything starts.
    assert done.stdout.splitlines() == [
        "completed 4", f"ConfigError: {INSTALL_HINT}", "4", "True"]
    assert INSTALL_HINT == 'otel=True needs OpenTelemetry: pip install "jupyter-swarmkit[otel]"'


def test_the_cli_refuses_otel_without_opentelemetry_in_one_line() -> None:
    code = BLOCK_OTEL + (
        "from swarmkit.cli import main\n"
        "sys.exit(main(['run', 'a task', '--model', 'gpt-4.1-mini', '--api-key-env', "
        "'FAKE_KEY', '--no-history', '--otel']))\n")
    done = python(code)
    assert done.returncode == 2
    assert done.stderr == f"jswarm: ConfigError: {INSTALL_HINT}\n"
