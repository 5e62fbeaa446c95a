"""Where a cluster run goes: Ray, imported only here and only when a run asks for it.

``cluster="ray"`` starts a local Ray the first time (no dashboard) and keeps it for the
rest of the process, so the next run starts at once; ``"ray:auto"`` joins the cluster
running on this machine (``address="auto"``); ``"ray://HOST:PORT"`` goes through Ray
Client. A Ray this process started already (by swarmkit or by the user) is used as it
is. ``ray.init`` registers its own shutdown at exit: a local Ray ends with the kernel.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from types import ModuleType
from typing import Any

from ..config.swarmconfig import SwarmConfig
from ..credentials.secrets import secret_values
from ..errors import ConfigError

__all__ = ["INSTALL", "connect", "ray_module", "refuse_unshardable", "shard_count",
           "shard_env"]

INSTALL = 'pip install "jupyter-swarmkit[ray]"'


def ray_module() -> ModuleType:
    """The ``ray`` package, or a one-line ConfigError saying how to install it."""
    try:
        import ray
    except ImportError:
        raise ConfigError(f"cluster: Ray is not installed; {INSTALL}") from None
    return ray


_STARTING = threading.Lock()
CONNECT_WAIT = 120.0  # seconds: a busy machine's local start takes about 10


def connect(target: str) -> ModuleType:
    """Ray, connected to ``target`` (a checked ``cluster=`` value). Blocks: call it off
    the event loop (the first local start takes seconds)."""
    ray = ray_module()
    with _STARTING:
        if not ray.is_initialized():
            _start(ray, target)
    return ray


def _start(ray: ModuleType, target: str) -> None:
    """``ray.init`` on a thread of its own that lives as long as the process: the local
    Ray's processes are started with a parent-death signal, which Linux sends when the
    *thread* that started them ends (an executor's thread would take them with it)."""
    options: dict[str, object] = {"logging_level": logging.WARNING}
    if target == "ray":
        # "local": always a new local Ray. A bare ray.init() would join a cluster that
        # `ray start` left on this machine, or wait on one that has died since.
        options.update(address="local", include_dashboard=False)
    else:
        options["address"] = "auto" if target == "ray:auto" else target
    how = ("start one with `ray start --head`, or use cluster='ray'" if target == "ray:auto"
           else "check the address, or use cluster='ray'")
    if target.startswith("ray://"):
        _token_mode_when_a_token_is_at_hand()
    exc = _init_kept(ray, options, target, how)
    if exc is not None and target.startswith("ray://") and _CLIENT_SERVER_FAILED in str(exc):
        # Ray Client's server starts a process for each client, and a loaded machine has
        # seen the first one die at birth; it starts another for the next connection.
        exc = _init_kept(ray, options, target, how)
    if exc is None:
        return
    if not isinstance(exc, (ConnectionError, RuntimeError, ValueError, TimeoutError)):
        raise exc
    raise ConfigError(f"cluster={target}: cannot reach Ray ({_one_line(exc)}); {how}")


_CLIENT_SERVER_FAILED = "Starting Ray client server failed"


def _init_kept(ray: ModuleType, options: dict[str, object], target: str, how: str
               ) -> BaseException | None:
    """``ray.init(**options)`` on the thread that keeps it; what it raised, if it did."""
    failure: list[BaseException] = []
    started = threading.Event()

    def keep() -> None:
        try:
            ray.init(**options)
        except BaseException as exc:  # handed to the caller's thread
            failure.append(exc)
            started.set()
            return
        started.set()
        threading.Event().wait()  # until the process exits

    threading.Thread(target=keep, name="swarmkit-ray", daemon=True).start()
    if not started.wait(CONNECT_WAIT):
        # Ray Client can hang after a failed connection (it waits on its log stream as
        # it cleans up): a one-line refusal, not a kernel that never answers.
        raise ConfigError(f"cluster={target}: cannot reach Ray (no answer in "
                          f"{CONNECT_WAIT:g} s); {how}")
    return failure[0] if failure else None


def _one_line(exc: BaseException) -> str:
    """Ray's reason, in one line: its first line and, when it carries the server's
    traceback (Ray Client does), the traceback's last line, the error itself."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    if not lines:
        return type(exc).__name__
    said = lines[0] if len(lines) == 1 or "Traceback" not in str(exc) else \
        f"{lines[0].split('Traceback')[0].strip()} {lines[-1]}"
    return said[:200]


def _token_mode_when_a_token_is_at_hand() -> None:
    """Send the cluster's token through Ray Client, as a driver that joins a cluster by
    its GCS (``ray:auto``) does: ``ray start`` turns token authentication on by default
    (Ray 2.59 and later), and its client server then refuses a client that sends no
    token, which the client only reports as a timeout. Ray's own rule: with
    ``RAY_AUTH_MODE`` unset and a token at hand (``RAY_AUTH_TOKEN``,
    ``RAY_AUTH_TOKEN_PATH`` or ``~/.ray/auth_token``), token mode is on; an explicit
    ``RAY_AUTH_MODE`` is kept. A Ray without token authentication has nothing to do."""
    try:
        from ray._private.authentication.authentication_token_setup import (
            maybe_enable_token_auth_if_token_available,
        )
    except ImportError:
        return
    maybe_enable_token_auth_if_token_available(warn_if_disabled=False)


def shard_count(ray: ModuleType, shards: int | None, workers: int) -> int:
    """``shards``, or the cluster's CPUs; never more than ``workers``, at least 1."""
    if shards is None:
        shards = int(ray.cluster_resources().get("CPU", 1)) or 1
    return max(1, min(shards, workers))


def refuse_unshardable(config: SwarmConfig, *, mcp_servers: Any) -> None:
    """A one-line ConfigError for what a cluster run cannot do, before anything starts."""
    where = f"cluster={config.cluster}"
    if mcp_servers:
        raise ConfigError(f"{where}: MCP servers are not started on the shards; give "
                          "Python tools (tools=), or run without cluster=")
    if config.batch:
        raise ConfigError(f"{where}: batch mode sends the workers to the Batch API, not to "
                          "shards; drop one of batch and cluster")
    if config.resume:
        raise ConfigError(f"{where}: a resume serves the answered calls from this "
                          "kernel's history, which the shards do not read; resume without "
                          "cluster=")


def shard_env(config: SwarmConfig, env: Mapping[str, str]) -> dict[str, str]:
    """The key variables the shards need (their values travel to the shards with the
    actors' arguments, over Ray's own connections), and nothing else of ``env``."""
    return {name: value for name, value in secret_values(config, env).items() if name in env}
