"""``Run``: what a swarm leaves the user, a :class:`RunRecord` that can show and export itself.

The engine and the store build and read plain records; this subclass adds the parts that
need display and export, which sit above them, so the record itself imports neither.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from ..display.tables import RunTables
from ..export.exporter import ExportResult, export_run
from ..record.runrecord import RunRecord

__all__ = ["Run"]

_FIELDS = tuple(f.name for f in dataclasses.fields(RunRecord) if f.init)


class Run(RunRecord):
    """Everything a run did, with its tables (``run.tables()``), its rich display in a
    notebook, and ``run.export(path)``."""

    @classmethod
    def of(cls, record: RunRecord) -> Run:
        """``record`` as a Run: the same lists, not copies (a Run is returned as is)."""
        if isinstance(record, cls):
            return record
        run = cls(**{name: getattr(record, name) for name in _FIELDS})
        run.history_file, run.checks = record.history_file, record.checks
        return run

    @classmethod
    def from_dict(cls, data: Any, source: str = "Run JSON") -> Run:
        return cls.of(RunRecord.from_dict(data, source))

    def tables(self) -> RunTables:
        return RunTables(self)

    def _repr_html_(self) -> str:
        return self.tables().html()

    def __str__(self) -> str:
        return self.tables().text()

    def export(self, path: str | Path, **options: Any) -> ExportResult:
        """Write a replayable notebook and its cassette; see ``swarmkit.export``."""
        return export_run(self, path, **options)
