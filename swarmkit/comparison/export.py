"""A comparison as a notebook that replays offline: ``comparison.export(path)``.

    comparison.export("prompts.ipynb")  # + prompts.1.swarm.json, prompts.2.swarm.json

The notebook holds a header (the task, the variants, the date, each variant's totals, how
to run it live) and one code cell that replays every variant from its own cassette::

    comparison = swarmkit.compare_sync(TASK, variants=[...], replay=[...], **common)
    comparison

whose output is the side-by-side view. The variants are written as literals; a value that
has none (a pydantic model, a DataFrame of tasks) is written as the run recorded it (the
JSON schema's text; given tasks come from the cassette), keeping the variant's label
with ``swarmkit.comparison.variants.Variant``. The common options are those that rebuild every
variant's requests (``export.cellsource.replay_options``). As for a single run, the stored
output comes from executing the notebook in replay mode, and export checks that it shows
the comparison's own view and that each variant's replay reproduces its own tables
(answer included). Writing, keys and overwriting are ``ReplayNotebook``'s.
"""

from __future__ import annotations

import os
import pprint
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config.options import option_named
from ..display.tablefmt import format_cost, format_tokens
from ..display.tables import RunTables
from ..errors import ConfigError, ExportError
from ..export.cellsource import (
    header_text,
    line_safe,
    live_steps,
    md_code,
    md_text,
    models_text,
    replay_options,
    swarm_line,
)
from ..export.exporter import (
    CASSETTE_SUFFIX,
    ExportResult,
    ReplayNotebook,
    check_replayable,
    find_recording,
)
from ..export.replaycells import Recording, check_shown, first_changed_line
from ..store.cassette import Cassette
from .figures import live_latencies, percentile
from .variants import Variant, variants_of
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
    "comparison_source",
    "export_comparison",
]

# Given in the cell, these would need the notebook's namespace, a history or tools; a
# replay takes the given tasks and the tool results from the cassette instead.
_FROM_CASSETTE = frozenset({"tasks", "task_template", "plan_from", "tools", "mcp_servers"})
# A value whose literal is longer goes to a named constant above the call.
_INLINE_CHARS = 48


def comparison_cassettes(notebook: str | os.PathLike[str], count: int) -> tuple[str, ...]:
    """``<notebook>.1.swarm.json`` ... one cassette per variant, beside the notebook."""
    stem = ReplayNotebook.cassette_name(notebook).removesuffix(CASSETTE_SUFFIX)
    return tuple(f"{stem}.{number}{CASSETTE_SUFFIX}" for number in range(1, count + 1))


def comparison_paths(notebook: str | os.PathLike[str], count: int) -> tuple[Path, ...]:
    """The files ``export_comparison`` writes: the notebook and its ``count`` cassettes."""
    folder = Path(notebook).parent
    return (Path(notebook), *(folder / name for name in comparison_cassettes(notebook, count)))


# -- the cell ------------------------------------------------------------------------------


