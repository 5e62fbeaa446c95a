"""The ``jswarm`` command (also ``python -m swarmkit``).

    command    the arguments, the subcommands (run, demo, history, show, resume, export)
    terminal   a run in the terminal: Ctrl-C from the first moment, the exit statuses
"""

from __future__ import annotations

from .command import main

__all__ = ["main"]
