"""The variants of a comparison: option overrides, one per column of the side-by-side view.

``--compare model=a,b --compare system=@brief,@detailed`` (or ``variants=[...]`` from
Python) names, per key, the values to try. Repeated keys combine as a grid (the first
key varies slowest), so the count is the product of the value counts; it is checked
against a cap before anything runs. Keys are the public option names (``model``,
``worker_model``, ``system_prompt``, ``reducer_prompt``...) or the magic flag's name
(``system``, ``schema``). ``@name`` takes the value from the notebook's namespace.

What every variant must share is refused as a key: the budget (one budget covers the
comparison) and where calls are stored or replayed from.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .config.options import OPTIONS, option_named
from .errors import ConfigError

__all__ = ["MAX_VARIANTS", "Variant", "check_count", "parse_compare", "variant_grid",
           "variants_of"]

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


def _shown(value: Any) -> str:
    text = value if isinstance(value, str) else getattr(value, "__name__", None) or repr(value)
    text = " ".join(str(text).split())
    return text if len(text) <= _LABEL_CHARS else text[: _LABEL_CHARS - 1] + "…"


def variant_grid(
    axes: Sequence[tuple[str, Sequence[Any], Sequence[str], str]],
) -> tuple[Variant, ...]:
    """The grid of ``axes``: (option name, values, how each value is shown, the key as the
    user wrote it, which labels the variant)."""
    names = [name for name, _, _, _ in axes]
    if len(set(names)) != len(names):
        repeated = next(n for n in names if names.count(n) > 1)
        raise ConfigError(f"--compare {repeated} is given twice; list its values once, "
                          f"comma-separated: --compare {repeated}=a,b")
    grid = []
    for combo in itertools.product(*(range(len(values)) for _, values, _, _ in axes)):
        picked = list(zip(axes, combo, strict=True))
        options = tuple((name, values[j]) for (name, values, _, _), j in picked)
        label = " · ".join(f"{key}={shown[j]}" for (_, _, shown, key), j in picked)
        grid.append(Variant(options, label))
    return tuple(grid)


def variants_of(specs: Sequence[Mapping[str, Any]]) -> tuple[Variant, ...]:
    """Variants from Python: ``[{"model": "a"}, {"model": "b", "temperature": 0}]``."""
    if isinstance(specs, Mapping) or not specs:
        raise ConfigError("variants takes a list of option dicts, e.g. "
                          "[{'model': 'a'}, {'model': 'b'}]")
    found = []
    for spec in specs:
        if not isinstance(spec, Mapping):
            raise ConfigError(f"each variant is a dict of options, not {type(spec).__name__}")
        options = tuple((_option_name(str(key)), value) for key, value in spec.items())
        label = " · ".join(f"{name}={_shown(value)}" for name, value in options) or "(common)"
        found.append(Variant(options, label))
    labels = [v.label for v in found]
    if len(set(labels)) != len(labels):
        repeated = next(label for label in labels if labels.count(label) > 1)
        raise ConfigError(f"two variants are the same ({repeated}); each must differ")
    return tuple(found)


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
        axes.append((_option_name(key), values, raw, key))
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
