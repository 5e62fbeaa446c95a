"""The ``%%swarm`` cell magic and the ``%swarm`` line magic (``%load_ext swarmkit``).

    extension    what ``%load_ext`` does: declares the magics, loaded on first use
    flags        the ``%%swarm`` flags (add a flag: one ``Flag`` row) and their parser
    bridge       ``SwarmHandle``: a run on the background loop, cancel, interrupt
    session      ``Session``: what a subcommand sees of the session; usage errors
    commands     ``%swarm`` subcommands (add one: one ``COMMANDS`` row); swarm_config
    dryrun       ``--dry-run``: the plan and a cost bound for the fan-out
    output       the final MIME bundle and small tables
    export       ``%swarm export``: a run as a notebook that replays offline
    history      ``%swarm history``, ``show``, ``rerun``, ``diff``
    resume       ``%swarm resume``
    compare      ``--compare``: the cell's task once per variant
    tools        ``--tools`` and ``%swarm mcp``
    core         ``SwarmMagics`` (the one session), registered on first use

core dispatches through the ``COMMANDS`` table, which loads a subcommand's module by name
on first use; the subcommands see the session as a ``Session`` and never import core.

This package re-exports lazily (``swarmkit._imports.lazy_exports``): importing it, as
``%load_ext`` does, imports only ``extension``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._imports import lazy_exports

if TYPE_CHECKING:
    from .bridge import SwarmHandle
    from .commands import COMMANDS, Command, swarm_config
    from .core import SwarmMagics
    from .extension import load_ipython_extension, swarm_magics
    from .flags import FLAGS, Flag

__all__ = ["COMMANDS", "FLAGS", "Command", "Flag", "SwarmHandle", "SwarmMagics",
           "load_ipython_extension", "swarm_config", "swarm_magics"]

__getattr__, __dir__ = lazy_exports(__name__, __file__)
