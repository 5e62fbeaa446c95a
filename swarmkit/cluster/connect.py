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
    started.wait()
    if failure:
        exc = failure[0]
        if not isinstance(exc, (ConnectionError, RuntimeError, ValueError, TimeoutError)):
            raise exc
        detail = " ".join(str(exc).split())[:160] or type(exc).__name__
        how = ("start one with `ray start --head`, or use cluster='ray'" if target == "ray:auto"
               else "check the address, or use cluster='ray'")
        raise ConfigError(f"cluster={target}: cannot reach Ray ({detail}); {how}") from None


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
