"""The workers of a run sharded over Ray actors (``cluster=``; the ``ray`` extra).

``connect`` (Ray, imported only when a run asks for a cluster), ``shard`` (the actor:
its share of the workers, with its own HTTP client and the run's Python tools),
``dispatch`` (the driver's side: the engine's ``WorkerDispatch``), ``ledger`` and
``asked`` (the run's one budget and one set of rate limits, held by the driver and
asked for by the shards), ``outbox`` and ``messages`` (what a shard streams back),
``cachedworkers`` (the workers the kernel's cache answers whole, run in the kernel).
"""

from .connect import INSTALL, connect, ray_module, refuse_unshardable, shard_count, shard_env
from .dispatch import GRACE, ClusterDispatch
from .shard import Shard, ShardRun

__all__ = ["GRACE", "INSTALL", "ClusterDispatch", "Shard", "ShardRun", "connect", "ray_module",
           "refuse_unshardable", "shard_count", "shard_env"]
