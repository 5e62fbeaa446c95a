"""A real IPython shell with swarmkit loaded, for testing ``%%swarm`` cells in-process."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

__all__ = ["swarm_shell"]


def swarm_shell() -> InteractiveShell:
    """The process's IPython shell, history kept in memory, after ``%load_ext swarmkit``.

    Drive it with ``shell.run_cell_magic("swarm", line, task)`` against a FakeServer.
    """
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    shell = InteractiveShell.instance(config=config)
    shell.run_line_magic("load_ext", "swarmkit")
    return shell
