"""Re-running one worker of a past run: everything else is served from the cache.

The rerun uses the past run's own config with the cache on and that worker's step in
``refresh``, so only the worker's call goes to the server; the reducer then misses the
cache by itself, because one of its inputs changed.

The past run comes from a history file, which may come from anywhere: its endpoints and
key variables are used only if this process has used them or the session names them
(``swarmkit.credentials.endpoints``); otherwise the rerun is refused until the user names the
endpoint (``base_url``, which then wins) or the key variable.
"""

from __future__ import annotations

import os
from dataclasses import replace
from urllib.parse import urlsplit

from ..config.swarmconfig import ROLES, RoleConfig, SwarmConfig
from ..config.urls import origin, redact_url
from ..credentials.endpoints import OPENAI_BASE_URL, used_endpoint, used_key_envs
from ..errors import StoreError
from ..record.runrecord import RunRecord
from ..record.steps import worker_step

__all__ = ["rerun_config", "rerun_endpoints", "stored_config"]


def rerun_config(
    run: RunRecord,
    worker: int | str,
    *,
    base_url: str | None = None,
    api_key_env: str | None = None,
    trusted: SwarmConfig | None = None,
) -> SwarmConfig:
    """The config that re-runs worker ``worker`` of ``run`` (its 1-based index, or in a
    tree a child's dotted id such as ``"2.1"``) and what merges it: in a tree, the child
    swarm's reducer and the parents' answers above it miss the cache by themselves, as
    their inputs change; the rest is served from it.

    The endpoints are checked as :func:`stored_config` says.
    """
    if not run.plan:
        raise StoreError(f"run {run.run_id} has no plan, so no worker to re-run; run it again")
    wanted = str(worker).strip()
    if wanted not in {record.id for record in run.walk()}:
        children = next((r.id for r in run.walk() if r.parent is not None), None)
        dotted = f", or a child's dotted id such as {children}" if children else ""
        raise StoreError(
            f"run {run.run_id} has workers 1 to {len(run.plan)}{dotted}; pick one of those, "
            f"not {wanted or repr(wanted)}"
        )
    config = stored_config(run, base_url=base_url, api_key_env=api_key_env, trusted=trusted)
    return replace(config, cache=True, refresh=(worker_step(wanted),))


def stored_config(
    run: RunRecord,
    *,
    base_url: str | None = None,
    api_key_env: str | None = None,
    trusted: SwarmConfig | None = None,
) -> SwarmConfig:
    """``run``'s own config, safe to send calls with (``%swarm rerun``, ``%swarm resume``).

    ``base_url`` / ``api_key_env`` replace the stored ones for every hosted role.
    ``trusted`` is the session's config (default: the environment's, ``SWARMKIT_*``): its
    endpoints and key variables may be used, as may those this process has used. Any
    other raises StoreError saying what to pass.
    """
    if trusted is None:
        trusted = SwarmConfig.from_env(os.environ)
    try:
        config = SwarmConfig.from_summary(run.config)
    except (KeyError, TypeError, ValueError) as exc:
        raise StoreError(
            f"run {run.run_id} has an unreadable config ({exc}); run the task again instead"
        ) from None
    roles = {}
    # The judge's endpoint and key are checked like every role's: a file names them too.
    judged = (*ROLES, "judge") if config.judge is not None else ROLES
    for name in judged:
        role = config.role(name)
        if role.is_local:
            # The embedded server's port was ephemeral: let the rerun start (or reuse) its own.
            roles[name] = replace(role, base_url=None)
            continue
        if base_url is not None:
            role = replace(role, base_url=base_url)
        if api_key_env is not None:
            role = replace(role, api_key_env=tuple(api_key_env.split(",")))
        roles[name] = _checked(run, role, trusted, named_url=base_url is not None,
                               named_key=api_key_env is not None)
    judge = roles.pop("judge", None)
    if judge is not None:
        config = replace(config, judge_base_url=judge.base_url,
                         judge_api_key_env=judge.api_key_env)
    config = replace(config, **roles, record=None, replay=None, resume=None)
    config.validate()  # a --base-url given here has not been checked yet
    return config


def rerun_endpoints(config: SwarmConfig) -> str:
    """Where the rerun's calls go, for the user to see: ``worker: URL ($KEY)`` per role."""
    parts = []
    for name in (*ROLES, "judge") if config.judge is not None else ROLES:
        role = config.role(name)
        where = ("the embedded model" if role.is_local
                 else redact_url(role.base_url or _default_url()))
        keys = "" if role.is_local else f" (${' or $'.join(role.api_key_env)})"
        parts.append(f"{name}: {where}{keys}")
    return "; ".join(parts)


def _session_names(trusted: SwarmConfig) -> tuple[set[str], set[str]]:
    urls: set[str] = set()
    keys: set[str] = set()
    for name in (*ROLES, "judge") if trusted.judge is not None else ROLES:
        role = trusted.role(name)
        keys.update(role.api_key_env)
        if role.base_url is not None:
            urls.add(role.base_url)
    return urls, keys


def _default_url() -> str:
    return os.environ.get("OPENAI_BASE_URL") or OPENAI_BASE_URL


def _checked(
    run: RunRecord, role: RoleConfig, trusted: SwarmConfig, *, named_url: bool,
    named_key: bool,
) -> RoleConfig:
    session_urls, session_keys = _session_names(trusted)
    used = used_endpoint(role.base_url or _default_url())
    if role.base_url is not None and not named_url:
        session = next((u for u in session_urls if origin(u) == origin(role.base_url)), None)
        if session is None and used is None:
            raise StoreError(
                f"run {run.run_id} sends its calls to {redact_url(role.base_url)}, which "
                "this session has not used; to send your key there, pass --base-url "
                "with that URL (or with the endpoint you want)"
            )
        if "@" in urlsplit(role.base_url).netloc:  # stored masked: the session has the real
            role = replace(role, base_url=session or (used.url if used else role.base_url))
    if not named_key:
        # An endpoint the user named may get any key this process has used as a key; an
        # endpoint from the file only the keys this process has sent to it.
        allowed = session_keys | (used.key_envs if used is not None else frozenset())
        if named_url:
            allowed |= used_key_envs()
        unknown = [k for k in role.api_key_env if k not in allowed]
        if unknown:
            raise StoreError(
                f"run {run.run_id} reads its key from ${unknown[0]}, which this session has "
                "not used as a key; pass --api-key-env with the variable that holds your key"
            )
    return role
