"""JSON text of a large record (a run, a cassette) made a piece at a time.

A record's JSON form is declared once, as a *shape*: a dict whose long lists are
:class:`Items` (records encoded one at a time). :func:`plain` turns a shape into the dict
``json.dumps`` takes; :func:`json_pieces` gives the very same text in pieces, so a large run
is written without its whole dict tree or its whole text in memory;
:func:`chunks` joins the pieces into texts of a bounded size.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

__all__ = ["Items", "chunks", "json_pieces", "plain"]


class _Record(Protocol):
    def to_dict(self) -> dict[str, Any]: ...


@dataclass(frozen=True, slots=True)
class Items:
    """A list in a shape: each record is converted with ``to_dict`` when it is encoded."""

    records: Sequence[_Record]

    def to_list(self) -> list[dict[str, Any]]:
        return [record.to_dict() for record in self.records]


def plain(shape: Mapping[str, Any]) -> dict[str, Any]:
    """``shape`` with every :class:`Items` made a list: the dict its JSON text encodes."""
    return {key: value.to_list() if isinstance(value, Items) else value
            for key, value in shape.items()}


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def json_pieces(shape: Mapping[str, Any]) -> Iterator[str]:
    """The text of ``json.dumps(plain(shape), ensure_ascii=False)``, in pieces."""
    return _pieces(shape)


def _pieces(value: Any) -> Iterator[str]:
    # Objects with text keys and long lists (a config's given tasks) are gone into, so
    # no one value's text is whole in memory; anything else is encoded as it is.
    if isinstance(value, Items):
        yield "["
        for index, record in enumerate(value.records):
            yield (", " if index else "") + _dumps(record.to_dict())
        yield "]"
    elif isinstance(value, dict) and value and all(isinstance(k, str) for k in value):
        yield "{"
        for position, (key, item) in enumerate(value.items()):
            yield (", " if position else "") + _dumps(key) + ": "
            yield from _pieces(item)
        yield "}"
    elif isinstance(value, list | tuple) and len(value) > _LONG:
        yield "["
        for index, item in enumerate(value):
            if index:
                yield ", "
            yield from _pieces(item)
        yield "]"
    else:
        yield _dumps(value)


_LONG = 64  # a list of more items than this is encoded an item at a time


def chunks(pieces: Iterable[str], size: int) -> Iterator[str]:
    """``pieces`` joined into texts of at least ``size`` characters (the last may be
    shorter); there is always at least one, so an empty text is one empty chunk."""
    waiting: list[str] = []
    length, given = 0, False
    for piece in pieces:
        waiting.append(piece)
        length += len(piece)
        if length >= size:
            yield "".join(waiting)
            waiting, length, given = [], 0, True
    if waiting or not given:
        yield "".join(waiting)
