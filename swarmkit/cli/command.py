"""The ``jswarm`` command (also ``python -m swarmkit``): runs, the demo and the history.

Ctrl-C is honoured from the moment :func:`main` starts: before a run exists it stops the
command with one line and exit status 130; during a run it cancels the run cleanly (the
finished workers are kept, in the history too, so ``jswarm resume RUN`` continues it).
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import shlex
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from .._version import __version__
from ..api.entry import resumed_config
from ..api.result import Run
from ..config import SwarmConfig
from ..config.flagnames import closest, name_the_flag, unknown_option
from ..config.wording import counted
from ..display import RunListing
from ..errors import ConfigError, StoreError, SwarmError
from ..export.exporter import export_paths, export_run
from ..export.notebookfile import existing
from ..store import History
from ..store.rerun import rerun_endpoints, stored_config
from .confirm import YES_FLAG, Held, confirm_plan, needs_confirming
from .exitcodes import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_TIMED_OUT,
    EXIT_USAGE,
    exit_codes_text,
)
from .resumehint import resume_command
from .runargs import PRICE_FLAG, add_run_options, run_options, typed_flags
from .terminal import CTRL_C, Interrupted, execute, exit_code, exit_now_if_stuck

__all__ = ["main"]

PROG = "jswarm"
DEMO_TASK = "Give three practical tips for writing clear technical documentation."
DEMO_NOTE = ("Recorded by `jswarm demo` on the embedded local model (SmolLM2-135M-Instruct "
             "served by llama.cpp): a 135M-parameter model, so expect modest answers.")
# The magic's subcommands that errors from the shared layers name, in this command's words.
_MAGIC_WORDS = re.compile(r"%swarm (history|show|resume|export)\b")
# A damaged history's fix, as Python spells it (store.database, store.history).
_RESET_HINT = re.compile(r"swarmkit\.store\.History\.reset\('([^']*)'\)")
# A missing price's fix, as the magic and Python spell it (engine.prices.require).
_PRICE_HINT = re.compile(r"%swarm prices (\S+) IN OUT or prices=\[\([^]]*\)\]")


class _Parser(argparse.ArgumentParser):
    """argparse whose usage errors are one line on stderr and exit status 2."""

    def error(self, message: str) -> Any:
        typed = re.search(r"invalid choice: '([^']*)'", message)
        commands = [name for action in self._actions
                    if isinstance(action, argparse._SubParsersAction) for name in action.choices]
        if typed and (near := closest(typed.group(1), commands)):
            message += f" (did you mean {near}?)"
        sys.stderr.write(f"{self.prog}: {message}; see {self.prog} --help\n")
        raise SystemExit(EXIT_USAGE)


DESCRIPTION = """\
Planner -> workers -> reducer LLM swarms from a terminal: the same runs, options and
history as swarmkit's %%swarm magic in Jupyter."""
EPILOG = f"""\
{PROG} run --help lists a run's options (the same as the magic's); {PROG} COMMAND --help
any command's. The history is .swarmkit/history.db under the current directory
(--history-path or $SWARMKIT_HISTORY for another).
{exit_codes_text()}"""
RUN_EPILOG = f"""\
Every option is one of swarmkit.run's (and %swarm config's) options, checked the same
way: a bad value is one line on stderr and exit status 2. The model, endpoint and key
variable also have per-role flags (--planner-model, --worker-base-url, ...).
--tools takes MODULE:NAME specs, comma-separated: NAME is a @swarmkit.tool function (or
a list of them) in MODULE, imported from the current directory or the installed
packages (e.g. --tools mytools:lookup,mytools:search).
Ctrl-C cancels the run and keeps its finished workers: {PROG} resume RUN continues it.
{exit_codes_text()}"""
HISTORY_HELP = "the SQLite history file (default .swarmkit/history.db, or $SWARMKIT_HISTORY)"


