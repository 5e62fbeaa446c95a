"""What a ``%swarm`` subcommand may use of the magics: the session, as a Protocol.

``SwarmMagics`` (``core``) imports the subcommands' table, so a subcommand typed against
``SwarmMagics`` itself would close an import cycle; it is typed against :class:`Session`,
which ``SwarmMagics`` satisfies.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from ..result import Run
from .bridge import SwarmHandle

__all__ = ["Session"]


class Session(Protocol):
    """The notebook session a subcommand reads and changes."""

    # defaults set by %swarm config / %swarm prices, by public option name
    session_options: dict[str, Any]
    last_run: Run | None
    # running --background swarms -> the variables their Run goes to
    background: dict[SwarmHandle, tuple[str, ...]]

    def store(self, run: Run | None, names: Sequence[str]) -> None:
        """Keep ``run`` as the last run and in the variables ``names``."""
        ...