def _literal(value: Any) -> bool:
    """Whether ``repr(value)`` is a Python literal that evaluates back to ``value``."""
    if value is None or isinstance(value, (bool, int, str)):
        return True
    if isinstance(value, float):
        return value == value and abs(value) != float("inf")
    if isinstance(value, (list, tuple)):
        return all(_literal(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _literal(v) for k, v in value.items())
    return False


def _typed(name: str, text: str) -> Any:
    """A replay option's text as the literal a reader expects (``0.2``, not ``'0.2'``)."""
    kind = row.kind if (row := option_named(name)) is not None else "text"
    try:
        if kind == "int":
            return int(text)
        if kind == "number":
            number = float(text)
            return int(number) if number.is_integer() else number
    except ValueError:
        return text
    if kind == "bool" and text in ("true", "false"):
        return text == "true"
    return text


def _recorded(name: str, config: Mapping[str, Any]) -> Any:
    """The value of option ``name`` as the run recorded it (e.g. a schema's JSON text)."""
    row = option_named(name)
    if row is None:
        return None
    if row.role:
        role, field = ("planner", row.attr) if name == row.name else name.split("_", 1)
        return (config.get(role) or {}).get(field)
    return config.get("output_schema" if row.kind == "schema" else row.attr)


@dataclass(frozen=True, slots=True)
class _Written:
    """What the cell passes: common options, and each variant's (with its label)."""

    common: dict[str, Any]
    variants: list[dict[str, Any]]
    labels: tuple[str, ...]
    as_dicts: bool  # plain dicts reproduce the labels; else Variant(options, label)


def _written(variants: Sequence[Variant], configs: Sequence[Mapping[str, Any]]) -> _Written:
    full = [replay_options(config) for config in configs]
    keys = {name for variant in variants for name, _ in variant.options}
    common = {name: text for name, text in full[0].items()
              if name not in keys and all(f.get(name) == text for f in full)}
    written: list[dict[str, Any]] = []
    plain = True
    for variant, options, config in zip(variants, full, configs, strict=True):
        mine: dict[str, Any] = {}
        for name, value in variant.options:
            if name in _FROM_CASSETTE:
                plain = False
            elif _literal(value):
                mine[name] = value
            else:
                plain = False
                mine[name] = _recorded(name, config)
        own = {n for n, _ in variant.options}
        leftover = {n: _typed(n, t) for n, t in options.items() if n not in common and n not in own}
        plain = plain and not leftover
        written.append({**mine, **leftover})
    labels = tuple(v.label for v in variants)
    if plain:
        try:
            plain = tuple(v.label for v in variants_of(written)) == labels
        except ConfigError:
            plain = False
    typed = {name: _typed(name, text) for name, text in common.items()}
    return _Written(typed, written, labels, plain)


class _Names:
    """Long literals become constants above the call, named after their option."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def value(self, name: str, value: Any) -> str:
        text = repr(value)
        if len(text) <= _INLINE_CHARS and "\n" not in text:
            return text
        constant = name.upper()
        taken = {line.split(" = ", 1)[0] for line in self.lines}
        number = 2
        while constant in taken:
            constant, number = f"{name.upper()}_{number}", number + 1
        self.lines.append(f"{constant} = {pprint.pformat(value, width=80)}")
        return constant


def comparison_source(
    task: str,
    variants: Sequence[Variant],
    configs: Sequence[Mapping[str, Any]],
    cassettes: Sequence[str],
) -> str:
    """The code cell replaying every variant from its cassette; it shows the view."""
    written = _written(variants, configs)
    names = _Names()
    task_text = pprint.pformat(task, width=80)
    rows = []
    for options, label in zip(written.variants, written.labels, strict=True):
        pairs = [(name, names.value(name, value)) for name, value in options.items()]
        if written.as_dicts:
            rows.append("{" + ", ".join(f"{name!r}: {text}" for name, text in pairs) + "}")
        else:
            inner = "".join(f"({name!r}, {text}), " for name, text in pairs).rstrip(" ")
            rows.append(f"Variant(options=({inner}), label={label!r})")
    arguments = ["TASK", "variants=[\n" + "".join(f"        {row},\n" for row in rows) + "    ]",
                 f"replay={list(cassettes)!r}"]
    arguments += [f"{name}={names.value(name, value)}" for name, value in written.common.items()]
    head = ["import swarmkit"]
    if not written.as_dicts:
        head.append("from swarmkit.comparison import Variant")
    call = "comparison = swarmkit.compare_sync(\n" + "".join(
        f"    {argument},\n" for argument in arguments) + ")"
    return "\n".join([*head, "", f"TASK = {task_text}", *names.lines, call, "comparison"])


# -- the part ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ComparedCells:
    """A comparison's replay cell, as a part of a ``ReplayNotebook``."""

    task: str
    variants: tuple[Variant, ...]
    recordings: tuple[Recording, ...]

    def sources(
        self, cassettes: Sequence[str], session: Mapping[str, str]
    ) -> tuple[list[str], dict[str, str]]:
        # A Python call: the session's %swarm config does not apply to it, nor change.
        configs = [recording.config for recording in self.recordings]
        return [comparison_source(self.task, self.variants, configs, cassettes)], dict(session)

    def probe(self, execution_count: int) -> str | None:
        return f"[run.tables().text() for run in Out[{execution_count}].runs]"

    def check(self, cell: nbformat.NotebookNode, probed: Any) -> None:
        runs = [recording.run for recording in self.recordings]
        shown = check_shown(cell, "execute_result", "the replay of the comparison",
                            "its side-by-side view")
        # IPython's plain-text repr of a cell's value drops its final line break.
        view = ComparisonView.replayed([v.label for v in self.variants], runs).text()
        difference = first_changed_line(view.rstrip("\n"), shown.rstrip("\n"))
        if difference is not None:
            raise ExportError(f"the replay of the comparison does not reproduce its view "
                              f"(first difference: {difference}); run it again and export that")
        tables = probed if isinstance(probed, list) and len(probed) == len(runs) else []
        for variant, run, text in zip(self.variants, runs, tables or [None] * len(runs),
                                      strict=True):
            difference = first_changed_line(RunTables(run).text(), str(text))
            if difference is not None:
                raise ExportError(
                    f"the replay of variant {variant.label} (run {run.run_id}) does not "
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
) -> ComparedCells:
    """The part replaying a comparison: each run's recording (``cassettes``, else this
    session's or the history's) under ``names`` (default: the notebook's next names)."""
    if len(variants) != len(runs) or not runs:
        raise ExportError("export a comparison with one run per variant")
    found = [find_recording(run, cassette, history_path=history_path) for run, cassette in
             zip(runs, cassettes or [None] * len(runs), strict=True)]
    given = list(names) if names is not None else [None] * len(runs)
    return ComparedCells(task, tuple(variants), tuple(
        Recording(run, recording, name) for run, recording, name in
        zip(runs, found, given, strict=True)))


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
    configs = [recording.config for recording in part.recordings]
    common = _written(part.variants, configs).common
    line, rest = swarm_line({k: str(v) for k, v in common.items()}, "X", part.task)
    flags = line.removeprefix("%%swarm --replay X").strip()
    magic = " ".join(["%%swarm --compare", shlex.quote(f"{name}=" + ",".join(words)), flags])
    text = f"in a notebook, {md_code(magic.strip())} with the task as the cell's body"
    named = [w[1:] for w in words if w.startswith("@")]
    if named:
        text += " (first set " + ", ".join(md_code(n) for n in named) + " to the values " \
                "in the cell below)"
    if rest:
        text += " after `%swarm config` sets " + ", ".join(md_code(k) for k in rest)
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
    """Task, variants, date, each variant's totals (wall time and the latency of its
    live calls included), and how to replay or run it live."""
    runs = [recording.run for recording in part.recordings]
    configs = [recording.config for recording in part.recordings]
    started = min(run.started_at for run in runs).replace("T", " ")
    ids = ", ".join(md_code(run.run_id) for run in runs)
    rows = [("task", md_text(part.task)),
            ("variants", f"{len(runs)}, run concurrently under one budget"),
            ("recorded", f"{md_text(started)} (runs {ids})"),
            ("shared calls", f"{shared_calls} model calls made once for several variants")]
    table = ["| | |", "|---|---|", *[f"| {k} | {v} |" for k, v in rows]]
    per = ["| variant | models | outcome | calls | tokens in / out | cost | wall time "
           "| latency p50 / p95 |", "|---|---|---|---|---|---|---|---|"]
    for variant, run, config in zip(part.variants, runs, configs, strict=True):
        counts = ", ".join(f"{n} {md_text(s)}" for s, n in sorted(run.status_counts().items()))
        latencies = live_latencies(run)
        latency = ("—" if not latencies else f"{percentile(latencies, 50):.2f}s / "
                   f"{percentile(latencies, 95):.2f}s ({len(latencies)} live)")
        per.append(
            f"| {md_text(variant.label)} | {models_text(config)} | {md_text(run.status)}; "
            f"{len(run.workers)} workers ({counts or 'none'}) | {len(run.calls)} | "
            f"{format_tokens(run.usage.prompt_tokens)} / "
            f"{format_tokens(run.usage.completion_tokens)} | {format_cost(run.cost_usd)} | "
            f"{run.duration:.2f}s | {latency} |")
    steps = list(dict.fromkeys(s for run, config in zip(runs, configs, strict=True)
                               for s in live_steps(run, config)))
    live = ["delete the `replay=[...]` argument and run the cell", *steps]
    if (line := _live_line(part)):
        live.append(line)
    files = " and ".join(md_code(name) for name in cassettes)
    return header_text(
        title or "Comparison: " + md_text(part.task), ["\n".join(table), "", "\n".join(per)],
        note, f"The cell below replays each variant from its recording ({files}): no "
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
) -> ExportResult:
    """Write ``path`` (a notebook replaying the comparison) and one cassette per variant.

    Raises :class:`~swarmkit.errors.ExportError` when a variant's run has no recording,
    when the replay does not reproduce the view or a variant's tables, when a key value
    would be written, or when a file exists and ``overwrite`` is false. A failed export
    leaves no file behind.
    """
    for run in runs:
        check_replayable(run)
    names = comparison_cassettes(path, len(runs))
    part = compared(task, variants, runs, cassettes=cassettes, names=names,
                    history_path=history_path)
    book = ReplayNotebook(env=env, kernel_name=kernel_name, timeout=timeout)
    book.markdown(comparison_header(part, names, Path(path).name, title=title, note=note,
                                    shared_calls=shared_calls))
    book.replayed(part)
    return book.write(path, overwrite=overwrite)