def _parser() -> argparse.ArgumentParser:
    # Values stay text here: SwarmConfig coerces and validates them, so a bad one is a
    # ConfigError naming the flag (one line, exit 2) like in Python and the magic.
    raw = argparse.RawDescriptionHelpFormatter
    parser = _Parser(prog=PROG, description=DESCRIPTION, epilog=EPILOG, formatter_class=raw)
    parser.add_argument("--version", action="version",
                        version=f"{PROG} {__version__} (swarmkit, jupyter-swarmkit on PyPI)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                title="commands")

    def command(name: str, summary: str, **extra: Any) -> argparse.ArgumentParser:
        return sub.add_parser(name, help=summary, description=summary, **extra)

    run = command("run", "run a planner -> workers -> reducer swarm on a task",
                  epilog=RUN_EPILOG, formatter_class=raw)
    run.add_argument("task", nargs="?", help="the task, or - to read it from stdin (with "
                     "--resume: the stored one when left out)")
    add_run_options(run)
    run.add_argument("--json", action="store_true", help="print the Run as JSON")
    run.add_argument(YES_FLAG, action="store_true", help="run a plan held by "
                     "--confirm-over without asking (no terminal needed)")
    demo = command("demo", "a full swarm on the embedded local model, no key; writes a "
                   "notebook that replays it")
    demo.add_argument("--out", default="demo.ipynb", help="notebook to write (with cassette)")
    demo.add_argument("--force", action="store_true",
                      help="replace the notebook and cassette if they exist")
    demo.add_argument("--workers", default=4, help="most sub-tasks the planner may create")
    history = command("history", "list the most recent runs, newest first (--reset: move "
                      "a damaged history aside)")
    history.add_argument("count", nargs="?", type=int, default=10, metavar="N",
                         help="how many runs to list (default 10)")
    history.add_argument("--reset", action="store_true",
                         help="move the history file aside (renamed, never deleted); the "
                              "next run starts a new one")
    show = command("show", "show a run from the history: its tables and answer")
    show.add_argument("run", metavar="RUN", help="a run id, or its first characters")
    resume = command("resume", "continue a run that did not finish: only the missing "
                     "calls are made")
    resume.add_argument("run", metavar="RUN", help="a run id, or its first characters")
    resume.add_argument("--base-url", help="send its calls here instead of where it ran")
    resume.add_argument("--api-key-env", metavar="VAR", help="the key's variable(s) instead")
    resume.add_argument("--json", action="store_true", help="print the Run as JSON")
    export = command("export", "write a run as a notebook that replays it offline")
    export.add_argument("run", metavar="RUN", help="a run id, or its first characters")
    export.add_argument("path", metavar="PATH.ipynb", help="the notebook to write")
    export.add_argument("--force", action="store_true",
                        help="replace the notebook and cassette if they exist")
    for each in (history, show, resume, export):
        each.add_argument("--history-path", metavar="FILE", help=HISTORY_HELP)
    return parser


def _finish(run: Run, cancelled: str | None, as_json: bool) -> int:
    sys.stdout.write(run.to_json() + "\n" if as_json else run.tables().text())
    code = exit_code(run, cancelled)
    if code in (EXIT_INTERRUPTED, EXIT_TIMED_OUT):
        why = "interrupted" if code == EXIT_INTERRUPTED else "timed out (--run-timeout)"
        more = (f"; {resume_command(PROG, run.run_id, run.config)} continues it"
                if run.plan and run.config.get("history", True) else "")
        sys.stderr.write(f"{PROG}: {why}{more}\n")
    return code


def _cmd_run(args: argparse.Namespace) -> int:
    if args.task is None and args.resume is None:
        raise ConfigError("run: give the task (or - to read it from stdin), or --resume RUN "
                          "to continue an earlier run")
    task = sys.stdin.read() if args.task == "-" else args.task or ""
    options = run_options(args)
    if needs_confirming(options):  # --confirm-over: the planner, then maybe a question
        confirmed = confirm_plan(task, options, yes=args.yes, stdin=sys.stdin,
                                 stream=sys.stderr)
        if isinstance(confirmed, Held):
            sys.stderr.write(f"{PROG}: {confirmed.message}\n")
            return EXIT_USAGE
        made, approved_by = confirmed
        task, options = made.task, made.run_options(approved_by)
    return _finish(*execute(task, options, sys.stderr), args.json)


def _cmd_demo(args: argparse.Namespace) -> int:
    out = Path(args.out)
    if out.suffix != ".ipynb":  # checked before the demo runs, not after
        raise ConfigError(f"demo: --out must be a .ipynb path, not {args.out!r} (e.g. "
                          f"--out {out.with_suffix('.ipynb')})")
    if not out.parent.is_dir():
        raise ConfigError(f"demo: --out {args.out}: there is no folder {str(out.parent)!r}; "
                          "create it first")
    if not args.force and (taken := existing(export_paths(args.out))):
        sys.stderr.write(f"{PROG}: not running the demo: {taken}; pass --force to "
                         "replace it, or --out OTHER.ipynb\n")
        return EXIT_USAGE
    sys.stderr.write("starting the embedded model (SmolLM2-135M, llama.cpp's server) ...\n")
    sys.stderr.flush()
    options = {
        "model": "local",
        "workers": args.workers,
        # Every worker at once: the embedded server has a slot for each (up to 8).
        "concurrency": args.workers,
        "max_tokens": 256,
        # Room for the plan's JSON: four tasks of up to 24 words cut at 256 tokens are no
        # JSON, and the planner then goes down its ladder to plain text.
        "planner_max_tokens": 512,
        "reducer_max_tokens": 512,
        "temperature": 0.2,
        "seed": 7,
    }
    run, cancelled = execute(DEMO_TASK, options, sys.stderr)
    sys.stdout.write(f"task: {DEMO_TASK}\n\n")  # what the tables below answer
    code = _finish(run, cancelled, as_json=False)
    if run.status in ("completed", "partial"):
        # Every run is recorded in memory, so the export needs no cassette file first.
        result = export_run(run, args.out, title="jswarm demo", note=DEMO_NOTE,
                            overwrite=args.force)
        cassettes = ", ".join(str(path) for path in result.cassettes)
        sys.stdout.write(f"\nwrote {result.notebook} and {cassettes}; replay it offline with "
                         f"pytest --nbval {result.notebook}\n")
    return code


def _history_config(args: argparse.Namespace) -> SwarmConfig:
    return SwarmConfig.from_env(os.environ).with_options(history_path=args.history_path)


def _cmd_history(args: argparse.Namespace) -> int:
    path = _history_config(args).history_file()
    if args.reset:
        if not path.exists():
            sys.stdout.write(f"no history at {path}; nothing to move\n")
            return EXIT_OK
        moved = History.reset(path)
        sys.stdout.write(f"moved {path} aside to {moved}; the next run starts a new "
                         "history\n")
        return EXIT_OK
    if args.count < 1:
        raise ConfigError(f"history: N must be at least 1, got {args.count}")
    if not path.is_file():
        sys.stdout.write(RunListing([], str(path)).text() + "\n")
        return EXIT_OK
    with History(path) as history:
        sys.stdout.write(RunListing(history.recent(args.count), str(path)).text() + "\n")
    return EXIT_OK


def _stored(args: argparse.Namespace) -> tuple[SwarmConfig, Run]:
    config = _history_config(args)
    path = config.history_file()
    if not path.is_file():
        raise ConfigError(f"no history at {path} yet; run a swarm first, or pass "
                          "--history-path FILE")
    with History(path) as history:
        return config, Run.of(history.load_run(args.run))


def _cmd_show(args: argparse.Namespace) -> int:
    _, run = _stored(args)
    sys.stdout.write(run.tables().text())
    return EXIT_OK


def _cmd_resume(args: argparse.Namespace) -> int:
    # The same steps as %swarm resume: the stored task, options and plan; the calls
    # answered before are served from the history, so only the missing ones are made.
    trusted, past = _stored(args)
    try:
        config = stored_config(past, base_url=args.base_url, api_key_env=args.api_key_env,
                               trusted=trusted)
    except StoreError as exc:  # a refusal before any call, like a bad option: exit 2
        raise ConfigError(str(exc)) from None
    config = resumed_config(replace(config, history_path=trusted.history_path), past,
                            past.task)
    sys.stderr.write(f"{PROG} resume: run {past.run_id} ({past.status}, "
                     f"{counted(len(past.plan), 'sub-task')}); {rerun_endpoints(config)}\n")
    return _finish(*execute(past.task, {"config": config}, sys.stderr), args.json)


def _cmd_export(args: argparse.Namespace) -> int:
    if not args.path.endswith(".ipynb"):
        raise ConfigError(f"export: PATH must end in .ipynb, got {args.path!r}")
    config, run = _stored(args)
    if not args.force and (taken := existing(export_paths(args.path))):
        raise ConfigError(f"export: not exporting: {taken}; add --force to replace it")
    result = export_run(run, args.path, history_path=config.history_file(),
                        overwrite=args.force)
    cassettes = ", ".join(str(path) for path in result.cassettes)
    sys.stdout.write(f"wrote {result.notebook} and {cassettes}; replay it offline with "
                     f"pytest --nbval {result.notebook}\n")
    return EXIT_OK


_COMMANDS = {"run": _cmd_run, "demo": _cmd_demo, "history": _cmd_history, "show": _cmd_show,
             "resume": _cmd_resume, "export": _cmd_export}


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = _parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # a mistyped flag: name the one meant, like the magic does
        commands = next(action.choices for action in parser._actions
                        if isinstance(action, argparse._SubParsersAction))
        sub = commands[args.command]
        flags = [flag for action in sub._actions for flag in action.option_strings]
        sub.error(unknown_option(unknown, flags))
    return args


def _say(message: str) -> str:
    """An error (or a warning) from the shared layers in this command's words."""
    message = _PRICE_HINT.sub(rf"{PRICE_FLAG} \1 IN OUT", message)
    message = _RESET_HINT.sub(lambda m: _reset_words(m.group(1)), message)
    return _MAGIC_WORDS.sub(lambda m: f"{PROG} {m.group(1)}", message)


def _reset_words(path: str) -> str:
    """``jswarm history --reset`` for the history at ``path`` (its path when it is not
    the one the command uses by default)."""
    default = SwarmConfig.from_env(os.environ).history_file().absolute()
    given = "" if Path(path).absolute() == default else f" --history-path {shlex.quote(path)}"
    return f"{PROG} history --reset{given}"


class _TerminalWords(logging.Filter):
    """swarmkit's warnings while the command runs, in this command's words too."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg, record.args = _say(record.getMessage()), None
        return True


def main(argv: Sequence[str] | None = None) -> int:
    """The command; returns its exit status (see ``EXIT_CODES``)."""
    CTRL_C.install()
    words = _TerminalWords()
    logging.getLogger("swarmkit").addFilter(words)
    try:
        args = _parse(argv)
        try:
            return _COMMANDS[args.command](args)
        except ConfigError as exc:
            message = name_the_flag(str(exc), typed_flags(args)) if args.command == "run" else exc
            sys.stderr.write(f"{PROG}: ConfigError: {_say(str(message))}\n")
            return EXIT_USAGE
        except SwarmError as exc:
            sys.stderr.write(f"{PROG}: {type(exc).__name__}: {_say(str(exc))}\n")
            return EXIT_FAILED
    except (KeyboardInterrupt, Interrupted):
        sys.stderr.write(f"{PROG}: interrupted\n")
        exit_now_if_stuck()
        return EXIT_INTERRUPTED
    finally:
        logging.getLogger("swarmkit").removeFilter(words)
        CTRL_C.restore()

