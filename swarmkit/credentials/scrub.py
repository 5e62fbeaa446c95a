"""Scrubbing credentials out of text where it enters swarmkit, before anything cuts it.

Text from outside (a server's error body or reply, a tool's result or error, an
exception's message) goes through :func:`scrub` at the point where it enters a Run, a
store or a display, and always *before* it is cut to a length: a key straddling a cut
leaves a fragment that no later check can recognise.

Two kinds of credential are removed:

- known values: the keys of the variables a config names and the user and password of a
  base URL, raw or JSON/URL-escaped, and inside a ``Basic`` token (base64 of
  ``user:key``, decoded and checked). They are remembered process-wide as they are read
  (:func:`remember_secrets`): the places that show or write text are many and far from
  the config, and a key this process has read stays a secret for all of them.
- credential forms, whose shape gives them away even when the value is unknown:
  ``Bearer <token>``, ``Basic <base64 of user:password>``, ``x-api-key: <token>`` (and
  ``api-key``, ``api_key=``, ``access_token=``), the userinfo of any URL
  (``http://***@host/v1``), and the vendors' key shapes (``sk-...``, ``ghp_...``,
  ``AKIA...``: ``swarmkit.credentials.vendorkeys``).

A form's token is removed when it looks like a credential rather than a word of prose or
code (:func:`_secret_like`): a digit in it, or a length no word has, or (after
``Bearer``) a capital inside it. ``Bearer authentication``, ``api_key = os.environ[...]``
and ``api_key=YOUR_API_KEY`` are left as written: a false positive in an answer is a
real cost too.

Every reply goes through here, so the common case (nothing to remove) is two scans: the
key shapes' expression, and the lower-cased text for the words every form holds;
``benchmarks/scrub.py`` measures it against the scrub before the key shapes.
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
import re
import threading
from collections.abc import Iterable
from dataclasses import replace
from urllib.parse import quote

from ..record.modelcall import ChatResponse
from .vendorkeys import KEY_SHAPES

_SPACE = re.compile(r"\s+")

__all__ = [
    "MIN_SECRET_CHARS",
    "REDACTED",
    "StreamScrubber",
    "known_secrets",
    "one_line",
    "remember_secrets",
    "scrub",
    "scrub_line",
    "scrub_reply",
]

REDACTED = "[redacted]"
# Shorter values are placeholders such as "x", "ollama" or "test", not keys: scrubbing them
# would mangle every text that happens to contain those letters.
MIN_SECRET_CHARS = 8

# Replaced, never mutated: every scrub reads it without a lock or a copy (it runs on each
# reply and error), and the same frozenset keeps hitting _patterns' cache.
_known: frozenset[str] = frozenset()
_lock = threading.Lock()


def remember_secrets(values: Iterable[str]) -> None:
    """Treat ``values`` as secrets in every text scrubbed from now on (in this process)."""
    global _known
    fresh = {v.strip() for v in values if len(v.strip()) >= MIN_SECRET_CHARS}
    if not fresh <= _known:
        with _lock:
            _known = _known | fresh


def known_secrets() -> frozenset[str]:
    return _known


def _variants(value: str) -> set[str]:
    """The forms a value takes in the text a server or tool sends back."""
    forms = {value, json.dumps(value, ensure_ascii=False)[1:-1], json.dumps(value)[1:-1],
             quote(value, safe="")}
    return {f for f in forms if len(f) >= MIN_SECRET_CHARS}


# A token as headers carry it. Only a credential-shaped one is removed (_secret_like), so
# that prose and code ("Bearer authentication", `api_key = os.environ[...]`) are left alone.
_TOKEN = r"[A-Za-z0-9._~+/=-]{8,}"
_BEARER = re.compile(rf"(?i)\b(bearer\s+)({_TOKEN})")
_BASIC = re.compile(r"(?i)\b(basic\s+)([A-Za-z0-9+/]{6,}={0,2})")
_HEADER = re.compile(
    r"(?i)\b((?:x-(?:goog-)?)?api[-_]?key|access[-_]?token|auth[-_]?token)"
    r"""(["']?\s*[:=]\s*["']?)([^\s"',;&{}\[\]]{4,})"""
)
# No English word, and no dotted name of code, is this long without a break.
_LONG_TOKEN = 20
_VARIABLE_NAME = re.compile(r"[A-Z_]+")
_USERINFO = re.compile(r"\b([A-Za-z][A-Za-z0-9+.-]*://)([^\s/?#@]+)@")
_WORD = re.compile(r"\S+")


@functools.lru_cache(maxsize=32)
def _patterns(secrets: frozenset[str]) -> re.Pattern[str] | None:
    """One alternation of every known value's forms, longest first."""
    forms = sorted({f for s in secrets for f in _variants(s)}, key=lambda f: (-len(f), f))
    if not forms:
        return None
    return re.compile("|".join(re.escape(f) for f in forms))


def _basic(match: re.Match[str], secrets: frozenset[str]) -> str:
    token = match.group(2)
    try:
        decoded = base64.b64decode(token + "=" * (-len(token) % 4), validate=True)
        text = decoded.decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return match.group(0)  # not base64 text: a word such as "Basic understanding"
    if ":" in text or any(s in text for s in secrets):
        return match.group(1) + REDACTED
    return match.group(0)


