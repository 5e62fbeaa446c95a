"""``%swarm export [RUN] PATH.ipynb [--force]``: a run as a notebook that replays offline.

RUN is a variable holding a Run or a Comparison, or a run id (prefix) from ``%swarm
history``; without it, the last cell's result (after ``--compare``, the whole
comparison: one cassette per variant beside the notebook). The recording comes from this
session's memory or the history database (see ``swarmkit.export.exporter``). An existing
notebook or cassette is kept unless ``--force`` is given.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from IPython.core.error import UsageError

from ..api.result import Run
from ..comparison.export import comparison_paths
from ..comparison.result import Comparison
from ..errors import StoreError, SwarmError
from ..export.exporter import ExportResult, export_paths, export_run
from ..export.notebookfile import existing
from ..store import History
from .session import usage_error

if TYPE_CHECKING:
    from .session import Session

__all__ = ["export_command"]

USAGE = "%swarm export [RUN] PATH.ipynb [--force]"


def _pick(magics: Session, which: str | None) -> Run | Comparison:
    if which is None:
        if magics.last_run is None:
            raise UsageError("%swarm export: no swarm has run in this session yet; run a "
                             "%%swarm cell first, or name a run from %swarm history")
        return magics.last_run
    value = magics.namespace.get(which)
    if isinstance(value, Run | Comparison):
        return value
    path = magics.session_config().history_file()
    if not path.is_file():
        raise UsageError(f"%swarm export: {which!r} is neither a Run variable nor a run in "
                         f"history ({path} does not exist yet)")
    try:
        with History(path) as history:
            return history.load_run(which)
    except StoreError as exc:
        raise usage_error(exc, "%swarm export") from None


def export_command(magics: Session, argv: list[str]) -> ExportResult:
    force = "--force" in argv
    argv = [word for word in argv if word != "--force"]
    if len(argv) not in (1, 2) or not argv[-1].endswith(".ipynb"):
        raise UsageError(f"%swarm export: expected {USAGE}, e.g. %swarm export report.ipynb")
    picked = _pick(magics, argv[0] if len(argv) == 2 else None)
    paths = (comparison_paths(argv[-1], sum(len(group) for group in picked.repeats))
             if isinstance(picked, Comparison)
             else export_paths(argv[-1]))
    if not force and (taken := existing(paths)):
        raise UsageError(f"%swarm export: not exporting: {taken}; add --force to replace it")
    history_path = magics.session_config().history_file()
    try:
        if isinstance(picked, Comparison):
            return picked.export(argv[-1], history_path=history_path, overwrite=force)
        return export_run(picked, argv[-1], history_path=history_path, overwrite=force)
    except SwarmError as exc:
        raise usage_error(exc, "%swarm export") from None
