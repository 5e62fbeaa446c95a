"""A comparison as a notebook that replays offline: ``comparison.export(path)``.

    comparison.export("prompts.ipynb")  # + prompts.1.swarm.json, prompts.2.swarm.json

The notebook holds a header (the task, the variants, the date, each run's totals, how
to run it live) and one code cell that replays every variant, each of its repeats from
its own cassette (``comparison.cellsource``), and shows the side-by-side view. As for a
single run, the stored output comes from executing the notebook in replay mode, and
export checks that it shows the comparison's own view (its scores block included: the
judge's calls are replayed and the checks run again, ``export.checksource``) and that
each run's replay reproduces its own tables (answer included). Writing, keys and
overwriting are ``ReplayNotebook``'s.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config.wording import counted
from ..display.tablefmt import format_cost, format_tokens
from ..display.tables import RunTables
from ..errors import ExportError
from ..export.cellsource import (
    header_text,
    line_safe,
    live_steps,
    md_code,
    md_text,
    models_text,
    swarm_line,
)
from ..export.checksource import RebuiltChecks, kept_scores, rebuilt_checks
from ..export.exporter import (
    CASSETTE_SUFFIX,
    ExportResult,
    ReplayNotebook,
    check_replayable,
    find_recording,
)
from ..export.replaycells import Recording, check_shown, first_changed_line
from ..store.cassette import Cassette
from .cellsource import comparison_source, written_options
from .figures import live_latencies, percentile
from .variants import Variant
from .view import ComparisonView

if TYPE_CHECKING:
    import nbformat

    from ..record.runrecord import RunRecord

__all__ = [
    "ComparedCells",
    "compared",
    "comparison_cassettes",
    "comparison_header",
    "comparison_paths",
    "export_comparison",
]


def comparison_cassettes(notebook: str | os.PathLike[str], count: int) -> tuple[str, ...]:
    """``<notebook>.1.swarm.json`` ... one cassette per run (per variant, and per repeat
    in turn), beside the notebook."""
    stem = ReplayNotebook.cassette_name(notebook).removesuffix(CASSETTE_SUFFIX)
    return tuple(f"{stem}.{number}{CASSETTE_SUFFIX}" for number in range(1, count + 1))


def comparison_paths(notebook: str | os.PathLike[str], count: int) -> tuple[Path, ...]:
    """The files ``export_comparison`` writes: the notebook and its ``count`` cassettes."""
    folder = Path(notebook).parent
    return (Path(notebook), *(folder / name for name in comparison_cassettes(notebook, count)))


# -- the part ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ComparedCells:
    """A comparison's replay cell, as a part of a ``ReplayNotebook``: ``recordings``
    in the runner's order (each variant's ``repeat`` runs in turn)."""

    task: str
    variants: tuple[Variant, ...]
    recordings: tuple[Recording, ...]
    repeat: int = 1

    @property
    def first(self) -> tuple[Recording, ...]:
        """Repeat 0 of each variant: what the cell's options are written from."""
        return self.recordings[::self.repeat]

    @property
    def checks(self) -> RebuiltChecks:
        """The checks the cell defines and passes (``export.checksource``)."""
        runs = [recording.run for recording in self.recordings]
        found = rebuilt_checks(runs)
        named = {tuple(s.name for s in run.scores if s.kind == "check") for run in runs}
        if len(named) > 1:  # one checks= for every variant cannot score them as they were
            return RebuiltChecks((), tuple(
                (check.name, "the variants were scored by different checks")
                for check in found.checks) + found.left_out)
        return found

    def sources(
        self, cassettes: Sequence[str], session: Mapping[str, str]
    ) -> tuple[list[str], dict[str, str]]:
        # A Python call: the session's %swarm config does not apply to it, nor change.
        configs = [recording.config for recording in self.first]
        return [comparison_source(self.task, self.variants, configs, cassettes,
                                  repeat=self.repeat, checks=self.checks)], dict(session)

    def probe(self, execution_count: int) -> str | None:
        return (f"[run.tables().text() for group in Out[{execution_count}].repeats "
                "for run in group]")

    def kept(self) -> list[RunRecord]:
        """Each run as its replay shows it: scored by the judge and the checks the
        cell runs again."""
        names = self.checks.names
        return [kept_scores(recording.run, names) for recording in self.recordings]

    def check(self, cell: nbformat.NotebookNode, probed: Any) -> None:
        runs = self.kept()
        shown = check_shown(cell, "execute_result", "the replay of the comparison",
                            "its side-by-side view")
        groups = [tuple(runs[i:i + self.repeat]) for i in range(0, len(runs), self.repeat)]
        # IPython's plain-text repr of a cell's value drops its final line break.
        view = ComparisonView.of_repeats([v.label for v in self.variants], groups).text()
        difference = first_changed_line(view.rstrip("\n"), shown.rstrip("\n"))
        if difference is not None:
            raise ExportError(f"the replay of the comparison does not reproduce its view "
                              f"(first difference: {difference}); run it again and export that")
        tables = probed if isinstance(probed, list) and len(probed) == len(runs) else []
        labels = [v.label for v in self.variants for _ in range(self.repeat)]
        for label, run, text in zip(labels, runs, tables or [None] * len(runs), strict=True):
            difference = first_changed_line(RunTables(run).text(), str(text))
            if difference is not None:
                raise ExportError(
                    f"the replay of variant {label} (run {run.run_id}) does not "
                    f"reproduce its tables (first difference: {difference}); run the "
                    "comparison again and export that")


