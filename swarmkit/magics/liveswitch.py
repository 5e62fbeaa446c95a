"""``SWARMKIT_LIVE``: a ``%%swarm --replay FILE`` cell runs live instead, when it can.

One switch for every replaying notebook (the tutorials, exports): ``%env SWARMKIT_LIVE=1``
in the kernel, or the variable set before Jupyter starts. It is read at each cell, so
``%env SWARMKIT_LIVE=0`` replays again. A cell goes live only if every role can run
here: a local (or ``auto``) role always can, a hosted one only with its key variable set,
even with a ``--base-url`` (a keyless server takes any value); and the tools its
recorded workers called must be given again. Otherwise it keeps replaying and says why,
in one line. Given tasks and a skipped reducer come from the cassette, as in a replay,
so the same cell asks the same thing live. Notebook checks never see the variable: an
export's kernel and nbval's (``notebooks/conftest.py``) drop every ``SWARMKIT_*``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import replace

from IPython.core.error import UsageError

from ..config.swarmconfig import AUTO_MODEL, ROLES, SwarmConfig
from ..errors import SwarmError
from ..store.cassette import Cassette

__all__ = ["LIVE_ENV", "live_instead_of_replay", "live_requested"]

LIVE_ENV = "SWARMKIT_LIVE"
_ON = frozenset({"1", "true", "yes", "on"})
_OFF = frozenset({"", "0", "false", "no", "off"})


def live_requested(env: Mapping[str, str]) -> bool:
    """Whether ``SWARMKIT_LIVE`` asks replay cells to run live (1/true/yes/on)."""
    value = env.get(LIVE_ENV, "").strip().lower()
    if value in _ON:
        return True
    if value in _OFF:
        return False
    raise UsageError(f"%%swarm: {LIVE_ENV}={env[LIVE_ENV]!r} is not a switch; set it to 1 "
                     "to run replay cells live, or to 0 to replay them")


def live_instead_of_replay(config: SwarmConfig, env: Mapping[str, str],
                           tools: Iterable[str] = ()) -> SwarmConfig:
    """``config`` without its replay when ``SWARMKIT_LIVE`` is set and the cell can run
    live with the ``tools`` it is given; prints one line saying which it does."""
    if config.replay is None or not live_requested(env):
        return config
    name = os.path.basename(config.replay)
    try:
        cassette: Cassette | None = Cassette.load(config.replay)
    except SwarmError:  # nothing to take from it; a live run does not need it
        cassette = None
    recorded = (cassette.run.get("config") or {}) if cassette is not None else {}
    judge = recorded.get("judge")
    live = replace(config, replay=None)
    if live.judge is None and isinstance(judge, dict) and isinstance(judge.get("model"), str):
        # The recording was judged: so is the live run, with its rubric, at the cell's
        # endpoint (never the file's), and it needs the judge's key like the others'.
        rubric = recorded.get("rubric")
        live = replace(live, judge=judge["model"],
                       rubric=rubric if isinstance(rubric, str) else live.rubric)
    missing = _missing(live, env, cassette, set(tools))
    if missing:
        print(f"{LIVE_ENV} is set, but replaying {name}: {missing}")
        return config
    print(f"{LIVE_ENV} is set: running live instead of replaying {name}")
    if not live.tasks and recorded.get("tasks"):
        live = replace(live, tasks=tuple(str(task) for task in recorded["tasks"]))
    if recorded.get("reduce") is False:
        live = replace(live, reduce=False)
    return live


def _missing(config: SwarmConfig, env: Mapping[str, str], cassette: Cassette | None,
             tools: set[str]) -> str:
    """Why the cell cannot run live here (``""`` when it can)."""
    needs: dict[str, list[str]] = {}  # key variables -> the models that need them
    for role in (*ROLES, "judge") if config.judge is not None else ROLES:
        rc = config.role(role)
        if rc.is_local or rc.model == AUTO_MODEL or rc.keys_set(env):
            continue
        models = needs.setdefault(" or ".join(rc.api_key_env), [])
        if rc.model not in models:
            models.append(rc.model)
    reasons = [f"{_and(models)} {'needs' if len(models) == 1 else 'need'} {keys}"
               for keys, models in needs.items()]
    called = sorted({tool.name for tool in cassette.tools} - tools) if cassette else []
    if called:
        reasons.append(f"its workers called {', '.join(called)}; give them again "
                       "(--tools, %swarm mcp add)")
    return "; ".join(reasons)


def _and(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
