"""Notebook plumbing for exports: cells from parts, execution with nbclient, all-or-nothing
writes that never replace a file unless told to.

Execution runs in its own thread with its own event loop, so it works from a script, from
a notebook cell (whose thread already runs a loop) and from swarmkit's loop thread alike.
The kernel's own output (its start-up chatter) goes to a log file, not to the caller's
terminal; its last line is quoted when the kernel dies.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import tempfile
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ExportError

if TYPE_CHECKING:
    import nbformat

__all__ = [
    "CLOSED_BASE_URL",
    "NotebookPart",
    "execute_notebook",
    "existing",
    "render_cells",
    "write_all",
]

# Port 9 (discard) has no listener on a normal machine: a connection is refused at once,
# so a replaying kernel that tried to reach a model would fail instead of passing by luck.
CLOSED_BASE_URL = "http://127.0.0.1:9/v1"

# ("markdown" | "code", (source, cell tags))
NotebookPart = tuple[str, tuple[str, tuple[str, ...]]]

KERNELSPEC = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}


def render_cells(parts: Sequence[NotebookPart]) -> nbformat.NotebookNode:
    """A v4 notebook of ``parts``, with stable cell ids (re-exports change nothing)."""
    import nbformat

    notebook = nbformat.v4.new_notebook()
    notebook.metadata = {"kernelspec": dict(KERNELSPEC), "language_info": {"name": "python"}}
    for number, (kind, (source, tags)) in enumerate(parts, start=1):
        if kind == "markdown":
            cell = nbformat.v4.new_markdown_cell(source)
        else:
            cell = nbformat.v4.new_code_cell(source)
        cell.id = f"cell-{number}"
        if tags:
            cell.metadata["tags"] = list(tags)
        notebook.cells.append(cell)
    return notebook


def execute_notebook(
    notebook: nbformat.NotebookNode,
    folder: Path,
    *,
    env: Mapping[str, str],
    kernel_name: str = "python3",
    timeout: float = 300.0,
) -> None:
    """Run every cell in a fresh kernel whose working folder is ``folder``, in place.

    Stores no timing metadata and no widget state, so the outputs are what any later
    replay (nbval) produces. A cell that raises becomes an :class:`ExportError`.
    """
    try:
        from nbclient import NotebookClient
        from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError
    except ImportError:
        raise ExportError(
            'exporting runs the notebook, which needs the "notebook" extra: '
            'pip install "jupyter-swarmkit[notebook]"'
        ) from None

    client = NotebookClient(
        notebook,
        timeout=int(timeout),
        kernel_name=kernel_name,
        resources={"metadata": {"path": str(folder)}},
        record_timing=False,
        store_widget_state=False,
    )
    log = folder / ".kernel.log"
    outcome: dict[str, BaseException] = {}

    def execute() -> None:
        try:
            with open(log, "wb") as output:
                asyncio.run(client.async_execute(env=dict(env), stdout=output, stderr=output))
        except BaseException as exc:  # handed to the calling thread below
            outcome["error"] = exc

    worker = threading.Thread(target=execute, name="swarmkit-export", daemon=True)
    worker.start()
    worker.join()
    error = outcome.get("error")
    if error is None:
        # The kernel reports its Python version here; keep the file machine-independent.
        notebook.metadata["language_info"] = {"name": "python"}
        return
    if isinstance(error, CellExecutionError):
        raise ExportError(
            f"a cell failed while replaying the notebook: {error.ename}: "
            f"{_first_line(error.evalue)}"
        ) from None
    if isinstance(error, CellTimeoutError):
        raise ExportError(
            f"replaying the notebook took over {timeout:g}s; pass a larger timeout="
        ) from None
    if isinstance(error, DeadKernelError):
        raise ExportError(
            f"the notebook's kernel died while replaying ({_last_line(log)}); check that "
            f"the {kernel_name!r} kernel can import swarmkit"
        ) from None
    raise ExportError(
        f"could not run the notebook in kernel {kernel_name!r}: {type(error).__name__}: "
        f"{_first_line(str(error))}; install ipykernel or pass kernel_name="
    ) from None


def _first_line(text: str) -> str:
    return next((line.strip() for line in str(text).splitlines() if line.strip()), "")


def _last_line(log: Path) -> str:
    try:
        lines = [line for line in log.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return "no kernel log"
    return lines[-1].strip()[:200] if lines else "no kernel output"


def existing(paths: Sequence[Path]) -> str | None:
    """``"a and b"``: those of ``paths`` that exist (a link or folder too), or None."""
    taken = [str(path) for path in paths if path.exists() or path.is_symlink()]
    if not taken:
        return None
    return " and ".join(taken) + (" already exists" if len(taken) == 1 else " already exist")


def write_all(files: Mapping[Path, str], *, overwrite: bool = False) -> None:
    """Write every file whole, or none of them (the export's notebook and cassettes).

    Each text goes to a temporary file beside its target first; only when all are
    written are they renamed into place. A failure removes the temporary files, the
    targets this call created and the folders it made; a target that exists stops
    everything unless ``overwrite``.
    """
    made_folders: list[Path] = []
    staged: dict[Path, Path] = {}
    placed: list[Path] = []
    new = {path for path in files if not (path.exists() or path.is_symlink())}
    try:
        for path, text in files.items():
            for folder in reversed([path.parent, *path.parent.parents]):
                if not folder.exists():
                    folder.mkdir()
                    made_folders.append(folder)
            staged[path] = _stage(path, text)
        if not overwrite and (taken := existing(list(files))):
            raise ExportError(f"not exporting: {taken}; pass overwrite=True to replace it")
        for path, temp in staged.items():
            os.replace(temp, path)
            placed.append(path)
    except BaseException as exc:
        for temp in staged.values():
            temp.unlink(missing_ok=True)
        for path in placed:
            if path in new:
                path.unlink(missing_ok=True)
        for folder in reversed(made_folders):
            with contextlib.suppress(OSError):
                folder.rmdir()
        if isinstance(exc, OSError):
            raise ExportError(f"cannot write {exc.filename or 'the export'} ({exc.strerror}); "
                              "choose a writable path") from None
        raise


def _stage(path: Path, text: str) -> Path:
    handle, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        # mkstemp makes 0600; a notebook and its cassette are shared like any source file.
        os.chmod(temp, 0o644)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    return Path(temp)
