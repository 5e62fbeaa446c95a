"""``Comparison``: what ``--compare`` leaves the user, its variants' Runs side by side.

Each variant is an ordinary :class:`~swarmkit.api.result.Run` (its own tables, history entry
and cassette); the comparison adds the side-by-side view (answers, status, tokens, cost,
wall time, the p50 / p95 latency of the live model calls, workers by status and plans,
with the differences from the first variant marked), one row per variant as a table or a
DataFrame, and an export that replays all of it offline (``swarmkit.comparison.export``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..api.result import Run
from ..errors import ConfigError, ExportError
from ..export.exporter import ExportResult
from .export import export_comparison
from .figures import ComparisonTable, comparison_rows
from .scores import ScoreRow, score_rows, scores_frame, summaries
from .variants import Variant
from .view import ComparisonView

if TYPE_CHECKING:
    import pandas

__all__ = ["Comparison"]


@dataclass(frozen=True, slots=True, eq=False)
class Comparison:
    """The variants of one task and their Runs, in the order the variants were given.

    ``shared_calls`` counts the model calls a variant was served from another variant's
    identical call (paid once, shown as cached in the served variant's tables).
    ``repeats`` holds each variant's Runs, one per repeat (``repeat=K``), in the variants'
    order; ``runs`` is repeat 0 of each, what the side-by-side view, the table and the
    export show. Without repeats each variant's is its one Run.
    """

    task: str
    variants: tuple[Variant, ...]
    runs: tuple[Run, ...]
    shared_calls: int = 0
    repeats: tuple[tuple[Run, ...], ...] = ()

    def __post_init__(self) -> None:
        if not self.repeats:
            object.__setattr__(self, "repeats", tuple((run,) for run in self.runs))
        if len(self.repeats) != len(self.runs) or any(
                not group or group[0] is not run
                for group, run in zip(self.repeats, self.runs, strict=False)):
            raise ConfigError("a comparison's repeats must hold each variant's runs, "
                              "repeat 0 first: give repeats=((run, ...), ...) in the "
                              "variants' order")

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(variant.label for variant in self.variants)

    def __getitem__(self, key: int | str) -> Run:
        """A variant's Run, by position or by its label."""
        if isinstance(key, str):
            try:
                return self.runs[self.labels.index(key)]
            except ValueError:
                raise KeyError(f"no variant {key!r}; variants: {', '.join(self.labels)}") \
                    from None
        return self.runs[key]

    def __len__(self) -> int:
        return len(self.runs)

    def view(self) -> ComparisonView:
        """The side-by-side view (what the cell shows); with scores, its scores block
        summarises every repeat."""
        return ComparisonView.of_repeats(self.labels, self.repeats)

    def table(self) -> ComparisonTable:
        """One row per variant: status, workers, tokens, cost, wall time, latency p50 /
        p95 (of the calls made live: ``swarmkit.comparison.view.live_latencies``), each
        score's mean over the variant's repeats (a column ``<name> mean`` per check, and
        ``judge mean``; none when nothing was scored), and an excerpt of the answer."""
        return ComparisonTable(self.labels, self.runs,
                               summaries(self.score_rows(), self.labels))

    def score_rows(self) -> list[ScoreRow]:
        """Every repeat's scores as rows (``swarmkit.comparison.scores.score_rows``)."""
        return score_rows(self.labels, self.repeats)

    def scores(self) -> pandas.DataFrame:
        """One row per score of every run (needs pandas): columns variant, repeat (from
        0), check, score (0 to 1; None when it could not be taken) and reason."""
        return scores_frame(self.score_rows())

    def to_dataframe(self) -> pandas.DataFrame:
        """One row per variant (needs pandas), the variant's options as columns too.

        ``duration_s`` is the wall time; ``latency_p50_s`` / ``latency_p95_s`` are over
        the ``live_calls`` calls made live (None when there were none)."""
        try:
            import pandas
        except ImportError:
            raise ConfigError("to_dataframe needs pandas: pip install pandas") from None
        rows = comparison_rows(self.labels, self.runs)
        for row, variant, run in zip(rows, self.variants, self.runs, strict=True):
            for name, value in variant.options:
                row.setdefault(name, value if isinstance(value, (str, int, float)) else
                               repr(value))
            row["run_id"] = run.run_id
        return pandas.DataFrame(rows)

    @property
    def repeat(self) -> int:
        """How many runs each variant has (1 without ``repeat=``)."""
        return len(self.repeats[0]) if self.repeats else 1

    def export(self, path: str | os.PathLike[str], **options: Any) -> ExportResult:
        """Write ``path``, a notebook that replays the comparison offline (every repeat,
        scored again), and one cassette per run beside it (``<name>.1.swarm.json``,
        ...). It never replaces a file unless ``overwrite=True``; ``title=``, ``note=``,
        ``cassettes=`` (one per run), ``history_path=`` as for ``Run.export``."""
        counts = {len(group) for group in self.repeats}
        if len(counts) != 1:
            raise ExportError("cannot export a comparison whose variants ran different "
                              "numbers of repeats; give every variant the same repeat=")
        runs = [run for group in self.repeats for run in group]
        return export_comparison(self.task, self.variants, runs, path,
                                 shared_calls=self.shared_calls, repeat=self.repeat,
                                 **options)

    def _repr_html_(self) -> str:
        return self.view().html()

    def __str__(self) -> str:
        return self.view().text()

    def __repr__(self) -> str:
        return self.view().text()
