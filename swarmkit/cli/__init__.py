"""The ``jswarm`` command (also ``python -m swarmkit``).

    launch      the entry point: Ctrl-C is a quiet exit 130 even while the command loads
    command     the arguments, the subcommands (run, demo, history, show, resume, export)
    terminal    a run in the terminal: Ctrl-C from the command's first moment, the progress
    exitcodes   the exit statuses
"""

from __future__ import annotations

from .launch import main

__all__ = ["main"]
