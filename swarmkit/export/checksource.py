"""The checks of a scored run, as Python an exported notebook runs again.

An export replays the judge's calls from the cassette, but a check is the notebook's own
Python: to show the same scores, the replay must run the same checks. ``rebuilt_checks``
turns the run's checks (``RunRecord.checks``, kept in this process only) into source:

- a built-in is its expression: ``swarmkit.Check.contains('Paris')``;
- a user's function is its ``def`` (``inspect.getsource``), with what it uses from its
  module: ``import`` lines for modules, assignments for plain literals. It is wrapped in
  ``swarmkit.Check(...)`` only when its name or ``on`` was given.

A check that cannot be written that way (a lambda, a closure, a decorated function, one
that uses a value with no literal, or a run read back from the history, whose checks
are not in this process) is left out, with the reason: the export then checks the
replay against the judge's scores and the rebuilt checks' only, and its header says
which checks the notebook does not run.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import textwrap
import types
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..config.wording import kind_of
from ..engine.scoring import Check
from .cellsource import is_literal

if TYPE_CHECKING:
    from ..record.runrecord import RunRecord

__all__ = ["RebuiltCheck", "RebuiltChecks", "check_cell", "kept_scores", "rebuilt_checks"]

_LITERAL_CHARS = 2_000  # a constant longer than this is not written into the notebook


@dataclass(frozen=True, slots=True)
class RebuiltCheck:
    """One check as source: ``expression`` builds it once ``definitions`` ran."""

    name: str
    expression: str
    definitions: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class RebuiltChecks:
    """What an export writes of a run's checks, and what it leaves out (name, why)."""

    checks: tuple[RebuiltCheck, ...] = ()
    left_out: tuple[tuple[str, str], ...] = ()

    @property
    def names(self) -> frozenset[str]:
        return frozenset(check.name for check in self.checks)

    @property
    def definitions(self) -> list[str]:
        """Every check's definitions, each once, in order (imports first)."""
        seen = dict.fromkeys(line for check in self.checks for line in check.definitions)
        lines = list(seen)
        return ([line for line in lines if line.startswith("import ")]
                + [line for line in lines if not line.startswith("import ")])

    def source(self) -> str:
        """The definitions as a block of code, a blank line around each ``def``."""
        return "\n".join(_spaced(self.definitions))

    def note(self) -> str:
        """One Markdown-free line naming the checks the notebook does not run; "" if none."""
        if not self.left_out:
            return ""
        listed = "; ".join(f"{name} ({why})" for name, why in self.left_out)
        return f"not run again in this notebook, so not shown: {listed}"


def _global_lines(function: types.FunctionType, seen: set[str]
                  ) -> tuple[list[str], str | None]:
    """The lines that give ``function`` what it reads from its module (modules, literals,
    other plain functions, ``Check``); or why it cannot be given."""
    found = inspect.getclosurevars(function)
    if found.nonlocals:
        return [], f"it uses {', '.join(sorted(found.nonlocals))} of an enclosing function"
    lines = []
    for name, value in sorted(found.globals.items()):
        if isinstance(value, types.ModuleType):
            module = value.__name__
            lines.append(f"import {module}" if module == name else f"import {module} as {name}")
        elif value is Check:
            lines.append("from swarmkit import Check" if name == "Check"
                         else f"from swarmkit import Check as {name}")
        elif isinstance(value, types.FunctionType) and value.__name__ == name:
            if name in seen:
                continue
            needed, why = _definition(value, seen)
            if why is not None:
                return [], f"it uses {name}, which cannot be written: {why}"
            lines += needed
        elif is_literal(value) and len(repr(value)) <= _LITERAL_CHARS:
            lines.append(f"{name} = {value!r}")
        else:
            return [], f"it uses {name}, {kind_of(value)} with no literal to write"
    return lines, None


