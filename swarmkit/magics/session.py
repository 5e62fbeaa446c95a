"""What a ``%swarm`` subcommand may use of the magics: the session, as a Protocol, and
the rules every command shares.

``SwarmMagics`` (``core``) imports the subcommands' table, so a subcommand typed against
``SwarmMagics`` itself would close an import cycle; it is typed against :class:`Session`,
which ``SwarmMagics`` satisfies. Here too: the variables a run lands in, how a swarmkit
error reads in a notebook, and the check that a hosted role has a key before any call.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from IPython.core.error import UsageError

from ..config.swarmconfig import AUTO_MODEL, ROLES, SwarmConfig
from ..credentials.scrub import scrub
from ..errors import ConfigError

if TYPE_CHECKING:
    from ..api.result import Run
    from ..comparison.result import Comparison
    from .bridge import SwarmHandle

__all__ = ["LAST_HANDLE", "LAST_RUN", "Session", "check_keys", "usage_error"]

# The notebook variables the last run and the last background handle land in.
LAST_RUN = "_swarm"
LAST_HANDLE = "_swarm_handle"


class Session(Protocol):
    """The notebook session a subcommand reads and changes."""

    # defaults set by %swarm config / %swarm prices, by public option name
    session_options: dict[str, Any]
    last_run: Run | Comparison | None  # a --compare cell's Comparison
    # running --background swarms -> the variables their Run goes to
    background: dict[SwarmHandle, tuple[str, ...]]

    @property
    def namespace(self) -> dict[str, Any]:
        """The notebook's variables."""
        ...

    def session_config(self, **options: Any) -> SwarmConfig:
        """Defaults < ``SWARMKIT_*`` env < ``%swarm config`` < ``options``."""
        ...

    def store(self, run: Run | Comparison | None, names: Sequence[str]) -> None:
        """Keep ``run`` as the last run and in the variables ``names``."""
        ...

    def run_in_cell(self, task: str, config: SwarmConfig, names: Sequence[str]) -> None:
        """Run a swarm as a ``%%swarm`` cell does: the live dashboard, then its tables
        in its place; the Run lands in ``names``."""
        ...


def usage_error(exc: Exception, where: str = "%%swarm") -> UsageError:
    """A swarmkit error as a one-line UsageError (no traceback in the notebook), scrubbed:
    a message may quote a base URL with its userinfo, or a server's words."""
    kind = "" if isinstance(exc, ConfigError) else f"{type(exc).__name__}: "
    return UsageError(scrub(f"{where}: {kind}{exc}"))


def check_keys(config: SwarmConfig, env: Mapping[str, str]) -> None:
    """Fail before any call when a hosted role (the judge too) has neither a key nor a
    base URL."""
    for role in (*ROLES, *(("judge",) if config.judge is not None else ())):
        rc = config.role(role)
        if rc.base_url is not None or rc.is_local or rc.model == AUTO_MODEL:
            continue
        if not rc.keys_set(env):
            names = " or ".join(rc.api_key_env)
            fix = ("%swarm config judge_api_key_env=VAR or judge_base_url=URL, or --judge "
                   "local" if role == "judge"
                   else "pass --api-key-env VAR, --base-url URL or --model local")
            raise UsageError(
                f"%%swarm: no API key for the {role} model {rc.model}: set {names}, or {fix}"
            )
