"""``jswarm``'s entry point: Ctrl-C is a quiet exit 130 from the very first moment.

The command's module imports the whole run machinery (about half a second on a cold
start), and ``command.main`` installs its Ctrl-C handling only once that is done. A Ctrl-C
typed while it loads would otherwise end in an import traceback, so the console script
and ``python -m swarmkit`` enter here: the one place that imports the command by name, so
that its loading can be interrupted like the rest of the run.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence
from typing import Final

from .exitcodes import EXIT_INTERRUPTED

__all__ = ["COMMAND_MODULE", "main"]

COMMAND_MODULE: Final = "swarmkit.cli.command"


def main(argv: Sequence[str] | None = None) -> int:
    """The ``jswarm`` command; returns its exit status (see ``exitcodes.EXIT_CODES``)."""
    try:
        command = importlib.import_module(COMMAND_MODULE)
    except KeyboardInterrupt:
        sys.stderr.write("jswarm: interrupted while starting\n")
        return EXIT_INTERRUPTED
    return command.main(argv)  # type: ignore[no-any-return]
