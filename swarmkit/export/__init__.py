"""A run as a notebook that replays offline (``run.export(path)``, ``%swarm export``).

    exporter       execute the notebook in replay mode and check it shows the run's tables
    notebookfile   cells from parts, execution with nbclient, all-or-nothing writes
    cellsource     the source of the cells: the ``%%swarm --replay`` line, options, header
    replaycells    cells that replay recordings and check what they showed

A comparison's notebook is ``comparison.export``, above this package.
"""

__all__: list[str] = []
