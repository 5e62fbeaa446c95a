"""The ``swarmkit`` command: ``swarmkit run "task" ...`` and ``swarmkit demo``."""

from __future__ import annotations

import argparse
import asyncio
import importlib
import os
import signal
import sys
import threading
import time
from collections.abc import Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any, TextIO

from .api import create_engine
from .config import options as option_table
from .errors import ConfigError, SwarmError
from .events import BudgetUpdated, Event, PlanReady, RunFinished, WorkerFinished
from .export.exporter import export_paths, export_run
from .export.writer import existing
from .result import Run
from .tools import Tool

__all__ = ["ProgressLine", "import_tools", "main", "read_schema_file"]

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_CANCELLED = 0, 1, 2, 130
DEMO_TASK = "Give three practical tips for writing clear technical documentation."
DEMO_NOTE = ("Recorded by `swarmkit demo` on the embedded local model (SmolLM2-135M-Instruct "
             "served by llama.cpp): a 135M-parameter model, so expect modest answers.")


class ProgressLine:
    """A one-line terminal progress sink: workers done/total and spend against the cap."""

    def __init__(self, stream: TextIO, *, min_interval: float = 0.1) -> None:
        self.stream = stream
        self.interactive = stream.isatty()
        self.min_interval = min_interval
        self.total = 0
        self.done = 0
        self.spent = Decimal(0)
        self.cap: Decimal | None = None
        self._last = 0.0

    def on_event(self, event: Event) -> None:
        match event:
            case PlanReady():
                self.total = len(event.tasks)
            case WorkerFinished():
                self.done += 1
            case BudgetUpdated():
                self.spent, self.cap = event.spent_usd, event.cap_usd
            case RunFinished():
                self._draw(force=True, final=True)
                return
            case _:
                return
        self._draw()

    def _draw(self, *, force: bool = False, final: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._last < self.min_interval:
            return
        self._last = now
        spend = f"${self.spent:.6f}" + (f" of ${self.cap}" if self.cap is not None else "")
        line = f"workers {self.done}/{self.total or '?'} · spent {spend}"
        if self.interactive:
            self.stream.write("\r" + line + ("\n" if final else ""))
        elif final:
            self.stream.write(line + "\n")
        self.stream.flush()


class _Parser(argparse.ArgumentParser):
    """argparse whose usage errors are one line on stderr and exit status 2."""

    def error(self, message: str) -> Any:
        sys.stderr.write(f"{self.prog}: {message}; see {self.prog} --help\n")
        raise SystemExit(EXIT_USAGE)


RUN_EPILOG = """\
Every option is one of swarmkit.run's (and %swarm config's) options, checked the same
way: a bad value is one line on stderr and exit status 2. The model, endpoint and key
variable also have per-role flags (--planner-model, --worker-base-url, ...).
--tools takes MODULE:NAME specs, comma-separated: NAME is a @swarmkit.tool function (or
a list of them) in MODULE, imported from the current directory or the installed
packages (e.g. --tools mytools:lookup,mytools:search).
exit status: 0 an answer, 1 the run failed, 2 a bad option or value, 130 interrupted."""
SCHEMA_FILE_FLAG = "--schema-file"
SCHEMA_FILE_HELP = "a JSON schema file each worker's reply must match (typed outputs)"
TOOLS_HELP = "tools for the workers: MODULE:NAME of @swarmkit.tool functions, comma-separated"


def _parser() -> argparse.ArgumentParser:
    # Values stay text here: SwarmConfig coerces and validates them, so a bad one is a
    # ConfigError naming the option (one line, exit 2) like in Python and the magic.
    parser = _Parser(prog="swarmkit", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run a planner → workers → reducer swarm",
                         epilog=RUN_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    run.add_argument("task", help="the task, or - to read it from stdin")
    for row in option_table.OPTIONS:
        if not row.on("cli"):
            continue
        if row.kind == "bool":
            run.add_argument(row.flag_name, dest=row.name, default=None,
                             action=argparse.BooleanOptionalAction, help=_escape(row.help))
        elif row.kind == "tools":
            run.add_argument(row.flag_name, dest=row.name, metavar="MODULE:NAME,...",
                             help=TOOLS_HELP)
        elif row.kind == "schema":
            run.add_argument(SCHEMA_FILE_FLAG, dest=row.name, metavar="PATH",
                             help=SCHEMA_FILE_HELP)
        else:
            for flag, name, help_text in row.flags("cli"):
                run.add_argument(flag, dest=name, metavar=row.metavar, help=_escape(help_text))
    run.add_argument("--json", action="store_true", help="print the Run as JSON")
    demo = sub.add_parser("demo", help="a full swarm on the embedded local model, no key")
    demo.add_argument("--out", default="demo.ipynb", help="notebook to write (with cassette)")
    demo.add_argument("--force", action="store_true",
                      help="replace the notebook and cassette if they exist")
    demo.add_argument("--workers", default=4, help="most sub-tasks the planner may create")
    return parser


def _escape(help_text: str) -> str:
    return help_text.replace("%", "%%")  # argparse %-formats help


def _run_options(args: argparse.Namespace) -> dict[str, Any]:
    """The options the command line set, by public name; ``tools`` imported."""
    names = [name for row in option_table.OPTIONS if row.on("cli")
             for name in (row.names() if "cli" in row.role_flags else (row.name,))]
    options = {name: getattr(args, name) for name in names if getattr(args, name) is not None}
    if "tools" in options:
        options["tools"] = import_tools(options["tools"])
    if "output_type" in options:
        options["output_type"] = read_schema_file(options["output_type"])
    return options


def read_schema_file(path: str) -> str:
    """The text of ``--schema-file PATH`` (SwarmConfig checks it is a JSON schema)."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{SCHEMA_FILE_FLAG} {path}: cannot read it ({exc})") from None


def import_tools(specs: str) -> list[Any]:
    """``"mod:lookup,mod:search"`` -> the tools those names hold; a ConfigError for a
    spec that is not ``MODULE:NAME``, cannot be imported, or is not a tool."""
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # like `python -m`: the current directory's modules
    chosen: list[Any] = []
    for spec in [part.strip() for part in specs.split(",") if part.strip()] or [""]:
        module_name, colon, name = spec.partition(":")
        if not colon or not module_name or not name:
            raise ConfigError(f"--tools takes MODULE:NAME, got {spec!r}")
        try:
            found = getattr(importlib.import_module(module_name), name)
        except (ImportError, AttributeError) as exc:
            raise ConfigError(f"--tools {spec}: {exc}") from None
        found = list(found) if isinstance(found, list | tuple) else [found]
        for tool in found:
            if not isinstance(tool, Tool):
                raise ConfigError(f"--tools {spec}: is a {type(tool).__name__}, not a tool; "
                                  "decorate the function with @swarmkit.tool")
        chosen += found
    return chosen


def _run_in_thread_loop(task: str, options: dict[str, Any], stream: TextIO) -> Run:
    """Run with Ctrl-C turned into a clean cancel that keeps the finished workers."""
    progress = ProgressLine(stream)
    loop = asyncio.new_event_loop()
    holder: dict[str, Any] = {}

    async def main() -> Run:
        engine = await create_engine(sinks=[progress], **options)
        holder["engine"] = engine
        try:
            return await engine.execute(task)
        finally:
            await engine.caller.aclose()

    def cancel(signum: int, frame: Any) -> None:
        engine = holder.get("engine")
        if engine is not None:
            loop.call_soon_threadsafe(engine.cancel, "interrupt")

    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGINT, cancel)
    try:
        return loop.run_until_complete(main())
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
        loop.close()


def _print_run(run: Run, out: TextIO) -> None:
    out.write(run.tables().text())


def _exit_code(run: Run) -> int:
    if run.status == "cancelled":
        return EXIT_CANCELLED
    return EXIT_FAILED if run.status == "failed" else EXIT_OK


def _cmd_run(args: argparse.Namespace) -> int:
    task = sys.stdin.read() if args.task == "-" else args.task
    options = _run_options(args)
    run = _run_in_thread_loop(task, options, sys.stderr)
    if args.json:
        sys.stdout.write(run.to_json() + "\n")
    else:
        _print_run(run, sys.stdout)
    return _exit_code(run)


def _cmd_demo(args: argparse.Namespace) -> int:
    if not args.force and (taken := existing(export_paths(args.out))):
        sys.stderr.write(f"swarmkit: not running the demo: {taken}; pass --force to "
                         "replace it, or --out OTHER.ipynb\n")
        return EXIT_USAGE
    sys.stderr.write("starting the embedded model (SmolLM2-135M, llama.cpp) ...\n")

    options = {
        "model": "local",
        "workers": args.workers,
        "concurrency": 1,
        "max_tokens": 256,
        "reducer_max_tokens": 512,
        "temperature": 0.2,
        "seed": 7,
    }
    run = _run_in_thread_loop(DEMO_TASK, options, sys.stderr)
    _print_run(run, sys.stdout)
    if run.status in ("completed", "partial"):
        # Every run is recorded in memory, so the export needs no cassette file first.
        result = export_run(run, args.out, title="swarmkit demo", note=DEMO_NOTE,
                            overwrite=args.force)
        cassettes = ", ".join(str(path) for path in result.cassettes)
        sys.stdout.write(f"\nwrote {result.notebook} and {cassettes}; replay it offline with "
                         f"pytest --nbval {result.notebook}\n")
    return _exit_code(run)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "run":
            return _cmd_run(args)
        return _cmd_demo(args)
    except SwarmError as exc:
        sys.stderr.write(f"swarmkit: {type(exc).__name__}: {exc}\n")
        return EXIT_USAGE if isinstance(exc, ConfigError) else EXIT_FAILED
    except KeyboardInterrupt:
        return EXIT_CANCELLED

