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
from .run import Run

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


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="swarmkit", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run a planner → workers → reducer swarm")
    run.add_argument("task", help="the task, or - to read it from stdin")
    run.add_argument("--model", help="model for every role (default: auto)")
    for role in ("planner", "worker", "reducer"):
        run.add_argument(f"--{role}-model", help=f"model for the {role}")
    run.add_argument("--workers", type=int, help="most sub-tasks the planner may create")
    run.add_argument("--concurrency", type=int, help="workers running at once")
    run.add_argument("--budget", help="hard USD cap for the whole run")
    run.add_argument("--max-tokens", type=int, help="max output tokens per call")
    run.add_argument("--temperature", type=float)
    run.add_argument("--seed", type=int)
    run.add_argument("--base-url", help="any OpenAI-compatible endpoint")
    run.add_argument("--api-key-env", help="name(s) of the env var(s) holding the key")
    run.add_argument("--rpm", type=float, help="requests per minute allowed per key")
    run.add_argument("--tpm", type=float, help="tokens per minute allowed per key")
    run.add_argument("--json", action="store_true", help="print the Run as JSON")
    demo = sub.add_parser("demo", help="a full swarm on the embedded local model, no key")
    demo.add_argument("--out", default="demo.ipynb", help="notebook to write (with cassette)")
    demo.add_argument("--force", action="store_true",
                      help="replace the notebook and cassette if they exist")
    demo.add_argument("--workers", type=int, default=4)
    return parser


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
    options = {
        "model": args.model,
        "planner_model": args.planner_model,
        "worker_model": args.worker_model,
        "reducer_model": args.reducer_model,
        "workers": args.workers,
        "concurrency": args.concurrency,
        "budget": args.budget,
        "max_tokens": args.max_tokens,
        "temperature": args.temperature,
        "seed": args.seed,
        "base_url": args.base_url,
        "api_key_env": args.api_key_env,
        "rpm": args.rpm,
        "tpm": args.tpm,
    }
    run = _run_in_thread_loop(task, options, sys.stderr)
    if args.json:
        sys.stdout.write(run.to_json() + "\n")
    else:
        _print_run(run, sys.stdout)
    return _exit_code(run)


def _cmd_demo(args: argparse.Namespace) -> int:
    from .export import export_paths, export_run
    from .notebook import existing

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

