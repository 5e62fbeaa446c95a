"""What ``auto`` chose: the embedded model's name, and the notices that it is at work:
when ``auto`` fell back to it, and when it is the judge (allowed, but weak).

``auto`` is the hosted default when a key or base URL is configured and the embedded
local model otherwise (``swarmkit.api.resolve_models``, which records the roles it sent
to the embedded model in ``SwarmConfig.auto_local``). A newcomer with no key must not
mistake the small local model's answers for a hosted model's, so every view says so in
one line: :func:`auto_notice` reads it from a run's recorded config, so a replay and an
exported notebook say it too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["EMBEDDED_MODEL_NAME", "auto_notice", "judge_notice"]

# The embedded model as people call it (provider.embedded serves it as "local"): the one
# place its name is written for the user. Change it with the model.
EMBEDDED_MODEL_NAME = "SmolLM2 135M"

_ROLES = ("planner", "worker", "reducer")
_ROLE_WORDS = {"planner": "planner", "worker": "workers", "reducer": "reducer"}


def _joined(items: Sequence[str], word: str) -> str:
    """``a``, ``a or b``, ``a, b or c`` (with ``word`` "or" or "and")."""
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} {word} {items[-1]}"


def auto_notice(config: Mapping[str, Any]) -> str | None:
    """``model: local (embedded SmolLM2 135M; no OPENAI_API_KEY set, so auto chose it)``
    for a run whose ``auto`` fell back to the embedded model; None otherwise.

    ``config`` is a run's recorded config (``RunRecord.config``, ``SwarmConfig.summary()``,
    a ``RunStarted`` event's): the roles are its ``auto_local``, the key variables each
    role's ``api_key_env``. When only some roles fell back, the line names them.
    """
    chosen = [role for role in _ROLES if role in (config.get("auto_local") or ())]
    if not chosen:
        return None
    keys: list[str] = []
    for role in chosen:
        role_config = config.get(role)
        names = role_config.get("api_key_env") if isinstance(role_config, Mapping) else None
        for name in names or ():
            if isinstance(name, str) and name not in keys:
                keys.append(name)
    missing = f"no {_joined(keys, 'or')} set" if keys else "no API key set"
    who = ("" if len(chosen) == len(_ROLES)
           else _joined([_ROLE_WORDS[r] for r in chosen], "and") + " ")
    return (f"{who}model: local (embedded {EMBEDDED_MODEL_NAME}; {missing}, so auto chose "
            "it)")


def judge_notice(config: Mapping[str, Any]) -> str | None:
    """``judge: local (embedded SmolLM2 135M) is a weak judge; ...`` for a run whose judge
    is the embedded model; None otherwise. ``config`` is a run's recorded config, like
    :func:`auto_notice`'s, so a replay says it too."""
    judge = config.get("judge")
    if not isinstance(judge, Mapping) or judge.get("model") != "local":
        return None
    return (f"judge: local (embedded {EMBEDDED_MODEL_NAME}) is a weak judge, its scores "
            "say little; give --judge a hosted model for scores to trust")
