"""Keeping key values out of everything swarmkit writes (cassettes, history, exports).

Requests never carry headers or keys, and text from outside is scrubbed where it enters
(``swarmkit.credentials.scrub``). A key can still reach a writer through the user's own prompt, so
every writer also scans its bytes for the known values before writing, and refuses when
one is found: the last line, not the first.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from urllib.parse import unquote, urlsplit

from ..config.swarmconfig import DEFAULT_KEY_ENV, ROLES, SwarmConfig
from .scrub import MIN_SECRET_CHARS, remember_secrets

__all__ = ["MIN_SECRET_CHARS", "find_secret", "find_secret_in_chunks", "secret_values"]


def secret_values(config: SwarmConfig, env: Mapping[str, str]) -> dict[str, str]:
    """``{name: value}`` for every key variable the config names and env sets, and for the
    user and password of each role's base URL (named "the password in the worker base_url").

    They are remembered for ``swarmkit.credentials.scrub`` too, for the rest of the process.
    """
    # The judge's key and endpoint are secrets like any role's (it may have its own).
    roles = (*ROLES, "judge") if config.judge is not None else ROLES
    names = {DEFAULT_KEY_ENV}
    for role in roles:
        names.update(config.role(role).api_key_env)
    found = {}
    for name in sorted(names):
        value = env.get(name, "")
        if len(value.strip()) >= MIN_SECRET_CHARS:
            found[name] = value.strip()
    for role in roles:
        parts = urlsplit(config.role(role).base_url or "")
        for what, part in (("user", parts.username), ("password", parts.password)):
            value = unquote(part or "")
            if len(value) >= MIN_SECRET_CHARS and value not in found.values():
                found[f"the {what} in the {role} base_url"] = value
    remember_secrets(found.values())
    return found


def find_secret(text: str, secrets: Mapping[str, str]) -> str | None:
    """What the first secret found in ``text`` (raw or JSON-escaped) is: ``$NAME`` for a
    variable's value, or where in a base URL it came from."""
    for name, value in secrets.items():
        escaped = json.dumps(value, ensure_ascii=False)[1:-1]
        if value in text or escaped in text:
            return f"${name}" if name.isidentifier() else name
    return None


def find_secret_in_chunks(chunks: Iterable[str], secrets: Mapping[str, str],
                          refuse: Callable[[str], Exception]) -> Iterator[str]:
    """``chunks`` as they are, each scanned like :func:`find_secret` with the end of the
    one before (so a value split across two is found too): at the first secret found,
    raises ``refuse(what)``, before that chunk is given. The caller writes the chunks in
    one transaction, which the raise rolls back."""
    overlap = max((max(len(value), len(json.dumps(value, ensure_ascii=False)) - 2)
                   for value in secrets.values()), default=1) - 1
    tail = ""
    for chunk in chunks:
        leaked = find_secret(tail + chunk, secrets)
        if leaked is not None:
            raise refuse(leaked)
        tail = chunk[-overlap:] if overlap > 0 else ""
        yield chunk