def compared(
    task: str,
    variants: Sequence[Variant],
    runs: Sequence[RunRecord],
    *,
    cassettes: Sequence[Cassette | str | os.PathLike[str] | None] | None = None,
    names: Sequence[str] | None = None,
    history_path: str | os.PathLike[str] | None = None,
    repeat: int = 1,
) -> ComparedCells:
    """The part replaying a comparison: each run's recording (``cassettes``, else this
    session's or the history's) under ``names`` (default: the notebook's next names).
    ``runs`` are each variant's ``repeat`` runs in turn (one each by default)."""
    if not runs or repeat < 1 or len(runs) != len(variants) * repeat:
        raise ExportError(f"export a comparison with {repeat} run(s) per variant, each "
                          "variant's in turn")
    found = [find_recording(run, cassette, history_path=history_path) for run, cassette in
             zip(runs, cassettes or [None] * len(runs), strict=True)]
    given = list(names) if names is not None else [None] * len(runs)
    return ComparedCells(task, tuple(variants), tuple(
        Recording(run, recording, name) for run, recording, name in
        zip(runs, found, given, strict=True)), repeat)


# -- the header ----------------------------------------------------------------------------


def _plain(value: Any) -> bool:
    return (isinstance(value, str) and bool(value.strip()) and line_safe(value)
            and not any(mark in value for mark in ",'\"@"))


def _live_line(part: ComparedCells) -> str:
    """``%%swarm --compare KEY=A,B --flags``, when one key varies (values that cannot
    go on the line as written are ``@names``)."""
    keys = {tuple(name for name, _ in v.options) for v in part.variants}
    if len(keys) != 1 or len(next(iter(keys))) != 1:
        return ""
    name = part.variants[0].options[0][0]
    values = [v.options[0][1] for v in part.variants]
    words = [v if _plain(v) else f"@{name}_{i}" for i, v in enumerate(values, start=1)]
    configs = [recording.config for recording in part.first]
    common = written_options(part.variants, configs).common
    line, rest = swarm_line({k: str(v) for k, v in common.items()}, "X", part.task)
    flags = line.removeprefix("%%swarm --replay X").strip()
    if part.repeat > 1:
        flags += f" --repeat {part.repeat}"
    written = part.checks.checks
    functions = [check.expression for check in written if check.expression.isidentifier()]
    if functions:
        flags += " --check " + ",".join(functions)
    magic = " ".join(["%%swarm --compare", shlex.quote(f"{name}=" + ",".join(words)), flags])
    text = f"in a notebook, {md_code(magic.strip())} with the task as the cell's body"
    named = [w[1:] for w in words if w.startswith("@")]
    if named:
        text += " (first set " + ", ".join(md_code(n) for n in named) + " to the values " \
                "in the cell below)"
    if rest:
        text += " after `%swarm config` sets " + ", ".join(md_code(k) for k in rest)
    if len(functions) < len(written):
        text += (", each `swarmkit.Check` of the cell's `checks=` bound to a name and added "
                 "to `--check`")
    return text


