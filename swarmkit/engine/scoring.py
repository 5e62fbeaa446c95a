"""Checks: Python functions that score a run's answer, and the built-ins people reach for.

A :class:`Check` takes the final answer (``on="answer"``), each worker output, averaged
(``on="workers"``), or a :class:`CheckInput` view of the whole run (``on="run"``); which
one is its first parameter's name (``answer``, ``output``, ``run``) unless ``on=`` says.
It returns a bool, a number in [0, 1], or ``(score, reason)``. A check that raises (or
returns anything else) is a failed score, 0, with its error in one line: a check never
crashes a run. The engine runs the checks after the reducer (:func:`score_checks`) and
emits one ``ScoreRecorded`` per check.

Each built-in has a readable name (``contains('Paris')``, or the ``name=`` given) and
:meth:`Check.source`, the Python expression that rebuilds it, name and all, so an
exported notebook can run it again.
"""

from __future__ import annotations

import inspect
import json
import math
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Literal

from ..config.outputschema import SchemaMismatch, check_reply
from ..credentials.scrub import one_line
from ..errors import ConfigError
from ..record.rows import ScoreRecord

__all__ = ["Check", "CheckInput", "CheckOn", "score_checks"]

CheckOn = Literal["answer", "workers", "run"]
_ON_BY_PARAMETER: dict[str, CheckOn] = {"answer": "answer", "output": "workers",
                                        "run": "run"}
_MAX_REASON = 300  # a reason or error is one line of at most this many characters


@dataclass(frozen=True, slots=True)
class CheckInput:
    """What an ``on="run"`` check sees of a run. ``seconds`` is the time from the run's
    start to the end of its last model call (from the recording, in replay), so a
    replayed run scores the same; ``cost_usd`` is None when a call's price is unknown."""

    answer: str | None
    outputs: tuple[str, ...]
    cost_usd: Decimal | None
    seconds: float
    output_schema: str | None = None  # the run's --schema, canonical JSON text


Verdict = bool | int | float | tuple[Any, Any]


@dataclass(frozen=True)
class Check:
    """One check: ``name`` (a function's ``__name__`` unless given), the ``function``,
    and what it takes (``on``: from its first parameter's name unless given)."""

    function: Callable[..., Verdict | Awaitable[Verdict]]
    name: str = ""
    on: CheckOn | None = None
    # The expression that rebuilds a built-in (Check.contains('Paris')); "" for a user's.
    expression: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if not callable(self.function):
            raise ConfigError(f"a check must be a function, not {type(self.function).__name__};"
                              " pass def my_check(answer): ...")
        if not self.name:
            object.__setattr__(self, "name", getattr(self.function, "__name__", "check"))
        if self.on is None:
            object.__setattr__(self, "on", _on_of(self.function, self.name))
        elif self.on not in ("answer", "workers", "run"):
            raise ConfigError(f"check {self.name}: on must be 'answer', 'workers' or 'run', "
                              f"not {self.on!r}")

    @classmethod
    def of(cls, value: Check | Callable[..., Any]) -> Check:
        """``value`` as a Check: a Check as it is, a function wrapped."""
        return value if isinstance(value, Check) else cls(value)

    def source(self) -> str:
        """The Python expression that rebuilds this check (a user's: its function name)."""
        return self.expression or getattr(self.function, "__name__", self.name)

    # -- the built-ins -------------------------------------------------------------------

    @classmethod
    def contains(cls, text: str, *, name: str = "") -> Check:
        """Passes when the answer holds ``text`` (case-sensitive)."""
        def contains(answer: str) -> tuple[bool, str]:
            found = text in answer
            return found, f"{'found' if found else 'no'} {text!r}"
        return cls._builtin(contains, "contains", text, name=name)

    @classmethod
    def not_contains(cls, text: str, *, name: str = "") -> Check:
        """Passes when the answer does not hold ``text``."""
        def not_contains(answer: str) -> tuple[bool, str]:
            found = text in answer
            return not found, f"{'found' if found else 'no'} {text!r}"
        return cls._builtin(not_contains, "not_contains", text, name=name)

    @classmethod
    def regex(cls, pattern: str, *, name: str = "") -> Check:
        """Passes when ``pattern`` (Python ``re``) matches somewhere in the answer."""
        try:
            compiled = re.compile(pattern)
        except re.error as exc:
            raise ConfigError(f"Check.regex({pattern!r}) is not a regular expression "
                              f"({exc}); fix the pattern") from None

        def regex(answer: str) -> tuple[bool, str]:
            found = compiled.search(answer)
            return (found is not None,
                    f"matched {found.group(0)!r}" if found else "no match")
        return cls._builtin(regex, "regex", pattern, name=name)

    @classmethod
    def valid_json(cls, *, name: str = "") -> Check:
        """Passes when the whole answer is JSON (fences around it are allowed)."""
        def valid_json(answer: str) -> tuple[bool, str]:
            try:
                json.loads(_unfenced(answer))
            except ValueError as exc:
                return False, f"not JSON: {exc}"
            return True, "valid JSON"
        return cls._builtin(valid_json, "valid_json", name=name)

    @classmethod
    def matches_schema(cls, *, name: str = "") -> Check:
        """Passes when the answer is JSON that matches the run's ``--schema`` (without a
        reducer: the share of worker outputs that do)."""
        def matches_schema(run: CheckInput) -> tuple[float, str]:
            if run.output_schema is None:
                raise ConfigError("matches_schema needs the run's --schema (output_type=)")
            texts = (run.answer,) if run.answer is not None else run.outputs
            if not texts:
                return 0.0, "nothing to check"
            problems = []
            for text in texts:
                try:
                    check_reply(run.output_schema, text)
                except SchemaMismatch as exc:
                    problems.append(str(exc))
            if not problems:
                return 1.0, "matches the schema"
            return 1 - len(problems) / len(texts), problems[0]
        return cls._builtin(matches_schema, "matches_schema", name=name)

    @classmethod
    def max_length(cls, n: int, *, name: str = "") -> Check:
        """Passes when the answer has at most ``n`` characters."""
        def max_length(answer: str) -> tuple[bool, str]:
            return len(answer) <= n, f"{len(answer):,} characters (at most {n:,})"
        return cls._builtin(max_length, "max_length", n, name=name)

    @classmethod
    def max_cost(cls, usd: float | str | Decimal, *, name: str = "") -> Check:
        """Passes when the run's calls before scoring cost at most ``usd`` dollars."""
        cap = Decimal(str(usd))

        def max_cost(run: CheckInput) -> tuple[bool, str]:
            if run.cost_usd is None:
                return False, "the cost is unknown (a model has no price)"
            return run.cost_usd <= cap, f"${run.cost_usd:.6f} (at most ${cap})"
        return cls._builtin(max_cost, "max_cost", usd, name=name)

    @classmethod
    def max_latency(cls, seconds: float, *, name: str = "") -> Check:
        """Passes when the run's answer came within ``seconds`` of its start."""
        def max_latency(run: CheckInput) -> tuple[bool, str]:
            return run.seconds <= seconds, f"{run.seconds:.2f} s (at most {seconds} s)"
        return cls._builtin(max_latency, "max_latency", seconds, name=name)

    @classmethod
    def _builtin(cls, function: Callable[..., Any], kind: str, *args: Any, name: str = ""
                 ) -> Check:
        shown = ", ".join(repr(a) for a in args)
        given = f"name={name!r}" if name else ""
        expression = f"Check.{kind}({', '.join(p for p in (shown, given) if p)})"
        return cls(function, name=name or f"{kind}({shown})", expression=expression)


