"""The variants of a comparison: option overrides, one per column of the side-by-side view.

``--compare model=a,b --compare system=@brief,@detailed`` (or ``variants=[...]`` from
Python) names, per key, the values to try. Repeated keys combine as a grid (the first
key varies slowest), so the count is the product of the value counts; it is checked
against a cap before anything runs. Keys are the public option names (``model``,
``worker_model``, ``system_prompt``, ``reducer_prompt``...) or the magic flag's name
(``system``, ``schema``). ``@name`` takes the value from the notebook's namespace.

What every variant must share is refused as a key: the budget (one budget covers the
comparison) and where calls are stored or replayed from.

Variants are compared by value, never by label: two whose options are equal (in any
order, under any spelling of a key) are refused. A label shows each value cut to 24
characters; an option's values that would read the same are shown from where they
differ (``reducer_prompt=…into a table``), or numbered (``reducer_prompt#1``) when no
cut can tell them apart. ``Variant.options`` always holds the whole values.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..config.options import OPTIONS, option_named
from ..errors import ConfigError

__all__ = ["MAX_VARIANTS", "Variant", "check_count", "parse_compare", "value_labels",
           "variant_grid", "variants_of"]

# Variants run concurrently and each is a whole swarm: more than this is refused unless
# the user raises the cap (--max-variants, max_variants=).
MAX_VARIANTS = 8
_SHARED_ONLY = {
    "budget": "one budget covers every variant: set budget once, outside --compare",
    "budget_tokens": "one budget covers every variant: set budget_tokens once",
    "record": "each variant is recorded in the history; export the comparison instead",
    "replay": "replay a comparison from its exported notebook",
    "history": "history is shared by the variants: set it once",
    "history_path": "history is shared by the variants: set it once",
    "cache": "the cache is shared by the variants: set it once",
    "resume": "resume continues one run; compare variants afresh",
}
# The magic flag's own name is accepted too: --compare system=... is --system.
_FLAG_NAMES = {row.flag_name[2:].replace("-", "_"): row.name for row in OPTIONS
               if row.flag_name[2:].replace("-", "_") != row.name}
_LABEL_CHARS = 24


@dataclass(frozen=True, slots=True)
class Variant:
    """One variant: ``options`` (public name, value) applied over the common options."""

    options: tuple[tuple[str, Any], ...]
    label: str

    def as_dict(self) -> dict[str, Any]:
        return dict(self.options)


def _option_name(key: str) -> str:
    name = _FLAG_NAMES.get(key, key)
    if option_named(name) is None:
        raise ConfigError(f"--compare {key}: no such option; compare option names such as "
                          "model, worker_model, system, reducer_prompt, temperature")
    if name in _SHARED_ONLY:
        raise ConfigError(f"--compare {key}: {_SHARED_ONLY[name]}")
    return name


def _text(value: Any) -> str:
    """A value as one line of text: a string as it is, a class or function by its name."""
    text = value if isinstance(value, str) else getattr(value, "__name__", None) or repr(value)
    return " ".join(str(text).split())


def _cut(text: str) -> str:
    return text if len(text) <= _LABEL_CHARS else text[: _LABEL_CHARS - 1] + "…"


def _same(a: Any, b: Any) -> bool:
    """Whether two option values are equal. Values whose ``==`` is not a plain bool (a
    DataFrame's is elementwise) are equal when ``equals`` says so, else when identical."""
    if a is b:
        return True
    try:
        equal = a == b
        if isinstance(equal, bool):
            return equal
        same = getattr(a, "equals", None)
        return bool(same(b)) if callable(same) else False
    except Exception:  # a value's own comparison failed: only identity is sure
        return False


def _same_options(a: Sequence[tuple[str, Any]], b: Sequence[tuple[str, Any]]) -> bool:
    first, second = dict(a), dict(b)
    return first.keys() == second.keys() and all(_same(v, second[k]) for k, v in first.items())


def _check_distinct(options: Sequence[Sequence[tuple[str, Any]]], labels: Sequence[str]) -> None:
    """Refuse two variants whose options are equal by value (whatever their labels say)."""
    for j, mine in enumerate(options):
        for i in range(j):
            if _same_options(options[i], mine):
                shown = labels[i] if labels[i] == labels[j] else f"{labels[i]} and {labels[j]}"
                raise ConfigError(f"two variants are the same (variants {i + 1} and {j + 1}: "
                                  f"{shown}); each must differ, so change or drop one")


def _from_difference(text: str, at: int) -> str:
    """``…into a table``: ``text`` from a few words before index ``at``, where it
    differs from another value, cut to the label's width."""
    start = text.rfind(" ", 0, at) + 1  # the word holding the difference
    while start > 0:
        before = text.rfind(" ", 0, start - 1) + 1
        if at - before > _LABEL_CHARS // 2:
            break
        start = before
    return ("…" if start else "") + _cut(text[start:])


def _common_prefix(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def value_labels(name: str, values: Sequence[Any]) -> list[str]:
    """How each of option ``name``'s distinct ``values`` is shown in a variant's label.

    Each value's text cut to the label's width (``name=value``); where two values would
    read the same, each is shown from where it differs from the nearest other
    (``name=…into a table`` vs ``name=…into a list``); values whose texts are the same (or
    still read the same) are numbered, ``name#1``, ``name#2``, in the order given.
    """
    return [name + part for part in _value_parts(values)]


def _value_parts(values: Sequence[Any]) -> list[str]:
    """``=text`` per value, or ``#n`` each (see :func:`value_labels`)."""
    texts = [_text(value) for value in values]
    cut = [_cut(text) for text in texts]
    shown = list(cut)
    for i, text in enumerate(texts):
        if cut.count(cut[i]) == 1:
            continue
        at = max(_common_prefix(text, other) for j, other in enumerate(texts) if j != i)
        # A value that another merely extends differs by its end: show its last words.
        shown[i] = _from_difference(text, min(at, len(text) - 1)) if text else text
    if len(set(shown)) == len(shown):
        return [f"={text}" for text in shown]
    return [f"#{number}" for number in range(1, len(values) + 1)]


def _labelled(options: Sequence[tuple[tuple[str, Any], ...]]) -> tuple[Variant, ...]:
    """Variants of ``options`` (checked distinct), each labelled by its values, the
    labels unique: an option's values that would read the same show where they differ."""
    distinct: dict[str, list[Any]] = {}
    for variant in options:
        for name, value in variant:
            found = distinct.setdefault(name, [])
            if not any(_same(value, seen) for seen in found):
                found.append(value)
    parts = {name: value_labels(name, values) for name, values in distinct.items()}

    def part(name: str, value: Any) -> str:
        index = next(i for i, seen in enumerate(distinct[name]) if _same(value, seen))
        return parts[name][index]

    labels = [" · ".join(part(name, value) for name, value in variant) or "(common)"
              for variant in options]
    _check_distinct(options, labels)
    # Different options that still spell the same label (a value holding " · "): numbered.
    labels = [f"{label} (#{i + 1})" if labels.count(label) > 1 else label
              for i, label in enumerate(labels)]
    return tuple(Variant(variant, label) for variant, label in
                 zip(options, labels, strict=True))


def variant_grid(
    axes: Sequence[tuple[str, Sequence[Any], Sequence[str], str]],
) -> tuple[Variant, ...]:
    """The grid of ``axes``: (option name, values, how each value is shown after the key
    (``=text`` or ``#n``), the key as the user wrote it, which labels the variant). Two
    combinations equal by value (two ``@names`` holding one value) are refused."""
    names = [name for name, _, _, _ in axes]
    if len(set(names)) != len(names):
        repeated = next(n for n in names if names.count(n) > 1)
        raise ConfigError(f"--compare {repeated} is given twice; list its values once, "
                          f"comma-separated: --compare {repeated}=a,b")
    grid = []
    for combo in itertools.product(*(range(len(values)) for _, values, _, _ in axes)):
        picked = list(zip(axes, combo, strict=True))
        options = tuple((name, values[j]) for (name, values, _, _), j in picked)
        label = " · ".join(f"{key}{shown[j]}" for (_, _, shown, key), j in picked)
        grid.append(Variant(options, label))
    _check_distinct([v.options for v in grid], [v.label for v in grid])
    return tuple(grid)


def variants_of(specs: Sequence[Mapping[str, Any]]) -> tuple[Variant, ...]:
    """Variants from Python: ``[{"model": "a"}, {"model": "b", "temperature": 0}]``.

    Two variants are the same when their options are equal by value (in any order);
    that is refused. Labels name each variant's values (see :func:`value_labels`).
    """
    if isinstance(specs, Mapping) or not specs:
        raise ConfigError("variants takes a list of option dicts, e.g. "
                          "[{'model': 'a'}, {'model': 'b'}]")
    found = []
    for spec in specs:
        if not isinstance(spec, Mapping):
            raise ConfigError(f"each variant is a dict of options, not {type(spec).__name__}")
        found.append(tuple((_option_name(str(key)), value) for key, value in spec.items()))
    return _labelled(found)


def parse_compare(texts: Sequence[str], namespace: Mapping[str, Any]) -> tuple[Variant, ...]:
    """The variants of ``--compare KEY=V1,V2`` flags; ``@name`` reads the namespace."""
    axes = []
    for text in texts:
        key, eq, rest = text.partition("=")
        key = key.strip()
        raw = [value.strip() for value in rest.split(",")]
        if not eq or not key or not all(raw) or len(raw) < 1:
            raise ConfigError(f"--compare {text}: write KEY=VALUE,VALUE (e.g. "
                              "--compare model=gpt-4.1-mini,gpt-4.1)")
        if len(set(raw)) != len(raw):
            raise ConfigError(f"--compare {text}: a value is listed twice")
        values = [_value(key, value, namespace) for value in raw]
        # As written (``@brief``), cut and told apart as Python variants' values are.
        shown = _value_parts(raw)
        axes.append((_option_name(key), values, shown, key))
    return variant_grid(axes)


def _value(key: str, text: str, namespace: Mapping[str, Any]) -> Any:
    if not text.startswith("@"):
        return text
    name = text[1:]
    if not name.isidentifier() or name not in namespace:
        raise ConfigError(f"--compare {key}={text}: {name!r} names no variable in the "
                          f"notebook; define {name} first (e.g. {name} = '...')")
    return namespace[name]


def check_count(variants: Sequence[Variant], cap: int) -> None:
    """Refuse more variants than ``cap`` before anything runs."""
    if len(variants) < 2:
        raise ConfigError("--compare needs at least two variants, e.g. --compare model=a,b")
    if len(variants) > cap:
        raise ConfigError(f"--compare makes {len(variants)} variants, over the cap of {cap}; "
                          f"drop some values or raise it with --max-variants {len(variants)}")
