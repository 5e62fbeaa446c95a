"""The ``%%swarm`` option table and its parser.

Every flag is one :class:`Flag` row in :data:`FLAGS`. A flag either sets a
``SwarmConfig`` option (``target="config"``, the usual case: the parsed string is
handed to ``SwarmConfig.with_options``, which coerces and validates it), becomes a
keyword of ``create_engine`` (``target="engine"``, optionally turned into a value by
``resolve`` with the user namespace, e.g. tool names into tool objects), or is read by
the magic itself (``target="magic"``). Adding a flag is adding one row.
"""

from __future__ import annotations

import argparse
import difflib
import keyword
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from IPython.core.error import UsageError
from IPython.utils.process import arg_split

__all__ = [
    "FLAGS",
    "NOTEBOOK_DEFAULTS",
    "Flag",
    "SwarmArgs",
    "build_parser",
    "name_the_flag",
    "parse_line",
]

# A notebook session caches by default: re-running an edited cell pays only for what changed.
NOTEBOOK_DEFAULTS: dict[str, Any] = {"cache": True}

Target = Literal["config", "engine", "magic"]
# resolve(raw_value, user_namespace) -> the value handed on; raise UsageError on bad input.
Resolver = Callable[[Any, Mapping[str, Any]], Any]


@dataclass(frozen=True, slots=True)
class Flag:
    """One ``%%swarm`` option.

    ``option`` is the public option name it sets (``SwarmConfig.with_options`` name for
    ``config``, keyword name for ``engine``); it defaults to the flag's dest
    (``--max-tokens`` -> ``max_tokens``). A ``switch`` takes no value and sets ``const``.
    """

    name: str
    help: str
    target: Target = "config"
    option: str | None = None
    metavar: str | None = None
    switch: bool = False
    const: Any = True
    resolve: Resolver | None = None

    @property
    def dest(self) -> str:
        return self.name.lstrip("-").replace("-", "_")

    @property
    def key(self) -> str:
        return self.option or self.dest


def _resolve_tools(value: Any, namespace: Mapping[str, Any]) -> Any:
    from .tools import resolve_tools  # loads pydantic: only when --tools is used

    return resolve_tools(value, namespace)


FLAGS: list[Flag] = [
    # models and endpoints
    Flag("--model", "model for every role (a name, 'auto' or 'local')", metavar="NAME"),
    Flag("--planner-model", "model for the planner", metavar="NAME"),
    Flag("--worker-model", "model for the workers", metavar="NAME"),
    Flag("--reducer-model", "model for the reducer", metavar="NAME"),
    Flag("--base-url", "OpenAI-compatible endpoint for every role", metavar="URL"),
    Flag("--api-key-env", "environment variable(s) holding the key, comma-separated",
         metavar="VAR"),
    # the swarm's shape and limits
    Flag("--workers", "at most this many sub-tasks / workers", metavar="N"),
    Flag("--concurrency", "workers running at once", metavar="N"),
    Flag("--budget", "hard spending cap in USD for the whole run", metavar="USD"),
    Flag("--budget-tokens", "hard cap on tokens for the whole run", metavar="N"),
    Flag("--max-tokens", "max completion tokens per call", metavar="N"),
    Flag("--temperature", "sampling temperature (0-2)", metavar="T"),
    Flag("--seed", "sampling seed", metavar="N"),
    Flag("--run-timeout", "cancel the run after this many seconds", metavar="S"),
    Flag("--rpm", "requests per minute, per key at each endpoint", metavar="N"),
    Flag("--tpm", "tokens per minute, per key at each endpoint", metavar="N"),
    # tools
    Flag("--tools", "@swarmkit.tool functions from the notebook, comma-separated",
         target="engine", metavar="A,B", resolve=_resolve_tools),
    Flag("--max-tool-hops", "model turns per worker that may call tools", metavar="N"),
    Flag("--tool-concurrency", "tool calls running at once in one turn", metavar="N"),
    Flag("--max-tool-errors", "tool errors before a worker fails (tools)", metavar="N"),
    Flag("--max-tool-result-chars", "tool results are cut to this many characters",
         metavar="N"),
    Flag("--max-tool-calls-per-turn", "tool calls run per model turn; the rest are refused",
         metavar="N"),
    Flag("--tool-timeout", "seconds one tool call may take", metavar="S"),
    # prompts
    Flag("--system", "system prompt of the workers", option="system_prompt", metavar="TEXT"),
    Flag("--reducer-prompt", "system prompt of the reducer", metavar="TEXT"),
    # the call store
    Flag("--record", "write the run's calls to this cassette (JSON)", metavar="FILE"),
    Flag("--replay", "replay the run from this cassette: no network, the same output",
         metavar="FILE"),
    Flag("--no-cache", "ask the model even where an identical request was answered before",
         option="cache", switch=True, const=False),
    # what the magic does with the run
    Flag("--out", "also store the Run in this variable (the last run is always in _swarm)",
         target="magic", metavar="NAME"),
    Flag("--background", "return a handle at once; %swarm cancel stops the run",
         target="magic", switch=True),
    Flag("--dry-run", "run only the planner and estimate the fan-out's cost",
         target="magic", switch=True),
    Flag("--quiet", "no live dashboard, only the final output", target="magic", switch=True),
    Flag("--no-interpolate", "send the cell as written: no {name} substitution",
         target="magic", switch=True),
    Flag("--help", "show this help", target="magic", switch=True),
]


