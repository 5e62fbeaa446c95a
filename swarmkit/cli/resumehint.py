"""The ``jswarm resume`` command that continues a run, as the terminal prints it.

A resume in a new process sends calls only to the endpoints and key variables it is
given or trusts by itself (``store.rerun.stored_config``: those of its own
``SWARMKIT_*`` environment), which is the safety rule for a history that may come from
anywhere. So the printed command names what the run needs beyond those: the base URL
(``--base-url``), the key variables (``--api-key-env``) and a history file other than
the default (``--history-path``). Run as printed, it continues the run.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping
from typing import Any

from ..config.swarmconfig import ROLES, SwarmConfig, is_local_model
from ..config.urls import MASK, origin

__all__ = ["resume_command"]


def _hosted_roles(config: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The stored roles (the judge too) that call a hosted endpoint."""
    roles = [config.get(name) for name in (*ROLES, "judge")]
    return [role for role in roles
            if isinstance(role, Mapping) and not is_local_model(role.get("model"))]


def resume_command(prog: str, run_id: str, config: Mapping[str, Any],
                   env: Mapping[str, str] | None = None) -> str:
    """``PROG resume RUN`` with the flags a new process needs to continue the run whose
    stored config (``RunRecord.config``) is ``config``."""
    env = os.environ if env is None else env
    trusted = SwarmConfig.from_env(env)
    trusted_urls = {origin(trusted.role(name).base_url or "") for name in ROLES
                    if trusted.role(name).base_url}
    trusted_keys = {key for name in ROLES for key in trusted.role(name).api_key_env}
    words = [prog, "resume", run_id]
    roles = _hosted_roles(config)
    # One --base-url sets every role's: a run whose roles used several endpoints gets
    # none here, and the resume names what it refuses.
    urls = {role.get("base_url") for role in roles}
    url = next(iter(urls)) if len(urls) == 1 else None
    if isinstance(url, str) and origin(url) not in trusted_urls:
        # A URL with a user or password is stored masked: only its owner can fill it in.
        words += ["--base-url", "URL" if f"{MASK}@" in url else shlex.quote(url)]
    keys: list[str] = []
    for role in roles:
        for key in role.get("api_key_env") or ():
            if isinstance(key, str) and key not in keys:
                keys.append(key)
    if any(key not in trusted_keys for key in keys):
        words += ["--api-key-env", shlex.quote(",".join(keys))]
    history = config.get("history_path")
    if isinstance(history, str) and history != trusted.history_path:
        words += ["--history-path", shlex.quote(history)]
    return " ".join(words)
