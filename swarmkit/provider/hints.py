"""What to do about a failed HTTP call: the hint every ProviderError ends with."""

from __future__ import annotations

__all__ = ["HINT_DOWN", "RETRYABLE_STATUS", "http_hint"]

# Worth another attempt besides every 5xx: timeout, conflict, rate limit.
RETRYABLE_STATUS = frozenset({408, 409, 429})

HINT_DOWN = "the server may be down or overloaded; try again later"


def http_hint(status: int) -> str:
    """What to do about an HTTP error; ``{key_env}`` is filled in with the key's name."""
    if status in (401, 403):
        return "check the key in ${key_env} and that it may use this model"
    if status == 404:
        return "check the model name and base_url"
    if status == 429:
        return "lower concurrency, set rpm/tpm, or try again later"
    if status >= 500 or status in RETRYABLE_STATUS:
        return HINT_DOWN
    return "the request was refused as sent; check the model's options"