def _definition(function: Any, seen: set[str] | None = None) -> tuple[list[str], str | None]:
    """``function``'s ``def`` and what it needs, as lines; or why there is none."""
    if not isinstance(function, types.FunctionType):
        return [], f"{kind_of(function)}, not a def"
    if function.__name__ == "<lambda>":
        return [], "a lambda: define it with def to export it"
    try:
        source = textwrap.dedent(inspect.getsource(function))
        tree = ast.parse(source)
    except (OSError, TypeError, SyntaxError):
        return [], "its source is not available"
    nodes = tree.body
    if (len(nodes) != 1 or not isinstance(nodes[0], ast.FunctionDef | ast.AsyncFunctionDef)
            or nodes[0].name != function.__name__ or nodes[0].decorator_list):
        return [], "its source is not one plain def"
    seen = {*(seen or ()), function.__name__}
    needed, why = _global_lines(function, seen)
    if why is not None:
        return [], why
    return [*needed, source.rstrip("\n")], None


def _inferred_on(check: Check) -> str | None:
    try:
        return Check(check.function).on
    except Exception:  # its first parameter does not say what it takes: on= was given
        return None


def _rebuilt(check: Check) -> RebuiltCheck | str:
    """``check`` as source, or why it cannot be."""
    if check.expression:
        return RebuiltCheck(check.name, "swarmkit." + check.expression)
    lines, why = _definition(check.function)
    if why is not None:
        return why
    function_name = check.function.__name__
    plain = check.name == function_name and _inferred_on(check) == check.on
    expression = function_name if plain else (
        f"swarmkit.Check({function_name}, name={check.name!r}, on={check.on!r})")
    return RebuiltCheck(check.name, expression, tuple(lines))


def rebuilt_checks(runs: Iterable[RunRecord]) -> RebuiltChecks:
    """The checks that scored ``runs`` (a comparison's share them), as source: those
    kept in this process and writable; the others by name, with why they are left out."""
    checks: dict[str, RebuiltCheck] = {}
    left_out: dict[str, str] = {}
    for run in runs:
        held = {check.name: check for check in run.checks if isinstance(check, Check)}
        for name in dict.fromkeys(s.name for s in run.scores if s.kind == "check"):
            if name in checks or name in left_out:
                continue
            check = held.get(name)
            if check is None:
                left_out[name] = "its function is not in this session (a run from the history)"
                continue
            found = _rebuilt(check)
            if isinstance(found, str):
                left_out[name] = found
            else:
                checks[name] = found
    return RebuiltChecks(tuple(checks.values()), tuple(left_out.items()))


def kept_scores(run: RunRecord, names: Sequence[str] | frozenset[str]) -> RunRecord:
    """``run`` as its replay shows it: the judge's scores and those of the checks
    ``names`` (the ones the notebook runs again), in their order."""
    scores = tuple(s for s in run.scores if s.kind != "check" or s.name in names)
    if scores == run.scores:
        return run
    copy = dataclasses.replace(run, scores=scores)
    copy.history_file, copy.checks = run.history_file, run.checks
    return copy


def check_cell(rebuilt: RebuiltChecks) -> tuple[str | None, list[str]]:
    """The cell that defines a ``%%swarm`` replay's checks, and the names its
    ``--check`` flag gives (a built-in is bound to ``check_<i>``); None when none."""
    if not rebuilt.checks:
        return None, []
    lines = [rebuilt.source()] if rebuilt.definitions else []
    names = []
    for number, check in enumerate(rebuilt.checks, start=1):
        if check.expression.isidentifier():
            names.append(check.expression)
        else:
            names.append(f"check_{number}")
            lines.append(f"check_{number} = {check.expression}")
    if any("swarmkit." in check.expression for check in rebuilt.checks):
        lines.insert(0, "import swarmkit")
    return "\n".join(_spaced(lines)), names


def _spaced(lines: list[str]) -> list[str]:
    """A blank line before and after each multi-line definition, as code is written."""
    out: list[str] = []
    for line in lines:
        block = "\n" in line
        if out and (block or "\n" in out[-1]) and out[-1] != "":
            out.append("")
        out.append(line)
    return out
