"""The ``swarmkit`` command: ``swarmkit run "task" ...`` and ``swarmkit demo``."""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
import threading
import time
from collections.abc import Sequence
from decimal import Decimal
from typing import Any, TextIO

from .errors import ConfigError, SwarmError
from .events import BudgetUpdated, Event, PlanReady, RunFinished, WorkerFinished
from .result import Run

__all__ = ["ProgressLine", "main"]

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


def _parser() -> argparse.ArgumentParser:
    # Values stay text here: SwarmConfig coerces and validates them, so a bad one is a
    # ConfigError naming the option (one line, exit 2) like in Python and the magic.
    parser = _Parser(prog="swarmkit", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run a planner → workers → reducer swarm")
    run.add_argument("task", help="the task, or - to read it from stdin")
    run.add_argument("--model", help="model for every role (default: auto)")
    for role in ("planner", "worker", "reducer"):
        run.add_argument(f"--{role}-model", help=f"model for the {role}")
        run.add_argument(f"--{role}-base-url", help=f"endpoint of the {role}")
    for flag, help_text in _RUN_OPTIONS:
        run.add_argument(flag, help=help_text)
    run.add_argument("--json", action="store_true", help="print the Run as JSON")
    demo = sub.add_parser("demo", help="a full swarm on the embedded local model, no key")
    demo.add_argument("--out", default="demo.ipynb", help="notebook to write (with cassette)")
    demo.add_argument("--force", action="store_true",
                      help="replace the notebook and cassette if they exist")
    demo.add_argument("--workers", default=4, help="most sub-tasks the planner may create")
    return parser


# Flags of `swarmkit run` that are SwarmConfig options of the same name.
_RUN_OPTIONS = (
    ("--workers", "most sub-tasks the planner may create"),
    ("--concurrency", "workers running at once"),
    ("--budget", "hard USD cap for the whole run"),
    ("--max-tokens", "max output tokens per call"),
    ("--temperature", "sampling temperature (0-2)"),
    ("--seed", "sampling seed"),
    ("--base-url", "any OpenAI-compatible endpoint"),
    ("--api-key-env", "name(s) of the env var(s) holding the key, comma-separated"),
    ("--rpm", "requests per minute allowed per key"),
    ("--tpm", "tokens per minute allowed per key"),
    ("--call-timeout", "seconds one model call may take"),
    ("--run-timeout", "cancel the run after this many seconds"),
)


def _run_in_thread_loop(task: str, options: dict[str, Any], stream: TextIO) -> Run:
    """Run with Ctrl-C turned into a clean cancel that keeps the finished workers."""
    from .api import create_engine

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
    names = ["model", *(f"{role}_{field}" for role in ("planner", "worker", "reducer")
                        for field in ("model", "base_url"))]
    names += [flag[2:].replace("-", "_") for flag, _ in _RUN_OPTIONS]
    options = {name: getattr(args, name) for name in names}
    run = _run_in_thread_loop(task, options, sys.stderr)
    if args.json:
        sys.stdout.write(run.to_json() + "\n")
    else:
        _print_run(run, sys.stdout)
    return _exit_code(run)


def _cmd_demo(args: argparse.Namespace) -> int:
    from .export.exporter import export_paths, export_run
    from .export.writer import existing

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