def comparison_header(
    part: ComparedCells,
    cassettes: Sequence[str],
    notebook: str,
    *,
    title: str | None = None,
    note: str = "",
    shared_calls: int = 0,
) -> str:
    """Task, variants, date, each run's totals (wall time and the latency of its live
    calls included), the checks left out, and how to replay or run it live."""
    runs = [recording.run for recording in part.recordings]
    configs = [recording.config for recording in part.recordings]
    started = min(run.started_at for run in runs).replace("T", " ")
    ids = ", ".join(md_code(run.run_id) for run in runs)
    repeats = f", each {part.repeat} times" if part.repeat > 1 else ""
    rows = [("task", md_text(part.task)),
            ("variants", f"{len(part.variants)}{repeats}, run concurrently under one budget"),
            ("recorded", f"{md_text(started)} (runs {ids})"),
            ("shared calls", f"{shared_calls} model calls made once for several variants")]
    table = ["| | |", "|---|---|", *[f"| {k} | {v} |" for k, v in rows]]
    per = ["| variant | models | outcome | calls | tokens in / out | cost | wall time "
           "| latency p50 / p95 |", "|---|---|---|---|---|---|---|---|"]
    labels = [variant.label if part.repeat == 1 else f"{variant.label} · repeat {r + 1}"
              for variant in part.variants for r in range(part.repeat)]
    for label, run, config in zip(labels, runs, configs, strict=True):
        counts = ", ".join(f"{n} {md_text(s)}" for s, n in sorted(run.status_counts().items()))
        latencies = live_latencies(run)
        latency = ("—" if not latencies else f"{percentile(latencies, 50):.2f}s / "
                   f"{percentile(latencies, 95):.2f}s ({len(latencies)} live)")
        per.append(
            f"| {md_text(label)} | {models_text(config)} | {md_text(run.status)}; "
            f"{counted(len(run.workers), 'worker')} ({counts or 'none'}) | {len(run.calls)} | "
            f"{format_tokens(run.usage.prompt_tokens)} / "
            f"{format_tokens(run.usage.completion_tokens)} | {format_cost(run.cost_usd)} | "
            f"{run.duration:.2f}s | {latency} |")
    steps = list(dict.fromkeys(s for run, config in zip(runs, configs, strict=True)
                               for s in live_steps(run, config)))
    live = ["delete the `replay=[...]` argument and run the cell", *steps]
    if (line := _live_line(part)):
        live.append(line)
    files = " and ".join(md_code(name) for name in cassettes)
    left_out = part.checks.note()
    note = f"{note}\n\n{md_text(left_out)}".strip() if left_out else note
    return header_text(
        title or "Comparison: " + md_text(part.task), ["\n".join(table), "", "\n".join(per)],
        note, f"The cell below replays each run from its recording ({files}): no "
        "network, no key, and the same side-by-side view every time.", notebook,
        "; ".join(live) + ".")


# -- export --------------------------------------------------------------------------------


def export_comparison(
    task: str,
    variants: Sequence[Variant],
    runs: Sequence[RunRecord],
    path: str | os.PathLike[str],
    *,
    cassettes: Sequence[Cassette | str | os.PathLike[str] | None] | None = None,
    history_path: str | os.PathLike[str] | None = None,
    title: str | None = None,
    note: str = "",
    shared_calls: int = 0,
    env: Mapping[str, str] | None = None,
    kernel_name: str = "python3",
    timeout: float = 300.0,
    overwrite: bool = False,
    repeat: int = 1,
) -> ExportResult:
    """Write ``path`` (a notebook replaying the comparison) and one cassette per run.

    ``runs`` are each variant's ``repeat`` runs in turn (``Comparison.repeats``, flat).
    Raises :class:`~swarmkit.errors.ExportError` when a variant's run has no recording,
    when the replay does not reproduce the view or a variant's tables, when a key value
    would be written, or when a file exists and ``overwrite`` is false. A failed export
    leaves no file behind.
    """
    for run in runs:
        check_replayable(run)
    names = comparison_cassettes(path, len(runs))
    part = compared(task, variants, runs, cassettes=cassettes, names=names,
                    history_path=history_path, repeat=repeat)
    book = ReplayNotebook(env=env, kernel_name=kernel_name, timeout=timeout)
    book.markdown(comparison_header(part, names, Path(path).name, title=title, note=note,
                                    shared_calls=shared_calls))
    book.replayed(part)
    return book.write(path, overwrite=overwrite)
