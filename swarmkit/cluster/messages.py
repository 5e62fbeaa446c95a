"""What a shard sends the driver besides the run's events, and what the driver answers.

A shard's stream is a list of items in the order they happened: the run's events, the
calls and tool calls it served (``Served``, ``ToolRan``: the driver's call store keeps
them for the one cassette and cache), and its asks of the run's budget, rate limits and
cache (``Ask``, answered by an ``Answer``; ``Tell``, which needs no answer). Every value
is a frozen dataclass of plain values, so it pickles the same on every Ray version.

A batch (and the driver's answers) travels as bytes (``pack``/``unpack``): Ray would
pickle a list of objects with cloudpickle, whose pure-Python pickler cost a shard about
90 µs a call (five items), four times the standard pickler's C code; bytes Ray passes
as they are.
"""

from __future__ import annotations

import pickle
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ..record.modelcall import CallSource, ChatRequest, ChatResponse, ToolKey, ToolOutcome

__all__ = ["Answer", "Ask", "AskKind", "Served", "Tell", "TellKind", "ToolRan", "pack",
           "unpack"]

# reserve: (usd, tokens, what) -> None; admit: (base_url, key_envs, tokens, step) -> key_env;
# cache: (step, request) -> (occurrence, the cached ChatResponse or None)
AskKind = Literal["reserve", "admit", "cache"]
# settle (usd, tokens), release (), succeeded (tokens,), failed (status, pause), abandon ()
TellKind = Literal["settle", "release", "succeeded", "failed", "abandon"]


@dataclass(frozen=True, slots=True)
class Served:
    """A model call the shard served (or failed): what the driver's call store notes."""

    step: str
    request: ChatRequest
    response: ChatResponse | None
    source: CallSource
    error_type: str | None = None
    occurrence: int | None = None  # the driver's, when it was asked of the cache first


@dataclass(frozen=True, slots=True)
class ToolRan:
    """A tool call the shard ran, for the cassette."""

    key: ToolKey
    outcome: ToolOutcome


@dataclass(frozen=True, slots=True)
class Ask:
    """A question to the driver; the shard waits for the ``Answer`` with its ``id``."""

    id: int
    kind: AskKind
    args: tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class Tell:
    """What became of the reservation or admission that the ask ``id`` obtained."""

    id: int
    kind: TellKind
    args: tuple[Any, ...] = ()


@dataclass(frozen=True, slots=True)
class Answer:
    """The driver's answer to ask ``id``: its value, or the refusal's message (a
    BudgetExceeded: the only refusal an ask may meet)."""

    id: int
    value: Any = None
    refusal: str | None = None


def pack(items: Sequence[Any]) -> bytes:
    """A batch as the shard sends it (or answers as the driver does): the standard
    pickle of its items (every class in it is importable on both sides, so
    cloudpickle's by-value pickling is not needed)."""
    return pickle.dumps(list(items), protocol=pickle.HIGHEST_PROTOCOL)


def unpack(batch: bytes) -> list[Any]:
    """The items that ``pack`` made (a shard of this run, or its driver: trusted as Ray's
    own messages are)."""
    items: list[Any] = pickle.loads(batch)
    return items
