"""The items a task names: "Compare tea, coffee and cocoa" names tea, coffee and cocoa.

A small local planner is held to one sub-task per named item (``engine.ladder``'s item
schema), so it is worth being sure before saying a task names items: only an English
list counts, two to eight short noun phrases joined by commas and a final "and" / "or"
("tea, coffee and cocoa", "cats and dogs", "email, phone calls, or meetings"). An item is
at most three words, without its article ("a hammer" is "hammer"), and it never starts
or ends at a word that joins or asks ("how", "for", "are"): "Explain how a hammer" gives
"hammer", "Rust are best used for" gives "Rust". Pairs that are one idea ("pros and
cons", "strengths and weaknesses") are not items. When a task holds several lists, the
longest is taken (the last of equals). Anything else names no items, and the planner
splits it freely, into as many sub-tasks as the task counts ("three tips",
:func:`named_count`) or else ``--workers``.
"""

from __future__ import annotations

import re

__all__ = ["MAX_ITEMS", "named_count", "named_items"]

MAX_ITEMS = 8
_MAX_WORDS = 3
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9'+#.-]*[A-Za-z0-9+#]|[A-Za-z]")
_ARTICLES = frozenset(["a", "an", "the", "some", "your", "my", "our", "their", "its"])
# Words that end an item: joining, asking, and the verbs a task starts with.
_STOPS = frozenset([
    "about", "above", "across", "after", "against", "along", "among", "and", "are",
    "around", "as", "at", "be", "before", "behind", "being", "below", "beneath", "beside",
    "besides", "between", "beyond", "both", "but", "by", "can", "could", "did", "do",
    "does", "doing", "down", "during", "each", "either", "for", "from", "had", "has",
    "have", "how", "if", "in", "inside", "into", "is", "it", "like", "may", "might", "must",
    "near", "neither", "nor", "not", "of", "off", "on", "onto", "or", "out", "outside",
    "over", "per", "should", "since", "so", "than", "that", "then", "these", "they", "this",
    "those", "through", "to", "toward", "towards", "under", "until", "up", "upon", "versus",
    "via", "vs", "was", "we", "were", "what", "when", "where", "whether", "which", "while",
    "who", "whom", "whose", "why", "will", "with", "within", "without", "would", "you",
    "compare", "contrast", "describe", "explain", "list", "give", "summarize", "summarise",
    "discuss", "evaluate", "review", "write", "name", "suggest", "recommend", "outline",
    "rank", "rate", "choose", "pick", "tell", "show", "analyse", "analyze", "assess",
    "define", "plan", "make", "find",
])
# "pros and cons": two words that are one idea, not two items.
_ONE_IDEA = frozenset([
    ("pros", "cons"), ("strengths", "weaknesses"), ("advantages", "disadvantages"),
    ("benefits", "drawbacks"), ("benefits", "risks"), ("costs", "benefits"),
    ("dos", "don'ts"), ("similarities", "differences"), ("ups", "downs"),
    ("rules", "regulations"), ("tips", "tricks"), ("pros", "cons."),
])
_PIECES = re.compile(r"(,\s*(?:and|or)\s+|\s+(?:and|or)\s+|,\s*)", re.IGNORECASE)
_CLAUSE_END = re.compile(r"[.;:!?()\[\]\"\n]")


def _words(text: str) -> list[str]:
    return _WORD.findall(text)


def _trim(words: list[str], *, from_left: bool) -> list[str]:
    """The item's words: an article dropped, cut at the first stop word (reading away
    from the list's joins), at most _MAX_WORDS."""
    kept: list[str] = []
    order = reversed(words) if from_left else iter(words)
    for word in order:
        if word.casefold() in _STOPS or len(kept) == _MAX_WORDS:
            break
        kept.append(word)
    if from_left:
        kept.reverse()
    while kept and kept[0].casefold() in _ARTICLES:
        kept.pop(0)
    return kept


def _lists(clause: str) -> list[list[str]]:
    """Every list in one clause, each as its items."""
    pieces = _PIECES.split(clause)
    texts, joins = pieces[0::2], pieces[1::2]
    found: list[list[str]] = []
    start = 0
    for end, join in enumerate(joins):
        if not join.strip(", ").strip():  # a bare comma: the list goes on
            continue
        # joins[start:end+1] is one list: texts[start] .. texts[end + 1]
        members = texts[start:end + 2]
        found.append(_items(members))
        start = end + 1
    return [items for items in found if len(items) >= 2]


def _items(members: list[str]) -> list[str]:
    middle = [_trim(_words(text), from_left=False) for text in members[1:-1]]
    inner = [words for words in middle if words]
    if len(inner) != len(middle):
        return []
    first = _trim(_words(members[0]), from_left=True)
    last = _trim(_words(members[-1]), from_left=False)
    if not first or not last:
        return []
    if not inner:  # "cats and dogs": a pair, each one word unless the other is longer
        width = max(1, min(len(first), len(last)))
        first, last = first[-width:], last[:width]
    else:
        width = max(len(words) for words in inner)
        first, last = first[-width:], last[:width]
    items = [" ".join(words) for words in (first, *inner, last)]
    pair = tuple(item.casefold() for item in items)
    if len(pair) == 2 and pair in _ONE_IDEA:
        return []
    return items


_NUMBERS = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8}
# "three practical tips", "5 ways": a count, then up to two words, then a plural noun.
_COUNT = re.compile(r"\b(two|three|four|five|six|seven|eight|[2-8])\s+(?:[a-z-]+\s+){0,2}"
                    r"[a-z]+s\b", re.IGNORECASE)


def named_count(task: str) -> int | None:
    """How many things ``task`` asks for by number ("Give three practical tips" is 3),
    if it says so once; None otherwise."""
    found = {match.group(1).casefold() for match in _COUNT.finditer(task)}
    if len(found) != 1:
        return None
    word = found.pop()
    return int(word) if word.isdigit() else _NUMBERS[word]


def named_items(task: str) -> tuple[str, ...]:
    """The items ``task`` names as a list (see module doc); () when it names none."""
    best: list[str] = []
    for clause in _CLAUSE_END.split(task):
        for items in _lists(clause):
            if len(items) >= len(best):
                best = items
    seen: set[str] = set()
    unique = [item for item in best
              if not (item.casefold() in seen or seen.add(item.casefold()))]
    if len(unique) < 2 or len(unique) > MAX_ITEMS:
        return ()
    return tuple(unique)