def _secret_like(token: str, *, inner_capital: bool) -> bool:
    """Whether a form's token is a credential rather than a word or a name of code: a
    digit in it, or 20 characters and no dot (``os.environ.get``) and not a variable's
    name (``YOUR_API_KEY``), or, where ``inner_capital``, a capital after a small
    letter (``Bearer abcXYZ...``)."""
    if any(c.isdigit() for c in token):
        return True
    if _VARIABLE_NAME.fullmatch(token):  # api_key=YOUR_OPENAI_API_KEY_HERE: a name
        return False
    if len(token) >= _LONG_TOKEN and "." not in token:
        return True
    return inner_capital and any(c.isupper() and token[i - 1].islower()
                                 for i, c in enumerate(token) if i)


def _shaped(match: re.Match[str], group: int, *, inner_capital: bool = False) -> str:
    if not _secret_like(match.group(group), inner_capital=inner_capital):
        return match.group(0)
    return match.group(0)[: match.start(group) - match.start()] + REDACTED


def scrub(text: str, extra: Iterable[str] = ()) -> str:
    """``text`` with every known secret (and ``extra``) and credential form replaced."""
    secrets = known_secrets()
    more = {v.strip() for v in extra if len(v.strip()) >= MIN_SECRET_CHARS}
    if more and not more <= secrets:  # (usually already known: keep the cached pattern's key)
        secrets |= more
    values = _patterns(secrets)
    if values is not None:
        text = values.sub(REDACTED, text)
    return _forms(text, secrets)


def scrub_reply(
    response: ChatResponse, streamed: str | None = None, extra: Iterable[str] = ()
) -> ChatResponse:
    """``response`` with its text and tool arguments scrubbed. A streamed answer's text
    becomes ``streamed``: what a :class:`StreamScrubber` passed on while it streamed."""
    calls = tuple(replace(c, arguments=scrub(c.arguments, extra)) for c in response.tool_calls)
    content = response.content
    if content is not None:
        content = streamed if streamed is not None else scrub(content, extra)
    if not calls and content == response.content:
        return response  # nothing to change (most replies): a frozen value, kept as is
    return replace(response, content=content, tool_calls=calls)


def scrub_line(text: str, limit: int) -> str:
    """``text`` scrubbed, then made one line of at most ``limit`` characters (that order)."""
    return one_line(scrub(text), limit)


# Every credential form holds one of these, lower-cased: one scan of a text without any
# of them stands for the four expressions below. The text is lower-cased for it, since a
# case-insensitive alternation is several times slower to scan in `re`.
_FORM_WORDS = re.compile(r"bearer|basic|api|token|://")


def _forms(text: str, secrets: frozenset[str]) -> str:
    text = KEY_SHAPES.sub(REDACTED, text)
    if _FORM_WORDS.search(text.lower()) is None:
        return text
    text = _BEARER.sub(lambda m: _shaped(m, 2, inner_capital=True), text)
    text = _BASIC.sub(lambda m: _basic(m, secrets), text)
    text = _HEADER.sub(lambda m: _shaped(m, 3), text)
    return _USERINFO.sub(r"\1***@", text)


class _Held:
    """One stage of :class:`StreamScrubber`: text held back until it is safe to pass on."""

    def __init__(self, patterns: list[re.Pattern[str]], words: int, prefixes: list[str]) -> None:
        self.patterns, self.words, self.prefixes = patterns, words, prefixes
        self.text = ""

    def take(self, piece: str) -> str:
        """What can go on: nothing a pattern could still match, or matches, is cut."""
        self.text += piece
        held = self.text
        cut = len(held)
        if self.words:
            starts = [m.start() for m in _WORD.finditer(held)]
            cut = starts[-self.words] if len(starts) >= self.words else 0
        for form in self.prefixes:  # an end that may be the start of a known value
            for size in range(min(len(form) - 1, len(held)), 0, -1):
                if held.endswith(form[:size]):
                    cut = min(cut, len(held) - size)
                    break
        spans = [m.span() for p in self.patterns for m in p.finditer(held)]
        moved = True
        while moved:  # only ever moves back, so it ends
            moved = False
            for start, end in spans:
                if start < cut and (cut < end or end == len(held)):
                    cut, moved = start, True
        out, self.text = held[:cut], held[cut:]
        return out

    def rest(self) -> str:
        out, self.text = self.text, ""
        return out


class StreamScrubber:
    """Scrubs text that arrives in pieces (a streamed answer) as it arrives.

    A credential split across two pieces is still found: the tail that could be the start
    of one (the last few words, and any end that begins a known value) is held back until
    the next piece or :meth:`flush`, and a credential is never cut in two. Known values
    are replaced first and the credential forms looked for in the result, as
    :func:`scrub` does, so the pieces add up to ``scrub`` of the whole text.
    """

    def __init__(self) -> None:
        self._secrets = known_secrets()
        values = _patterns(self._secrets)
        prefixes = sorted({f for s in self._secrets for f in _variants(s)})
        self._values = _Held([values] if values is not None else [], 0, prefixes)
        # A header form spans up to three words: ``api_key = "value"``.
        self._forms = _Held([KEY_SHAPES, _BEARER, _BASIC, _HEADER, _USERINFO], 3, [])

    def _values_out(self, text: str) -> str:
        values = _patterns(self._secrets)
        return values.sub(REDACTED, text) if values is not None and text else text

    def feed(self, piece: str) -> str:
        clean = self._values_out(self._values.take(piece))
        out = self._forms.take(clean)
        return _forms(out, self._secrets) if out else ""

    def flush(self) -> str:
        clean = self._values_out(self._values.rest())
        out = self._forms.take(clean) + self._forms.rest()
        return _forms(out, self._secrets) if out else ""


def one_line(text: str | None, limit: int) -> str:
    """``text`` with its whitespace collapsed, cut to ``limit`` characters (an ellipsis
    last); None is "". Every clipped cell and message goes through here."""
    flat = _SPACE.sub(" ", text or "").strip()
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
