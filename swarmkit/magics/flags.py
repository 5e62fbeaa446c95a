"""The ``%%swarm`` flags and their parser.

The flags that set an option of the run are built from the option table
(``swarmkit.config.options``): a row on the ``magic`` surface is a flag whose text goes
to ``SwarmConfig.with_options`` (``target="config"``), which coerces and validates it;
the ``tools`` row is a ``create_engine`` keyword (``target="engine"``) resolved with the
user namespace, and a ``schema`` row's NAME is looked up there too. The flags the
magic itself reads (``--out``, ``--background``, ...) are the rows of
:data:`MAGIC_FLAGS`. :data:`FLAGS` is both, in the order of the help.
"""

from __future__ import annotations

import argparse
import keyword
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from IPython.core.error import UsageError
from IPython.utils.process import arg_split

from ..api.entry import Planned
from ..comparison.variants import MAX_VARIANTS
from ..config import options as option_table
from ..config.flagnames import name_the_flag as shared_name_the_flag
from ..config.flagnames import unknown_option
from ..config.wording import kind_of
from ..engine.scoring import Check
from ..errors import ConfigError
from .tools import resolve_tools

__all__ = [
    "COMPARE_WHY",
    "FLAGS",
    "MAGIC_FLAGS",
    "NOTEBOOK_DEFAULTS",
    "Flag",
    "SwarmArgs",
    "build_parser",
    "name_the_flag",
    "parse_line",
    "resolve_schema",
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
    repeat: bool = False

    @property
    def dest(self) -> str:
        return self.name.lstrip("-").replace("-", "_")

    @property
    def key(self) -> str:
        return self.option or self.dest


def _table_flags() -> list[Flag]:
    """The flags of the option table's ``magic`` rows: a ``bool`` row is a ``--no-``
    switch (its default is on in a notebook), a ``--<name>`` switch, or both (its
    ``magic_switch``); the ``tools`` row an engine keyword."""
    flags: list[Flag] = []
    for row in option_table.OPTIONS:
        if not row.on("magic"):
            continue
        if row.kind == "bool":
            if row.magic_switch != "off":
                flags.append(Flag(row.flag_name, row.help, option=row.name, switch=True))
            if row.magic_switch != "on":
                flags.append(Flag("--no-" + row.flag_name[2:], row.no_help or row.help,
                                  option=row.name, switch=True, const=False))
        elif row.kind == "tools":
            flags.append(Flag(row.flag_name, row.help, target="engine", option=row.name,
                              metavar=row.metavar, resolve=resolve_tools))
        elif row.kind == "tasks":
            flags.append(Flag(row.flag_name, row.help, option=row.name, metavar=row.metavar,
                              resolve=_given_tasks))
        elif row.kind == "run":
            flags.append(Flag(row.flag_name, row.help, target="engine", option=row.name,
                              metavar=row.metavar, resolve=_earlier_run))
        elif row.kind == "schema":
            flags.append(Flag(row.flag_name, row.help, option=row.name, metavar=row.metavar,
                              resolve=resolve_schema))
        elif row.kind == "checks":
            flags.append(Flag(row.flag_name, row.help, target="engine", option=row.name,
                              metavar=row.metavar, resolve=_checks))
        elif row.name == "rubric":
            flags.append(Flag(row.flag_name, row.help, option=row.name, metavar=row.metavar,
                              resolve=_rubric))
        else:
            flags += [Flag(flag, help_text, option=name, metavar=row.metavar)
                      for flag, name, help_text in row.flags("magic")]
    return flags


def _given_tasks(name: str, namespace: Mapping[str, Any]) -> Any:
    """``--tasks NAME``: the notebook's value (its type is checked with the template)."""
    if not name.isidentifier() or name not in namespace:
        raise UsageError(
            f"%%swarm: --tasks {name} names no variable in the notebook; define {name} as "
            "a list of strings, a pandas Series, or a DataFrame with --task-template"
        )
    return namespace[name]


def _checks(value: str, namespace: Mapping[str, Any]) -> list[Check]:
    """``--check short,has_paris``: the checks those names hold in the notebook (a
    ``swarmkit.Check``, or a function whose first parameter says what it takes)."""
    names = [name.strip() for name in str(value).split(",") if name.strip()]
    if not names:
        raise UsageError("%%swarm: --check needs names, e.g. --check short,has_paris")
    chosen = []
    for name in names:
        found = namespace.get(name) if name.isidentifier() else None
        if found is None or not (isinstance(found, Check) or callable(found)):
            what = "no such name" if found is None else f"{kind_of(found)}"
            raise UsageError(
                f"%%swarm: --check {name}: {what} in the notebook; define a function "
                f"def {name if name.isidentifier() else 'check'}(answer): ... or "
                f"{name if name.isidentifier() else 'check'} = swarmkit.Check.contains(...)")
        try:
            chosen.append(Check.of(found))
        except ConfigError as exc:
            raise UsageError(f"%%swarm: --check {name}: {exc}") from None
    return chosen


def _rubric(value: str, namespace: Mapping[str, Any]) -> str:
    """``--rubric TEXT``, or ``--rubric @name``: the text a notebook variable holds."""
    if not value.startswith("@"):
        return value
    name = value[1:]
    found = namespace.get(name) if name.isidentifier() else None
    if not isinstance(found, str) or not found.strip():
        what = ("no such name" if found is None else
                "an empty text" if isinstance(found, str) else f"{kind_of(found)}")
        raise UsageError(f"%%swarm: --rubric {value}: {what} in the notebook; define "
                         f"{name if name.isidentifier() else 'rubric'} = 'what a good answer "
                         "does' first")
    return found


def _earlier_run(name: str, namespace: Mapping[str, Any]) -> Any:
    """``--plan-from RUN``: a Run in the notebook, else a run id (prefix) for the history."""
    value = namespace.get(name) if name.isidentifier() else None
    if isinstance(value, Planned):
        return value  # a Run, or a --dry-run's result
    if value is not None:
        raise UsageError(
            f"%%swarm: --plan-from {name} is {kind_of(value)}, not a Run or a dry "
            "run; name one (e.g. _swarm or an --out variable) or a run id from %swarm "
            "history"
        )
    return name


def resolve_schema(value: str, namespace: Mapping[str, Any]) -> Any:
    """``--schema NAME``: the pydantic model class or JSON schema dict named NAME."""
    name = value.strip()
    if name not in namespace:
        raise UsageError(f"%%swarm: --schema {name}: no such name in the notebook; define a "
                         "pydantic model class or a JSON schema dict first")
    return namespace[name]


def _cap(value: str, namespace: Mapping[str, Any]) -> int:
    """``--max-variants N``: a whole number of at least 2."""
    try:
        cap = int(value)
    except ValueError:
        cap = 0
    if cap < 2:
        raise UsageError(f"%%swarm: --max-variants must be a whole number of at least 2, "
                         f"got {value!r}")
    return cap


# What the magic does with the run: not options of the run, so not in the option table.
MAGIC_FLAGS: tuple[Flag, ...] = (
    Flag("--out", "also store the Run in this variable (the last run is always in _swarm)",
         target="magic", metavar="NAME"),
    Flag("--background", "return a handle at once; %swarm cancel stops the run",
         target="magic", switch=True),
    Flag("--dry-run", "run only the planner and estimate the fan-out's cost",
         target="magic", switch=True),
    Flag("--review", "run only the planner, then show its plan to edit, with the forecast, "
         "and buttons to run it, plan again or cancel", target="magic", switch=True),
    Flag("--compare", "run the cell once per value, side by side: KEY=V1,V2 (an option "
         "name; @name takes a value from the notebook); repeat it for a grid",
         target="magic", metavar="KEY=V1,V2", repeat=True, resolve=lambda v, _ns: tuple(v)),
    Flag("--max-variants", f"refuse a --compare of more than N variants (default "
         f"{MAX_VARIANTS})", target="magic", metavar="N", resolve=_cap),
    Flag("--quiet", "no live dashboard, only the final output", target="magic", switch=True),
    Flag("--no-interpolate", "send the cell as written: no {name} substitution",
         target="magic", switch=True),
    Flag("--help", "show this help", target="magic", switch=True),
)

FLAGS: list[Flag] = [*_table_flags(), *MAGIC_FLAGS]

# Why a --compare cell is not reviewed (--review, confirm_over): its variants may each
# make another plan; one reviewed plan can run in every variant instead.
COMPARE_WHY = ("its variants may each make another plan; review one with --review, then "
               "--compare ... --plan-from _swarm runs that approved plan in every variant")

# Why a comparison is neither recorded into one cassette nor replayed from one.
_NOT_COMPARED = {
    "record": "each variant is kept in the history; drop --record (export the comparison "
              "to replay it)",
    "replay": "a comparison replays from its exported notebook; drop --replay",
}


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
    def review(self) -> bool:
        return bool(self.magic.get("review"))

    @property
    def compare(self) -> tuple[str, ...]:
        """The ``--compare KEY=V1,V2`` texts, in order (empty: a single run)."""
        return tuple(self.magic.get("compare", ()))

    @property
    def max_variants(self) -> int:
        return int(self.magic.get("max_variants", MAX_VARIANTS))

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
        if flag.repeat:
            parser.add_argument(flag.name, dest=flag.dest, metavar=flag.metavar or "VALUE",
                                action="append", default=None, help=_escape(flag.help))
        elif flag.switch:
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
    if args.review:
        _check_review(args)
    if "max_variants" in args.magic and not args.compare:
        raise UsageError("%%swarm: --max-variants caps --compare; add --compare KEY=V1,V2 "
                         "or drop --max-variants")
    for name in ("replay", "record"):
        if args.compare and name in args.config_options:
            raise UsageError(f"%%swarm: --compare cannot --{name}: {_NOT_COMPARED[name]}")
    return args


def _check_review(args: SwarmArgs) -> None:
    """``--review`` reviews the planner's plan: refuse what has none, or several."""
    if args.dry_run:
        raise UsageError("%%swarm: --dry-run shows the plan and runs nothing; --review shows "
                         "it to edit and run: drop one")
    if args.compare:
        raise UsageError(f"%%swarm: --review cannot --compare: {COMPARE_WHY}")
    for given, flag in (("tasks", "--tasks"), ("plan_from", "--plan-from")):
        if given in args.config_options or given in args.engine_options:
            raise UsageError(f"%%swarm: {flag} gives the plan, so there is no planner's plan "
                             f"to --review; drop one (to edit a plan: --review alone)")


# Flags of other front ends that a cell has in another form: what to write instead.
_ELSEWHERE = {
    # A cell's body is a task, and a resume runs the stored one: a line magic, no body.
    "--resume": "to continue a run: %swarm resume RUN (it runs the run's own task)",
}


def _unknown_message(unknown: list[str]) -> str:
    """``unknown option --wokers (did you mean --workers?)``: the closest flag by spelling."""
    options = [arg for arg in unknown if arg.startswith("-")]
    typed = options[0].split("=", 1)[0] if options else ""
    if typed in _ELSEWHERE:
        return f"no option {typed} in a cell; {_ELSEWHERE[typed]}"
    return unknown_option(unknown, [flag.name for flag in FLAGS])


def name_the_flag(message: str, options: Mapping[str, Any]) -> str:
    """Say the flag the user typed where a config error names its internal field.

    ``max_workers must be a whole number, got 'many'`` for ``--workers many`` becomes
    ``--workers must be a whole number, got 'many'``; ``planner max_tokens ...`` for
    ``--max-tokens 0`` becomes ``--max-tokens ...`` (the flag sets every role). A
    message about no flag in ``options`` comes back as it was.
    """
    exact: dict[str, str] = {}
    near: dict[str, str] = {}
    for flag in FLAGS:
        if flag.target == "config" and flag.key in options:
            exact.setdefault(flag.key, flag.name)
            exact.setdefault(flag.dest, flag.name)
            near.setdefault(flag.key, flag.name)
    return shared_name_the_flag(message, exact, near)
