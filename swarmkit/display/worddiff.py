"""What changed between two texts, word by word, and between two lists of items.

``word_diff`` splits both texts into words, runs of whitespace and punctuation, and lines
them up with ``difflib``; each segment is kept (``=``), added (``+``) or removed (``-``).
Whitespace never carries a mark: a segment's leading and trailing whitespace is emitted
as kept text, so marks sit on the words that differ. ``list_diff`` does the same for
lists of items (a plan's sub-tasks). Both forms of a marked text are here too: the
text/plain one (``{+added+}`` / ``[-removed-]``, as ``git diff --word-diff=plain``
writes it) and the escaped HTML one (``<ins>`` / ``<del>``).
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from difflib import SequenceMatcher
from typing import Literal

__all__ = ["Mark", "Segment", "list_diff", "marked_html", "marked_text", "word_diff"]

Mark = Literal["=", "+", "-"]
Segment = tuple[Mark, str]

_TOKENS = re.compile(r"\w+|\s+|[^\w\s]")
_EDGES = re.compile(r"^(\s*)(.*?)(\s*)$", re.DOTALL)


def _marked(mark: Mark, text: str) -> list[Segment]:
    """``text`` as ``mark``, its outer whitespace as kept text (a removed one's: dropped
    unless it separates words)."""
    if mark == "=" or not text:
        return [(mark, text)] if text else []
    match = _EDGES.match(text)
    assert match is not None  # the pattern matches any text
    lead, core, trail = match.groups()
    if not core:  # only whitespace changed: shown as it is in the newer text
        return [("=", text)] if mark == "+" else []
    out: list[Segment] = []
    if lead and mark == "+":
        out.append(("=", lead))
    out.append((mark, core))
    if trail and mark == "+":
        out.append(("=", trail))
    return out


def _joined(segments: list[Segment]) -> list[Segment]:
    """Neighbouring segments of one mark merged into one."""
    out: list[Segment] = []
    for mark, text in segments:
        if out and out[-1][0] == mark:
            out[-1] = (mark, out[-1][1] + text)
        else:
            out.append((mark, text))
    return out


def _spaced(tokens: list[str]) -> list[str]:
    return [" " if token.isspace() else token for token in tokens]


def word_diff(base: str, other: str) -> list[Segment]:
    """``other`` against ``base``: kept, added and removed runs of words, in order."""
    a, b = _TOKENS.findall(base), _TOKENS.findall(other)
    segments: list[Segment] = []
    # Matched with every run of whitespace as one space: a changed indent or line break
    # must not pull the words around it out of line.
    matcher = SequenceMatcher(None, _spaced(a), _spaced(b))
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            segments.append(("=", "".join(b[j1:j2])))
            continue
        removed, added = "".join(a[i1:i2]), "".join(b[j1:j2])
        segments += _marked("-", removed)
        segments += _marked("+", added)
        if removed and added and not removed.strip() and not added.strip():
            continue
        # A removed run that ends a word next to an added one needs a space between.
        if removed.strip() and not added and removed[-1:].isspace():
            segments.append(("=", " "))
    return _joined(segments)


def list_diff(base: Sequence[str], other: Sequence[str]) -> list[tuple[Mark, str]]:
    """``other``'s items against ``base``'s: kept, added and removed, in order."""
    rows: list[tuple[Mark, str]] = []
    matcher = SequenceMatcher(None, list(base), list(other), autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            rows += [("=", item) for item in other[j1:j2]]
            continue
        rows += [("-", item) for item in base[i1:i2]]
        rows += [("+", item) for item in other[j1:j2]]
    return rows


def marked_text(segments: Sequence[Segment]) -> str:
    """``{+added+}`` and ``[-removed-]`` around what changed."""
    wrap = {"=": "{}", "+": "{{+{}+}}", "-": "[-{}-]"}
    return "".join(wrap[mark].format(text) for mark, text in segments)


def marked_html(segments: Sequence[Segment]) -> str:
    """Escaped text with ``<ins class="sk-ins">`` / ``<del class="sk-del">`` marks."""
    parts = []
    for mark, text in segments:
        escaped = html.escape(text, quote=True)
        if mark == "+":
            parts.append(f'<ins class="sk-ins">{escaped}</ins>')
        elif mark == "-":
            parts.append(f'<del class="sk-del">{escaped}</del>')
        else:
            parts.append(escaped)
    return "".join(parts)
