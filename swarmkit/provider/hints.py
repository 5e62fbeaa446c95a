"""What to do about a failed HTTP call: one table, said in two places.

Every ProviderError ends with ``error`` advice (``{key_env}`` is filled in with the key's
name); a worker that failed without advice of its own shows the ``display`` form in the
run's tables (``swarmkit.display.failures``). The advice follows the HTTP status, except
where a server's words say more than its status: LiteLLM's proxy answers a key it cannot
check with a 400 "No connected db.", which is about the key, not the request.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["HINT_DOWN", "HINT_REFUSED", "RETRYABLE_STATUS", "Advice", "advice", "http_hint",
           "refuses_tools"]

# Worth another attempt besides every 5xx: timeout, conflict, rate limit.
RETRYABLE_STATUS = frozenset({408, 409, 429})

# How servers word a refusal of a request's tools (no tool calling): llama.cpp without
# --jinja ("tools param requires --jinja flag", HTTP 500), vLLM without
# --enable-auto-tool-choice (400), Ollama's "does not support tools" (400).
_TOOLS_REFUSAL = re.compile(r"\btools?\b|tool_choice|jinja|function.call", re.I)


def refuses_tools(status: int, text: str) -> bool:
    """Whether an HTTP error (``status``, its body ``text``) refuses the request's tools:
    a server without tool calling, which says so on every attempt (not worth a retry)."""
    return (status in (400, 404, 415, 422) or status >= 500) and bool(
        _TOOLS_REFUSAL.search(text))


HINT_DOWN = "the server may be down or overloaded; try again later"
HINT_REFUSED = ("nothing listens at that address: check the base URL, or start the server "
                "first")


@dataclass(frozen=True, slots=True)
class Advice:
    """What to do about one kind of failed call."""

    error: str  # ends the ProviderError's message
    display: str  # a failed worker's hint in the tables


_KEY = Advice("check the key in ${key_env} and that it may use this model",
              "set-up mistake: check the API key (its variable name and its value)")
_MODEL = Advice("check the model name and base_url",
                "set-up mistake: check the model name and the base URL")
_RATE = Advice("lower concurrency, set rpm/tpm, or try again later",
               "rate limited: lower the concurrency or wait")
_DOWN = Advice(HINT_DOWN, "the server failed: try again later or lower the concurrency")
_REFUSED = Advice("the request was refused as sent; check the model's options",
                  "set-up mistake: the server refused the request; check model and options")
_UNREACHED = Advice(HINT_DOWN,
                    "the provider could not be reached: check the base URL and the network")
_PROXY_KEY = Advice(
    "the proxy could not check the key in ${key_env} (LiteLLM: 'No connected db.'); "
    "check the key, or the proxy's master_key or database",
    "set-up mistake: the proxy could not check the key; check the key, or the proxy's "
    "master_key or database")
_BY_STATUS = {401: _KEY, 403: _KEY, 404: _MODEL, 429: _RATE}
# (status, what the error's message says) -> advice, looked at before the status alone.
_BY_TEXT = ((400, re.compile(r"no connected db", re.I), _PROXY_KEY),)


def advice(status: int | None, detail: str = "") -> Advice:
    """The advice for a call whose HTTP status was ``status`` and whose error said
    ``detail`` (None: no answer; below 400 the failure came after the answer's status, so
    the status tells nothing)."""
    if status is None or status < 400:
        return _UNREACHED
    for when, words, said in _BY_TEXT:
        if status == when and words.search(detail):
            return said
    found = _BY_STATUS.get(status)
    if found is not None:
        return found
    return _DOWN if status >= 500 or status in RETRYABLE_STATUS else _REFUSED


def http_hint(status: int, detail: str = "") -> str:
    """What a ProviderError for an HTTP error whose message was ``detail`` says to do."""
    return advice(status, detail).error
