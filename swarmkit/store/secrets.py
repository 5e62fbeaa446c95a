"""Keeping key values out of everything swarmkit writes (cassettes, history, exports).

Requests never carry headers or keys, but a key can still leak through a prompt or a
tool result, so every writer scans its bytes for the values of the configured key
variables before writing, and refuses when one is found.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from ..config import DEFAULT_KEY_ENV, ROLES, SwarmConfig

__all__ = ["MIN_SECRET_CHARS", "find_secret", "secret_values"]

# Shorter values are placeholders such as "x" or "test", not keys; scanning for them would
# refuse any text that happens to contain the word.
MIN_SECRET_CHARS = 8


def secret_values(config: SwarmConfig, env: Mapping[str, str]) -> dict[str, str]:
    """``{variable name: value}`` for every key variable the config names and env sets."""
    names = {DEFAULT_KEY_ENV}
    for role in ROLES:
        names.update(config.role(role).api_key_env)
    found = {}
    for name in sorted(names):
        value = env.get(name, "")
        if len(value.strip()) >= MIN_SECRET_CHARS:
            found[name] = value.strip()
    return found


def find_secret(text: str, secrets: Mapping[str, str]) -> str | None:
    """The name of the first variable whose value occurs in ``text`` (raw or JSON-escaped)."""
    for name, value in secrets.items():
        escaped = json.dumps(value, ensure_ascii=False)[1:-1]
        if value in text or escaped in text:
            return name
    return None
