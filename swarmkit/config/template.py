"""Safe ``{name}`` interpolation of a cell from the user namespace.

Only ``{identifier}`` is a placeholder. Any other brace text (a JSON example, a set
literal, ``{ "a": 1 }``) is left exactly as written, which ``str.format`` over the whole
cell could not do. ``{{`` gives ``{``; ``}}`` gives ``}`` when it closes a ``{{`` and is
left alone otherwise, so nested JSON such as ``{"a": {"b": 1}}`` survives untouched.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["fill", "interpolate", "interpolation_changes", "placeholders"]

_TOKEN = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}")
# What interpolation always rewrites: ``{{`` (to ``{``) and a ``{name}`` placeholder. A
# ``}}`` is rewritten only when it closes a ``{{``, so it never changes a text alone.
_CHANGED = re.compile(r"\{\{|\{[A-Za-z_][A-Za-z0-9_]*\}")


def interpolation_changes(text: str) -> bool:
    """Whether :func:`interpolate` would change ``text`` (or refuse it) in any namespace."""
    return _CHANGED.search(text) is not None


def placeholders(text: str) -> list[str]:
    """The names of ``text``'s ``{name}`` placeholders, in order."""
    return [m.group(1) for m in _TOKEN.finditer(text) if m.group(1)]


def fill(text: str, values: Mapping[str, Any]) -> str:
    """``text`` with each ``{name}`` replaced by ``str(values[name])``; a name not in
    ``values`` raises ``LookupError(name)``."""
    parts: list[str] = []
    position = 0
    open_escapes = 0
    for match in _TOKEN.finditer(text):
        parts.append(text[position : match.start()])
        token = match.group(0)
        if token == "{{":
            parts.append("{")
            open_escapes += 1
        elif token == "}}":
            if open_escapes:
                parts.append("}")
                open_escapes -= 1
            else:
                parts.append(token)
        else:
            name = match.group(1)
            if name not in values:
                raise LookupError(name)
            parts.append(str(values[name]))
        position = match.end()
    parts.append(text[position:])
    return "".join(parts)


def interpolate(text: str, namespace: Mapping[str, Any]) -> str:
    """``text`` with each ``{name}`` replaced by ``str(namespace[name])``."""
    try:
        return fill(text, namespace)
    except LookupError as exc:
        from IPython.core.error import UsageError  # the magic's error type

        name = exc.args[0]
        raise UsageError(
            f"%%swarm: {{{name}}} names no variable in the notebook; define {name}, "
            f"write {{{{{name}}}}} for literal braces, or pass --no-interpolate"
        ) from None
