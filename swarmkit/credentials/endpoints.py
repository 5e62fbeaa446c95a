"""Endpoints this process has sent a key to: the only ones a config read from a file may
call without being told.

A history database or a cassette may come from another machine or another person.
Rebuilding a config from it and calling the endpoint it names would send the user's key
(``Authorization: Bearer ...``) to any host the file chooses, or send the value of any
variable the file names as the key. Paths that do so (``%swarm rerun``) call only
endpoints, with only key variables, that this process has used or the session names, and
otherwise ask the user to name them.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from ..config.urls import origin

__all__ = [
    "OPENAI_BASE_URL",
    "UsedEndpoint",
    "remember_endpoint",
    "used_endpoint",
    "used_key_envs",
]

# Where a role with no base URL (and no ``$OPENAI_BASE_URL``) sends its calls and its key.
OPENAI_BASE_URL = "https://api.openai.com/v1"


@dataclass(frozen=True, slots=True)
class UsedEndpoint:
    """The URL last used for one origin (userinfo included: a stored URL has it masked,
    and a rerun needs the real one back), and the key variables sent to it."""

    url: str
    key_envs: frozenset[str] = field(default_factory=frozenset)


_used: dict[str, UsedEndpoint] = {}
_lock = threading.Lock()


def remember_endpoint(url: str, key_env: str) -> None:
    """Note that this process sends requests to ``url`` with the key in ``key_env``."""
    with _lock:
        before = _used.get(origin(url))
        names = (before.key_envs if before is not None else frozenset()) | {key_env}
        _used[origin(url)] = UsedEndpoint(url, names)


def used_endpoint(url: str) -> UsedEndpoint | None:
    """What this process used at ``url``'s scheme, host and port; None if nothing."""
    with _lock:
        return _used.get(origin(url))


def used_key_envs() -> frozenset[str]:
    """Every key variable this process has sent to any endpoint."""
    with _lock:
        return frozenset().union(*(used.key_envs for used in _used.values()))