@dataclass(frozen=True, slots=True)
class SwarmArgs:
    """A parsed ``%%swarm`` line."""

    config_options: dict[str, Any] = field(default_factory=dict)
    engine_options: dict[str, Any] = field(default_factory=dict)
    magic: dict[str, Any] = field(default_factory=dict)

    @property
    def out(self) -> str | None:
        return self.magic.get("out")

    @property
    def background(self) -> bool:
        return bool(self.magic.get("background"))

    @property
    def dry_run(self) -> bool:
        return bool(self.magic.get("dry_run"))

    @property
    def quiet(self) -> bool:
        return bool(self.magic.get("quiet"))

    @property
    def interpolate(self) -> bool:
        return not self.magic.get("no_interpolate")

    @property
    def help(self) -> bool:
        return bool(self.magic.get("help"))


class _Parser(argparse.ArgumentParser):
    """argparse that raises one-line UsageErrors instead of exiting."""

    def error(self, message: str) -> Any:
        raise UsageError(f"%%swarm: {message}; see %%swarm? for the options")

    def exit(self, status: int = 0, message: str | None = None) -> Any:
        raise UsageError(f"%%swarm: {(message or 'bad arguments').strip()}")


def build_parser(flags: list[Flag] | None = None) -> argparse.ArgumentParser:
    parser = _Parser(
        prog="%%swarm",
        add_help=False,
        allow_abbrev=False,  # a later flag must never change what an abbreviation meant
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    for flag in FLAGS if flags is None else flags:
        if flag.switch:
            parser.add_argument(flag.name, dest=flag.dest, action="store_const",
                                const=flag.const, default=None, help=_escape(flag.help))
        else:
            parser.add_argument(flag.name, dest=flag.dest, metavar=flag.metavar or "VALUE",
                                default=None, help=_escape(flag.help))
    return parser


def _escape(help_text: str) -> str:
    return help_text.replace("%", "%%")  # argparse %-formats help ("%swarm cancel")


def parse_line(line: str, namespace: Mapping[str, Any]) -> SwarmArgs:
    """Parse the ``%%swarm`` line; every problem is a one-line UsageError."""
    try:
        argv = arg_split(line, posix=True, strict=True)
    except ValueError as exc:
        raise UsageError(f"%%swarm: cannot split the options ({exc}); check the quotes") from None
    parser = build_parser()
    known, unknown = parser.parse_known_args(argv)
    if unknown:
        raise UsageError(f"%%swarm: {_unknown_message(unknown)}; see %%swarm? for the options")
    parsed = vars(known)
    args = SwarmArgs()
    for flag in FLAGS:
        value = parsed.get(flag.dest)
        if value is None:
            continue
        if flag.resolve is not None:
            value = flag.resolve(value, namespace)
        {"config": args.config_options, "engine": args.engine_options,
         "magic": args.magic}[flag.target][flag.key] = value
    out = args.out
    if out is not None and (not out.isidentifier() or keyword.iskeyword(out)):
        raise UsageError(f"%%swarm: --out needs a Python variable name, got {out!r}")
    if args.dry_run and args.background:
        raise UsageError("%%swarm: --dry-run runs only the planner; drop --background")
    return args


def _unknown_message(unknown: list[str]) -> str:
    """``unknown option --wokers (did you mean --workers?)``: the closest flag by spelling."""
    names = [flag.name for flag in FLAGS]
    options = [arg for arg in unknown if arg.startswith("-")]
    if not options:
        return f"unexpected value {unknown[0]!r}: every value follows its --option"
    typed = options[0].split("=", 1)[0]
    close = difflib.get_close_matches(typed, names, n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]}?)" if close else ""
    return f"unknown option {typed}{hint}"


def name_the_flag(message: str, options: Mapping[str, Any]) -> str:
    """Say the flag the user typed where a config error names its internal field.

    ``max_workers must be a whole number, got 'many'`` for ``--workers many`` becomes
    ``--workers must be a whole number, got 'many'``; ``planner max_tokens ...`` for
    ``--max-tokens 0`` becomes ``--max-tokens ...`` (the flag sets every role). A
    message about no flag in ``options`` comes back as it was.
    """
    given = [flag for flag in FLAGS if flag.target == "config" and flag.key in options]
    word = re.match(r"(?:(?:planner|worker|reducer) )?([a-z][a-z_]*)\b", message)
    if word is None:
        return message
    name = word.group(1)
    exact = [flag for flag in given if name in (flag.key, flag.dest)]
    near = [flag for flag in given
            if name.endswith("_" + flag.key) or name.startswith(flag.key + "_")]
    for flag in exact or near:
        return flag.name + message[word.end():]
    return message
