"""Serving a run from a Cassette: lookup by (fingerprint, occurrence), and clear misses.

When the occurrence differs (identical requests finished in another order), any unused
recording of the same request serves. A request that is not recorded at all raises
:class:`~swarmkit.errors.ReplayMiss` naming the step, the closest recorded request and
where the two first differ.
"""

from __future__ import annotations

import difflib
from collections import defaultdict
from typing import Any

from ..errors import ReplayMiss
from ..record.modelcall import ChatRequest, ToolKey, canonical_json
from .cassette import Cassette, RecordedCall, RecordedTool

__all__ = ["Player", "first_difference"]

# How many candidates get the (slow) full similarity ratio after the quick filter.
_RATIO_CANDIDATES = 3
_SNIPPET = 24

_ToolId = tuple[str, int, str, str]


def _snippet(value: Any, other: Any) -> str:
    """A short repr of ``value`` around the first place it differs from ``other``."""
    text = value if isinstance(value, str) else canonical_json(value)
    other_text = other if isinstance(other, str) else canonical_json(other)
    start = 0
    while start < min(len(text), len(other_text)) and text[start] == other_text[start]:
        start += 1
    start = max(0, min(start - _SNIPPET // 3, len(text) - _SNIPPET))
    piece = text[start : start + _SNIPPET]
    prefix = "…" if start else ""
    suffix = "…" if start + _SNIPPET < len(text) else ""
    return repr(prefix + piece + suffix)


def first_difference(recorded: dict[str, Any], current: dict[str, Any]) -> str:
    """Where two request bodies first differ, as ``field: recorded X vs now Y``."""
    for key in sorted(set(recorded) | set(current)):
        old, new = recorded.get(key), current.get(key)
        if old == new:
            continue
        if key == "messages" and isinstance(old, list) and isinstance(new, list):
            for index in range(max(len(old), len(new))):
                a = old[index] if index < len(old) else None
                b = new[index] if index < len(new) else None
                if a == b:
                    continue
                if isinstance(a, dict) and isinstance(b, dict):
                    for name in sorted(set(a) | set(b)):
                        if a.get(name) != b.get(name):
                            return (f"messages[{index}].{name}: recorded "
                                    f"{_snippet(a.get(name), b.get(name))} vs now "
                                    f"{_snippet(b.get(name), a.get(name))}")
                return f"messages[{index}]: recorded {_snippet(a, b)} vs now {_snippet(b, a)}"
        return f"{key}: recorded {_snippet(old, new)} vs now {_snippet(new, old)}"
    return "no difference in the body"


class Player:
    """Looks up recorded calls and tool results; remembers which ones it has served."""

    def __init__(self, cassette: Cassette) -> None:
        self.cassette = cassette
        self._exact: dict[tuple[str, int], RecordedCall] = {}
        self._by_fingerprint: dict[str, list[RecordedCall]] = defaultdict(list)
        for call in cassette.calls:
            self._exact.setdefault((call.fingerprint, call.occurrence), call)
            self._by_fingerprint[call.fingerprint].append(call)
        self._tools: dict[tuple[_ToolId, int], RecordedTool] = {}
        self._tools_by_id: dict[_ToolId, list[RecordedTool]] = defaultdict(list)
        for tool in cassette.tools:
            ident = (tool.step, tool.hop, tool.name, tool.arguments)
            self._tools.setdefault((ident, tool.occurrence), tool)
            self._tools_by_id[ident].append(tool)
        self._used: set[int] = set()

    def _take(self, found: RecordedCall | RecordedTool) -> Any:
        self._used.add(id(found))
        return found

    def call(self, request: ChatRequest, *, step: str, occurrence: int) -> RecordedCall:
        fingerprint = request.fingerprint()
        exact = self._exact.get((fingerprint, occurrence))
        if exact is not None:
            return self._take(exact)
        same = self._by_fingerprint.get(fingerprint, [])
        unused = [c for c in same if id(c) not in self._used]
        ranked = sorted(unused or same, key=lambda c: (c.step != step, c.occurrence))
        if ranked:
            return self._take(ranked[0])
        raise self._miss(request, step)

    def tool(self, key: ToolKey, occurrence: int) -> RecordedTool:
        ident = (key.step, key.hop, key.name, key.arguments)
        exact = self._tools.get((ident, occurrence))
        if exact is not None:
            return self._take(exact)
        same = self._tools_by_id.get(ident, [])
        unused = [t for t in same if id(t) not in self._used]
        if unused or same:
            return self._take((unused or same)[0])
        recorded = [t for t in self.cassette.tools if t.step == key.step]
        closest = ""
        if recorded:
            best = max(recorded, key=lambda t: difflib.SequenceMatcher(
                None, f"{t.name}{t.arguments}", f"{key.name}{key.arguments}").ratio())
            closest = f"; closest recorded: {best.name}({best.arguments[:40]}) at hop {best.hop}"
        raise ReplayMiss(
            f"replay miss at {key.step}: tool call {key.name}({key.arguments[:40]}) at hop "
            f"{key.hop} is not in cassette {self.cassette.source}{closest}; re-record with "
            "--record",
            step=key.step, closest=closest or None,
        )

    def holds(self, request: ChatRequest, occurrence: int) -> bool:
        """Whether this very call (its request, its occurrence) is recorded."""
        return (request.fingerprint(), occurrence) in self._exact

    def recorded(self, request: ChatRequest) -> bool:
        """Whether the cassette holds this request (any step, any occurrence)."""
        return request.fingerprint() in self._by_fingerprint

    def _miss(self, request: ChatRequest, step: str) -> ReplayMiss:
        role = step.split("-", 1)[0]
        candidates = ([c for c in self.cassette.calls if c.step == step]
                      or [c for c in self.cassette.calls if c.step.split("-", 1)[0] == role]
                      or list(self.cassette.calls))
        where = f"cassette {self.cassette.source}"
        if not candidates:
            return ReplayMiss(
                f"replay miss at {step}: {where} holds no calls; re-record with --record",
                step=step,
            )
        body = request.body()
        text = canonical_json(body)

        def matcher(call: RecordedCall) -> difflib.SequenceMatcher[str]:
            return difflib.SequenceMatcher(None, canonical_json(call.request), text)

        shortlist = sorted(candidates, key=lambda c: matcher(c).quick_ratio(), reverse=True)
        scored = [(matcher(c).ratio(), c) for c in shortlist[:_RATIO_CANDIDATES]]
        ratio, best = max(scored, key=lambda pair: pair[0])
        hint = first_difference(best.request, body)
        closest = f"{best.step} #{best.occurrence} ({ratio:.0%} alike; {hint})"
        return ReplayMiss(
            f"replay miss at {step}: this request is not in {where}; closest recorded is "
            f"{closest}; re-record with --record, or undo the change",
            step=step, closest=closest,
        )