def _on_of(function: Callable[..., Any], name: str) -> CheckOn:
    try:
        parameters = list(inspect.signature(function).parameters)
    except (TypeError, ValueError):
        parameters = []
    if parameters and parameters[0] in _ON_BY_PARAMETER:
        return _ON_BY_PARAMETER[parameters[0]]
    first = parameters[0] if parameters else "none"
    raise ConfigError(f"check {name}: its first parameter is {first!r}; name it answer, "
                      "output or run, or give Check(function, on='answer')")


def _unfenced(text: str) -> str:
    found = re.fullmatch(r"\s*```(?:json|JSON)?\s*(.*?)```\s*", text, re.DOTALL)
    return found.group(1) if found else text


def _verdict(value: Any) -> tuple[float, str | None]:
    """A check's return value as (score, reason); a ValueError says what was wrong."""
    reason = None
    if isinstance(value, tuple):
        if len(value) != 2:
            raise ValueError(f"returned a tuple of {len(value)}; return (score, reason)")
        value, reason = value
        reason = None if reason is None else one_line(str(reason), _MAX_REASON)
    if isinstance(value, bool):
        return (1.0 if value else 0.0), reason
    if isinstance(value, int | float) and math.isfinite(value) and 0 <= value <= 1:
        return float(value), reason
    raise ValueError(f"returned {value!r}; return True/False, a number from 0 to 1, or "
                     "(score, reason)")


async def _score(check: Check, view: CheckInput, *, reduced: bool) -> ScoreRecord:
    on = check.on if reduced or check.on == "run" else "workers"
    try:
        if on == "run":
            score, reason = _verdict(await _called(check, view))
        elif on == "answer":
            score, reason = _verdict(await _called(check, view.answer or ""))
        else:
            if not view.outputs:
                return ScoreRecord(check.name, 0.0, None, "check",
                                   error="no worker output to check")
            verdicts = [_verdict(await _called(check, output)) for output in view.outputs]
            score = sum(v[0] for v in verdicts) / len(verdicts)
            passed = sum(1 for v in verdicts if v[0] == 1.0)
            reason = f"{passed} of {len(verdicts)} outputs passed"
    except Exception as exc:  # a user's check: its failure is its score, never the run's
        return ScoreRecord(check.name, 0.0, None, "check",
                           error=one_line(f"{type(exc).__name__}: {exc}", _MAX_REASON))
    return ScoreRecord(check.name, score, reason, "check")


async def _called(check: Check, argument: Any) -> Any:
    result = check.function(argument)
    return await result if inspect.isawaitable(result) else result


async def score_checks(checks: Sequence[Check], view: CheckInput, *,
                       reduced: bool) -> list[ScoreRecord]:
    """Each check's score of ``view``, in order. Without a reducer (``reduced`` False)
    an answer check scores each worker output instead, averaged."""
    return [await _score(check, view, reduced=reduced) for check in checks]
