"""How a count and a value's type read in a message or a table: ``1 call``, ``2 calls``,
``an int``, ``a list``.

Every line swarmkit shows is read by a person: counts go through :func:`counted` and a
value's type through :func:`kind_of`, so no message says ``1 calls`` or ``a int``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["counted", "kind_of"]

# Nouns whose plural is not the singular plus "s".
_PLURALS = {"batch": "batches", "sub-task": "sub-tasks", "retry": "retries",
            "entry": "entries"}


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """``count`` and ``noun``, singular for exactly one: ``counted(1, "call")`` is
    ``1 call``, ``counted(0, "call")`` is ``0 calls``. ``noun`` may be several
    words (``"tool call"``); the last one takes the plural."""
    if count == 1:
        return f"1 {noun}"
    head, _, last = noun.rpartition(" ")
    many = plural or _PLURALS.get(last, last + "s")
    return f"{count} {head + ' ' if head else ''}{many}"


def kind_of(value: Any) -> str:
    """The type of ``value`` with its article: ``an int``, ``a str``, ``a DataFrame``."""
    name = type(value).__name__
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"
