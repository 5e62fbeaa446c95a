"""A run's recorded calls, kept compressed in memory while the run records them.

Every run is recorded (so any finished run can be exported), and a recorded call holds
its whole request body (the worker's prompt, the system prompt again) and its response:
as Python objects that is about a kilobyte a call, the largest thing a large run kept.
:class:`RecordedCalls` keeps the calls in blocks of :data:`BLOCK_CALLS`, each block
``marshal``-ed and zlib-compressed (the system prompt repeated in every call of a block
compresses away), and gives them back as equal :class:`RecordedCall` values, a block at a
time, when the cassette is written, saved or replayed. Nothing here is read from or
written to disk: marshal is only this process's own in-memory form, and the cassette's
file form stays the JSON of :mod:`swarmkit.store.cassette`.
"""

from __future__ import annotations

import marshal
import zlib
from collections.abc import Iterable, Iterator, Sequence
from decimal import Decimal
from typing import Any, overload

from .cassette import RecordedCall

__all__ = ["BLOCK_CALLS", "RecordedCalls"]

# Calls per compressed block: large enough that the prompt text the calls share is
# compressed once per block, small enough that one decoded block is little memory.
BLOCK_CALLS = 256
# zlib's fastest level: the run pays it on every call; the blocks are short-lived in
# a kernel that exports or saves them once.
_LEVEL = 1

_Fields = tuple[Any, ...]


def _fields(call: RecordedCall) -> _Fields:
    cost = None if call.cost_usd is None else str(call.cost_usd)
    return (call.step, call.role, call.fingerprint, call.occurrence, call.request,
            call.response, call.source, call.started, call.latency, call.attempts, cost,
            call.error, call.error_type, call.status, call.retries)


def _call(fields: _Fields) -> RecordedCall:
    (step, role, fingerprint, occurrence, request, response, source, started, latency,
     attempts, cost, error, error_type, status, retries) = fields
    return RecordedCall(step, role, fingerprint, occurrence, request, response, source,
                        started, latency, attempts, None if cost is None else Decimal(cost),
                        error, error_type, status, retries)


def _packed(calls: list[RecordedCall]) -> bytes | tuple[RecordedCall, ...]:
    """A block's compressed form; the calls themselves when one holds a value marshal
    cannot keep (a body is JSON values, so only a caller's own object could be one)."""
    try:
        return zlib.compress(marshal.dumps([_fields(call) for call in calls]), _LEVEL)
    except ValueError:
        return tuple(calls)


def _unpacked(block: bytes | tuple[RecordedCall, ...]) -> tuple[RecordedCall, ...]:
    if isinstance(block, tuple):
        return block
    return tuple(_call(fields) for fields in marshal.loads(zlib.decompress(block)))


class RecordedCalls(Sequence[RecordedCall]):
    """The calls of a recording, in the order they were added, as a read-only sequence
    equal to the tuple of the same calls. The builder adds with :meth:`append`, then
    hands over :meth:`sealed`, which nothing adds to."""

    __slots__ = ("_blocks", "_last", "_length", "_pending", "_sealed")

    def __init__(self, calls: Iterable[RecordedCall] = ()) -> None:
        self._blocks: list[bytes | tuple[RecordedCall, ...]] = []
        self._pending: list[RecordedCall] = []
        self._length = 0
        self._sealed = False
        # The block read last, by number: replay's lookups and a loop by index read the
        # calls in order, so each block is decompressed once.
        self._last: tuple[int, tuple[RecordedCall, ...]] | None = None
        for call in calls:
            self.append(call)

    def append(self, call: RecordedCall) -> None:
        if self._sealed:
            raise TypeError("a sealed recording takes no more calls")
        self._pending.append(call)
        self._length += 1
        if len(self._pending) == BLOCK_CALLS:
            self._blocks.append(_packed(self._pending))
            self._pending = []

    def sealed(self) -> RecordedCalls:
        """These calls as they are now, never added to (a finished run's cassette)."""
        copy = RecordedCalls()
        copy._blocks = list(self._blocks)
        if self._pending:
            copy._blocks.append(_packed(self._pending))
        copy._length = self._length
        copy._sealed = True
        return copy

    def __len__(self) -> int:
        return self._length

    def _block(self, number: int) -> tuple[RecordedCall, ...]:
        if number == len(self._blocks):
            return tuple(self._pending)
        last = self._last  # read once: a recording may be read from two threads at once
        if last is None or last[0] != number:
            last = (number, _unpacked(self._blocks[number]))
            self._last = last
        return last[1]

    def __iter__(self) -> Iterator[RecordedCall]:
        for number in range(len(self._blocks)):
            # Each block is decoded, used and dropped: never the whole recording at once.
            yield from _unpacked(self._blocks[number])
        yield from tuple(self._pending)

    @overload
    def __getitem__(self, index: int) -> RecordedCall: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[RecordedCall, ...]: ...

    def __getitem__(self, index: int | slice) -> RecordedCall | tuple[RecordedCall, ...]:
        if isinstance(index, slice):
            return tuple(self[i] for i in range(*index.indices(self._length)))
        if index < 0:
            index += self._length
        if not 0 <= index < self._length:
            raise IndexError("recorded call index out of range")
        number, offset = divmod(index, BLOCK_CALLS)
        return self._block(number)[offset]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str | bytes):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other,
                                                                       strict=True))

    __hash__ = None  # type: ignore[assignment]  # equal to a tuple, yet not one

    def __repr__(self) -> str:
        return f"RecordedCalls({len(self)} calls)"
