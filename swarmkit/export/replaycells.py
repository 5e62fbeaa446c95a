"""The replayed parts of an exported notebook: cells that replay recorded runs, and the
check that, executed, they showed what the runs showed.

A part names its recordings (each becomes a cassette beside the notebook), writes its
code cells once the cassettes have names, and checks its last cell's outputs after the
notebook ran in replay mode. A part may also ask for a *probe*: an expression evaluated
in the replaying kernel after every cell ran (``Out[n]`` is the value its cell showed),
whose JSON value reaches :meth:`Replayed.check`; the probe's cell is removed before the
notebook is written. A ``%%swarm`` cell is one part (:class:`SwarmCell`); a comparison
is another (``swarmkit.comparison.export``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ..display.tables import RunTables
from ..errors import ExportError
from ..store.cassette import Cassette
from .cellsource import swarm_cells
from .checksource import RebuiltChecks, check_cell, kept_scores, rebuilt_checks

if TYPE_CHECKING:
    import nbformat

    from ..record.runrecord import RunRecord

__all__ = ["Recording", "Replayed", "SwarmCell", "check_shown", "first_changed_line"]


@dataclass(frozen=True, slots=True)
class Recording:
    """A run, its recording, and the cassette file name it asks for (None: the
    notebook's next default name)."""

    run: RunRecord
    cassette: Cassette
    name: str | None = None

    @property
    def config(self) -> Mapping[str, Any]:
        """The recording's config: what a replay must rebuild (a replayed run's own config
        points at the cassette instead of the recorded endpoint)."""
        return self.cassette.run.get("config") or self.run.config


class Replayed(Protocol):
    """Cells that replay recorded runs (see the module's docstring)."""

    @property
    def recordings(self) -> Sequence[Recording]: ...

    def sources(
        self, cassettes: Sequence[str], session: Mapping[str, str]
    ) -> tuple[list[str], dict[str, str]]:
        """The code cells, given the cassettes' file names (one per recording) and the
        ``%swarm config`` the cells before left; and the config they leave."""
        ...

    def probe(self, execution_count: int) -> str | None:
        """A JSON-able expression to evaluate after the notebook ran, or None."""
        ...

    def check(self, cell: nbformat.NotebookNode, probed: Any) -> None:
        """Raise ExportError unless the executed last cell shows what the runs showed."""
        ...


@dataclass(frozen=True, slots=True)
class SwarmCell:
    """One run's ``%%swarm --replay`` cell (after its options cell, if it needs one)."""

    recording: Recording

    @property
    def recordings(self) -> Sequence[Recording]:
        return (self.recording,)

    @property
    def checks(self) -> RebuiltChecks:
        """The run's checks as the notebook defines them (``export.checksource``)."""
        return rebuilt_checks([self.recording.run])

    def sources(
        self, cassettes: Sequence[str], session: Mapping[str, str]
    ) -> tuple[list[str], dict[str, str]]:
        definitions, names = check_cell(self.checks)
        cells, rest = swarm_cells(self.recording.run, self.recording.config, cassettes[0],
                                  session, checks=names)
        return ([] if definitions is None else [definitions]) + cells, rest

    def probe(self, execution_count: int) -> str | None:
        return None

    def check(self, cell: nbformat.NotebookNode, probed: Any) -> None:
        """The replayed cell must show exactly the run's own tables, once (scored by
        the checks the notebook runs again, and the judge)."""
        run = kept_scores(self.recording.run, self.checks.names)
        shown = check_shown(cell, "display_data", f"the replay of run {run.run_id}",
                            "one table display")
        difference = first_changed_line(RunTables(run).text(), shown)
        if difference is not None:
            raise ExportError(
                f"the replay of run {run.run_id} does not reproduce its tables (first "
                f"difference: {difference}); re-run it with record=FILE and export that"
            )


def check_shown(cell: nbformat.NotebookNode, kind: str, what: str, wanted: str) -> str:
    """The text/plain of the cell's one output of ``kind``; anything else is an error."""
    found = [o for o in cell.outputs if o.get("output_type") == kind]
    if len(found) != 1 or len(cell.outputs) != 1:
        kinds = ", ".join(o.get("output_type", "?") for o in cell.outputs) or "nothing"
        raise ExportError(f"{what} showed {kinds} instead of {wanted}; export a run that "
                          "finished (completed or partial)")
    return str(found[0].get("data", {}).get("text/plain", ""))


def first_changed_line(expected: str, shown: str) -> str | None:
    """``'a' vs 'b'`` for the first line where ``shown`` differs (None: equal)."""
    if shown == expected:
        return None
    line = next((f"{a!r} vs {b!r}" for a, b in
                 zip(expected.splitlines(), shown.splitlines(), strict=False) if a != b),
                "the line counts differ")
    return line[:160]
