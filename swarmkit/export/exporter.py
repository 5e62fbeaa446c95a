"""A run as a notebook that replays offline: ``run.export(path)`` and ``%swarm export``.

    result = run.export("compare.ipynb")   # compare.ipynb + compare.swarm.json beside it

The notebook holds a short header (task, models, date, totals, how to run it live),
``%load_ext swarmkit``, and the run's ``%%swarm`` cell with ``--replay compare.swarm.json``
(relative to the notebook) and the options the run used; where the run called tools, a
cell prints its tool-call table. The stored outputs come from executing the written
notebook in replay mode with nbclient (no timing metadata, no widget state), so a fresh
replay, such as ``pytest --nbval compare.ipynb``, equals them. Export checks that the
replay reproduces the run's own tables, and writes nothing that would contain the value
of a key variable. It never replaces an existing notebook or cassette unless told to
(``overwrite=True``, ``%swarm export ... --force``), and a failed export writes nothing.

The recording comes from ``cassette=`` (a Cassette or a file), else from this process's
recent runs (every run through the call store is recorded in memory), else from the run
history, which keeps each run's cassette. The written cassette leaves out the recording
machine's file paths (history, record and replay files).

:class:`ReplayNotebook` builds notebooks with several swarm cells and prose between them
(the tutorials in ``notebooks/`` are made with it).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config.swarmconfig import DEFAULT_KEY_ENV, ROLES
from ..credentials.secrets import MIN_SECRET_CHARS, find_secret
from ..errors import ExportError, StoreError
from ..store.cassette import Cassette
from ..store.history import History, default_history_path
from ..store.recent import recent_recording
from .cellsource import header_markdown, line_safe, md_text
from .checksource import rebuilt_checks
from .notebookfile import (
    CLOSED_BASE_URL,
    NotebookPart,
    execute_notebook,
    existing,
    render_cells,
    write_all,
)
from .replaycells import Recording, Replayed, SwarmCell

if TYPE_CHECKING:
    import nbformat

    from ..record.runrecord import RunRecord

__all__ = [
    "ExportResult",
    "ReplayNotebook",
    "check_replayable",
    "export_paths",
    "export_run",
    "find_recording",
]

CASSETTE_SUFFIX = ".swarm.json"
TOOL_TABLE_SOURCE = "print(_swarm.tables().tool_table())"


@dataclass(frozen=True, slots=True)
class ExportResult:
    """Where an export wrote: the notebook and the cassettes its cells replay."""

    notebook: Path
    cassettes: tuple[Path, ...]

    def __str__(self) -> str:
        return str(self.notebook)

    def __repr__(self) -> str:
        files = ", ".join(str(p) for p in self.cassettes)
        return (f"wrote {self.notebook} (replays {files}); check it offline with "
                f"pytest --nbval {self.notebook}")

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(repr(self))


def find_recording(
    run: RunRecord,
    cassette: Cassette | str | os.PathLike[str] | None = None,
    *,
    history_path: str | os.PathLike[str] | None = None,
) -> Cassette:
    """The recording of ``run``: ``cassette``, a recent run's, or the history's."""
    if isinstance(cassette, Cassette):
        found: Cassette | None = cassette
    elif cassette is not None:
        try:
            found = Cassette.load(cassette)
        except StoreError as exc:
            raise ExportError(f"cannot export run {run.run_id}: {exc}") from None
    else:
        found = recent_recording(run.run_id) or _from_history(run, history_path)
    if found is None:
        raise ExportError(
            f"no recording of run {run.run_id} in this session or its history; run it "
            "again with record=FILE (--record FILE) and pass cassette=FILE"
        )
    if found.run_id != run.run_id:
        raise ExportError(
            f"cassette {found.source} records run {found.run_id}, not run {run.run_id}; "
            "pass the cassette that run was recorded to"
        )
    return found


def _from_history(run: RunRecord, history_path: str | os.PathLike[str] | None) -> Cassette | None:
    # Never a path named inside the Run's JSON (its config): a crafted file must not make
    # export open, or change, a database of its choosing. Only the one it was loaded from.
    places = [history_path, run.history_file, default_history_path()]
    for place in dict.fromkeys(Path(p) for p in places if p):
        if not place.is_file():  # never create a database just to look in it
            continue
        try:
            with History(place) as history:
                found = history.cassette(run.run_id)
        except StoreError:
            continue
        if found is not None:
            return found
    return None


# -- keys ----------------------------------------------------------------------------------


def key_values(configs: list[Mapping[str, Any]], env: Mapping[str, str]) -> dict[str, str]:
    """``{variable: value}`` for every key variable the run configs name and env sets."""
    names = {DEFAULT_KEY_ENV}
    for config in configs:
        for role in (*ROLES, "judge"):  # the judge's is in a config only when it was set
            value = (config.get(role) or {}).get("api_key_env") or ()
            names.update([value] if isinstance(value, str) else value)
    found = {}
    for name in sorted(names):
        value = env.get(name, "").strip()
        if len(value) >= MIN_SECRET_CHARS:
            found[name] = value
    return found


def _refuse_leak(text: str, what: str, secrets: Mapping[str, str]) -> None:
    leaked = find_secret(text, secrets)
    if leaked is not None:
        raise ExportError(
            f"not exporting: {what} would contain the value of {leaked}; keep the key "
            "out of prompts and tool results, then run and export again"
        )


# -- building ------------------------------------------------------------------------------


class ReplayNotebook:
    """A notebook of prose, code and replayed ``%%swarm`` cells, written by :meth:`write`.

    ``env`` is the environment whose key variables must not leak (default: os.environ).
    Cassettes are named ``<notebook>.swarm.json``, then ``<notebook>.2.swarm.json``, ...
    unless ``swarm(..., name=)`` says otherwise; they live beside the notebook.
    """

    def __init__(
        self,
        *,
        env: Mapping[str, str] | None = None,
        kernel_name: str = "python3",
        timeout: float = 300.0,
    ) -> None:
        self.env = dict(os.environ if env is None else env)
        self.kernel_name = kernel_name
        self.timeout = timeout
        self._parts: list[tuple[str, Any]] = []
        self._loaded = False

    def markdown(self, text: str) -> None:
        self._parts.append(("markdown", text))

    def code(self, source: str, *, tags: tuple[str, ...] = ()) -> None:
        self._parts.append(("code", (source, tags)))

    def load_extension(self) -> None:
        """The ``%load_ext swarmkit`` cell (swarm() adds it when it is missing)."""
        if not self._loaded:
            self.code("%load_ext swarmkit")
            self._loaded = True

    def swarm(
        self,
        run: RunRecord,
        *,
        cassette: Cassette | str | os.PathLike[str] | None = None,
        name: str | None = None,
        history_path: str | os.PathLike[str] | None = None,
    ) -> None:
        """The ``%%swarm --replay`` cell that reproduces ``run`` (and its options cell)."""
        recording = find_recording(run, cassette, history_path=history_path)
        self.replayed(SwarmCell(Recording(run, recording, name)))

    def replayed(self, part: Replayed) -> None:
        """Cells that replay recorded runs (a swarm cell, a comparison...)."""
        self.load_extension()
        self._parts.append(("replayed", part))

    @staticmethod
    def cassette_name(notebook: str | os.PathLike[str], number: int = 1) -> str:
        # The name goes on the %%swarm line, where IPython would expand braces and $.
        stem = "".join(c if line_safe(c) else "_"
                       for c in Path(notebook).name.removesuffix(".ipynb"))
        return f"{stem}{'' if number == 1 else f'.{number}'}{CASSETTE_SUFFIX}"

    def write(self, path: str | os.PathLike[str], *, overwrite: bool = False) -> ExportResult:
        """Execute the notebook in replay mode and write it with its cassettes.

        An existing notebook or cassette is an error unless ``overwrite``; a failed
        export writes nothing.
        """
        target = Path(path)
        if target.suffix != ".ipynb":
            raise ExportError(f"export to a .ipynb path, not {target.name!r}")
        parts, cassettes, checks = self._resolve(target)
        files = [target, *(target.parent / name for name in cassettes)]
        if not overwrite and (taken := existing(files)):
            raise ExportError(f"not exporting: {taken}; pass overwrite=True to replace it")
        configs = [c for r in cassettes.values() for c in (r.run.config, r.config)]
        secrets = key_values(configs, self.env)
        texts = {name: _shareable(r.cassette).dumps() for name, r in cassettes.items()}
        for name, text in texts.items():
            _refuse_leak(text, f"cassette {name}", secrets)
        notebook = render_cells(parts)
        _refuse_leak(_notebook_text(notebook), f"notebook {target.name}", secrets)
        probes = _probes(parts, checks)
        if probes:
            notebook.cells.append(render_cells([("code", (_probe_source(probes), ()))]).cells[0])
        with tempfile.TemporaryDirectory(prefix="swarmkit-export-") as folder:
            work = Path(folder)
            for name, text in texts.items():
                (work / name).write_text(text, encoding="utf-8")
            execute_notebook(notebook, work, env=_kernel_env(self.env, secrets),
                             kernel_name=self.kernel_name, timeout=self.timeout)
        probed = _probed(notebook.cells.pop()) if probes else {}
        for index, part in checks.items():
            part.check(notebook.cells[index], probed.get(str(index)))
        final = _notebook_text(notebook)
        _refuse_leak(final, f"notebook {target.name}", secrets)
        written = {target.parent / name: text for name, text in texts.items()}
        write_all({**written, target: final}, overwrite=overwrite)
        return ExportResult(target, tuple(written))

    def _resolve(
        self, target: Path
    ) -> tuple[list[NotebookPart], dict[str, Recording], dict[int, Replayed]]:
        """Cells in order, recordings by cassette file name, and the replayed parts by
        the index of their last cell."""
        parts: list[NotebookPart] = []
        cassettes: dict[str, Recording] = {}
        checks: dict[int, Replayed] = {}
        session: dict[str, str] = {}
        for kind, value in self._parts:
            if kind != "replayed":
                parts.append((kind, value) if kind == "code" else (kind, (value, ())))
                continue
            names = []
            for recording in value.recordings:
                name = recording.name or self.cassette_name(target, len(cassettes) + 1)
                taken = cassettes.get(name)
                if taken is not None and taken.cassette.run_id != recording.cassette.run_id:
                    raise ExportError(f"two runs would share the cassette file {name}; "
                                      "name one")
                cassettes[name] = recording
                names.append(name)
            cells, session = value.sources(names, session)
            for source in cells:
                parts.append(("code", (source, ())))
            checks[len(parts) - 1] = value
        if not cassettes:
            raise ExportError("the notebook has no swarm cell; add one with swarm(run)")
        return parts, cassettes, checks


def _probes(parts: list[NotebookPart], checks: Mapping[int, Replayed]) -> dict[str, str]:
    """The parts' probes by cell index; a code cell's execution count is its number
    among the code cells, since the notebook runs top to bottom in a fresh kernel."""
    counts = {index: sum(1 for kind, _ in parts[: index + 1] if kind == "code")
              for index in checks}
    return {str(index): probe for index, part in checks.items()
            if (probe := part.probe(counts[index])) is not None}


def _probe_source(probes: Mapping[str, str]) -> str:
    items = ", ".join(f"{index!r}: {expression}" for index, expression in probes.items())
    return f"import json as _probe_json\nprint(_probe_json.dumps({{{items}}}))"


def _probed(cell: nbformat.NotebookNode) -> dict[str, Any]:
    text = "".join(o.get("text", "") for o in cell.outputs if o.get("name") == "stdout")
    try:
        found = json.loads(text)
    except ValueError:
        raise ExportError("the replayed notebook's check printed no result; export again "
                          "with a kernel that runs this swarmkit") from None
    return found if isinstance(found, dict) else {}


# Where the recording machine kept its files: no use to a replay, and no one else's business.
_LOCAL_PATHS = ("history_path", "record", "replay")


def _shareable(cassette: Cassette) -> Cassette:
    config = dict(cassette.run.get("config") or {})
    for key in _LOCAL_PATHS:
        if config.get(key) is not None:
            config[key] = None
    return replace(cassette, run={**cassette.run, "config": config})


def _notebook_text(notebook: nbformat.NotebookNode) -> str:
    import nbformat

    return nbformat.writes(notebook) + "\n"


def _kernel_env(env: Mapping[str, str], secrets: Mapping[str, str]) -> dict[str, str]:
    """The replaying kernel's environment: no keys, no SWARMKIT_* defaults, no network.

    Dropping keys and pointing the default endpoint at a closed port proves the stored
    outputs need neither; dropping ``SWARMKIT_*`` keeps them a function of the notebook.
    """
    kernel = {k: v for k, v in env.items() if k not in secrets and not k.startswith("SWARMKIT_")}
    kernel["OPENAI_BASE_URL"] = CLOSED_BASE_URL
    # The kernel imports the swarmkit doing the export, installed or not.
    package_root = str(Path(__file__).resolve().parent.parent)
    kernel["PYTHONPATH"] = os.pathsep.join(
        [package_root, *[p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]]
    )
    return kernel


def export_paths(path: str | os.PathLike[str]) -> tuple[Path, Path]:
    """The files ``export_run(run, path)`` writes: the notebook and its cassette."""
    return Path(path), Path(path).parent / ReplayNotebook.cassette_name(path)


def check_replayable(run: RunRecord) -> None:
    """Refuse, before any work, a run no cassette can replay."""
    if run.batches:
        # A batch's worker calls went through files at the provider, not one call each,
        # so no cassette holds them and a replay would miss at the first worker.
        raise ExportError(f"run {run.run_id} sent its workers to the Batch API, whose calls "
                          "are not in a cassette, so it cannot replay offline; run it "
                          "without --batch to export it")


def export_run(
    run: RunRecord,
    path: str | os.PathLike[str],
    *,
    cassette: Cassette | str | os.PathLike[str] | None = None,
    history_path: str | os.PathLike[str] | None = None,
    title: str | None = None,
    note: str = "",
    env: Mapping[str, str] | None = None,
    kernel_name: str = "python3",
    timeout: float = 300.0,
    overwrite: bool = False,
) -> ExportResult:
    """Write ``path`` (a notebook replaying ``run``) and its cassette beside it.

    ``note`` is Markdown added to the header (e.g. which model recorded the run).
    Raises :class:`~swarmkit.errors.ExportError` when there is no recording of the run,
    when the replay does not reproduce it, when a key value would be written, or when
    the notebook or its cassette exists and ``overwrite`` is false. A failed export
    leaves no file behind.
    """
    check_replayable(run)
    book = ReplayNotebook(env=env, kernel_name=kernel_name, timeout=timeout)
    name = ReplayNotebook.cassette_name(path)
    recording = find_recording(run, cassette, history_path=history_path)
    config = recording.run.get("config") or run.config
    left_out = rebuilt_checks([run]).note()
    if left_out:
        note = f"{note}\n\n{md_text(left_out)}".strip()
    book.markdown(header_markdown(run, config, name, Path(path).name, title=title, note=note))
    book.swarm(run, cassette=recording, name=name)
    if run.tool_calls:
        book.markdown("Every tool call the workers made, with the recorded results:")
        book.code(TOOL_TABLE_SOURCE)
    return book.write(path, overwrite=overwrite)

