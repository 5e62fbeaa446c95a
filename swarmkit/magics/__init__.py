"""The ``%%swarm`` cell magic and the ``%swarm`` line magic (``%load_ext swarmkit``).

    options      the flag table (add a flag: one ``Flag`` row) and its parser
    bridge       ``SwarmHandle``: a run on the background loop, cancel, interrupt
    session      ``Session``: what a subcommand sees of the session; usage errors
    commands     ``%swarm`` subcommands (add one: one ``COMMANDS`` row); swarm_config
    dryrun       ``--dry-run``: the plan and a cost bound for the fan-out
    display      the final MIME bundle and small tables
    export       ``%swarm export``: a run as a notebook that replays offline
    history      ``%swarm history``, ``show``, ``rerun``, ``diff``
    tools        ``--tools`` and ``%swarm mcp``
    core         ``SwarmMagics`` (the one session) and ``load_ipython_extension``

core dispatches through the ``COMMANDS`` table, which loads a subcommand's module by name
on first use; the subcommands see the session as a ``Session`` and never import core.

Nothing here imports ``openai`` or builds a client until a swarm runs.
"""

from __future__ import annotations

from .bridge import SwarmHandle
from .commands import COMMANDS, Command, swarm_config
from .core import SwarmMagics, load_ipython_extension
from .flags import FLAGS, Flag

__all__ = ["COMMANDS", "FLAGS", "Command", "Flag", "SwarmHandle", "SwarmMagics",
           "load_ipython_extension", "swarm_config"]
