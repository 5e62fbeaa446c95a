"""The code cell that replays a comparison: ``swarmkit.compare_sync(...)`` with the
variants written as literals, every repeat's cassette, and the checks defined above it.

    comparison = swarmkit.compare_sync(TASK, variants=[...], replay=[...], **common)
    comparison

A value that has no literal (a pydantic model, a DataFrame of tasks) is written as the
run recorded it (the JSON schema's text; given tasks come from the cassette), keeping the
variant's label with ``swarmkit.comparison.variants.Variant``. The common options are
those that rebuild every variant's requests (``export.cellsource.replay_options``).
``repeat=K`` and the checks (``export.checksource``) are written when the comparison had
them, so the replay scores every repeat again; so are ``judge=`` and ``rubric=``, which
the replay takes from its cassettes, for the cell run live.
"""

from __future__ import annotations

import pprint
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..config.options import option_named
from ..errors import ConfigError
from ..export.cellsource import is_literal, replay_options
from ..export.checksource import RebuiltChecks
from .variants import Variant, variants_of

__all__ = ["Written", "comparison_source", "written_options"]

# Given in the cell, these would need the notebook's namespace, a history or tools; a
# replay takes the given tasks and the tool results from the cassette instead.
_FROM_CASSETTE = frozenset({"tasks", "task_template", "plan_from", "tools", "mcp_servers"})
# A value whose literal is longer goes to a named constant above the call.
_INLINE_CHARS = 48


def _typed(name: str, text: str) -> Any:
    """A replay option's text as the literal a reader expects (``0.2``, not ``'0.2'``)."""
    kind = row.kind if (row := option_named(name)) is not None else "text"
    try:
        if kind == "int":
            return int(text)
        if kind == "number":
            number = float(text)
            return int(number) if number.is_integer() else number
    except ValueError:
        return text
    if kind == "bool" and text in ("true", "false"):
        return text == "true"
    return text


def _recorded(name: str, config: Mapping[str, Any]) -> Any:
    """The value of option ``name`` as the run recorded it (e.g. a schema's JSON text)."""
    row = option_named(name)
    if row is None:
        return None
    if row.role:
        role, field = ("planner", row.attr) if name == row.name else name.split("_", 1)
        return (config.get(role) or {}).get(field)
    return config.get("output_schema" if row.kind == "schema" else row.attr)


@dataclass(frozen=True, slots=True)
class Written:
    """What the cell passes: common options, and each variant's (with its label)."""

    common: dict[str, Any]
    variants: list[dict[str, Any]]
    labels: tuple[str, ...]
    as_dicts: bool  # plain dicts reproduce the labels; else Variant(options, label)


def written_options(variants: Sequence[Variant], configs: Sequence[Mapping[str, Any]]) -> Written:
    full = [replay_options(config) for config in configs]
    keys = {name for variant in variants for name, _ in variant.options}
    common = {name: text for name, text in full[0].items()
              if name not in keys and all(f.get(name) == text for f in full)}
    written: list[dict[str, Any]] = []
    plain = True
    for variant, options, config in zip(variants, full, configs, strict=True):
        mine: dict[str, Any] = {}
        for name, value in variant.options:
            if name in _FROM_CASSETTE:
                plain = False
            elif is_literal(value):
                mine[name] = value
            else:
                plain = False
                mine[name] = _recorded(name, config)
        own = {n for n, _ in variant.options}
        leftover = {n: _typed(n, t) for n, t in options.items() if n not in common and n not in own}
        plain = plain and not leftover
        written.append({**mine, **leftover})
    labels = tuple(v.label for v in variants)
    if plain:
        try:
            plain = tuple(v.label for v in variants_of(written)) == labels
        except ConfigError:
            plain = False
    typed = {name: _typed(name, text) for name, text in common.items()}
    return Written(typed, written, labels, plain)


def _judging(configs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """``judge=`` and ``rubric=`` as the recordings had them, when every variant shares
    them. A replay takes its judge from the cassettes; the cell run live (``replay=``
    deleted) needs them written."""
    judges = {str((config.get("judge") or {}).get("model")) for config in configs
              if isinstance(config.get("judge"), Mapping)}
    if len(judges) != 1 or any(not isinstance(c.get("judge"), Mapping) for c in configs):
        return {}
    found: dict[str, Any] = {"judge": judges.pop()}
    rubrics = {config.get("rubric") for config in configs}
    rubric = rubrics.pop() if len(rubrics) == 1 else None
    if isinstance(rubric, str):
        found["rubric"] = rubric
    return found


class _Names:
    """Long literals become constants above the call, named after their option."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def value(self, name: str, value: Any) -> str:
        text = repr(value)
        if len(text) <= _INLINE_CHARS and "\n" not in text:
            return text
        constant = name.upper()
        taken = {line.split(" = ", 1)[0] for line in self.lines}
        number = 2
        while constant in taken:
            constant, number = f"{name.upper()}_{number}", number + 1
        self.lines.append(f"{constant} = {pprint.pformat(value, width=80)}")
        return constant


def comparison_source(
    task: str,
    variants: Sequence[Variant],
    configs: Sequence[Mapping[str, Any]],
    cassettes: Sequence[str],
    *,
    repeat: int = 1,
    checks: RebuiltChecks | None = None,
) -> str:
    """The code cell replaying every variant (and each of its ``repeat`` runs) from its
    cassette, scored again by ``checks``; it shows the view. ``configs`` are repeat 0's."""
    written = written_options(variants, configs)
    names = _Names()
    task_text = pprint.pformat(task, width=80)
    rows = []
    for options, label in zip(written.variants, written.labels, strict=True):
        pairs = [(name, names.value(name, value)) for name, value in options.items()]
        if written.as_dicts:
            rows.append("{" + ", ".join(f"{name!r}: {text}" for name, text in pairs) + "}")
        else:
            inner = "".join(f"({name!r}, {text}), " for name, text in pairs).rstrip(" ")
            rows.append(f"Variant(options=({inner}), label={label!r})")
    arguments = ["TASK", "variants=[\n" + "".join(f"        {row},\n" for row in rows) + "    ]",
                 f"replay={list(cassettes)!r}"]
    arguments += [f"{name}={names.value(name, value)}" for name, value in written.common.items()]
    keys = {name for variant in variants for name, _ in variant.options}
    arguments += [f"{name}={names.value(name, value)}"
                  for name, value in _judging(configs).items() if name not in keys]
    if repeat > 1:
        arguments.append(f"repeat={repeat}")
    if checks is not None and checks.checks:
        listed = ", ".join(check.expression for check in checks.checks)
        arguments.append(f"checks=[{listed}]")
    head = ["import swarmkit"]
    if not written.as_dicts:
        head.append("from swarmkit.comparison import Variant")
    defined = [] if checks is None or not checks.checks else ["", checks.source(), ""]
    call = "comparison = swarmkit.compare_sync(\n" + "".join(
        f"    {argument},\n" for argument in arguments) + ")"
    return "\n".join([*head, *(defined or [""]), f"TASK = {task_text}", *names.lines, call,
                      "comparison"])
