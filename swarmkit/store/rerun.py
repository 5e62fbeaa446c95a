"""Re-running one worker of a past run: everything else is served from the cache.

The rerun uses the past run's own config with the cache on and that worker's step in
``refresh``, so only the worker's call goes to the server; the reducer then misses the
cache by itself, because one of its inputs changed.
"""

from __future__ import annotations

from dataclasses import replace

from ..config import ROLES, SwarmConfig
from ..errors import StoreError
from ..run import Run

__all__ = ["rerun_config"]


def rerun_config(run: Run, worker: int) -> SwarmConfig:
    """The config that re-runs worker ``worker`` (1-based) of ``run`` and its reducer."""
    if not run.plan:
        raise StoreError(f"run {run.run_id} has no plan, so no worker to re-run; run it again")
    if not 1 <= worker <= len(run.plan):
        raise StoreError(
            f"run {run.run_id} has workers 1 to {len(run.plan)}; pick one of those, "
            f"not {worker}"
        )
    try:
        config = SwarmConfig.from_summary(run.config)
    except (KeyError, TypeError, ValueError) as exc:
        raise StoreError(
            f"run {run.run_id} has an unreadable config ({exc}); run the task again instead"
        ) from None
    # The embedded server's port was ephemeral: let the rerun start (or reuse) its own.
    roles = {
        role: replace(config.role(role), base_url=None)
        for role in ROLES
        if config.role(role).is_local
    }
    return replace(config, **roles, cache=True, refresh=(f"worker-{worker}",), record=None,
                   replay=None)
