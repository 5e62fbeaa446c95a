"""``%swarm export [RUN] PATH.ipynb [--force]``: a run as a notebook that replays offline.

RUN is a variable holding a Run, or a run id (prefix) from ``%swarm history``; without
it, the last run of this session. The recording comes from this session's memory or the
history database (see ``swarmkit.export.exporter``). An existing notebook or cassette is kept
unless ``--force`` is given.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from IPython.core.error import UsageError

from ..errors import StoreError, SwarmError
from ..export.exporter import ExportResult, export_paths, export_run
from ..export.writer import existing
from ..result import Run
from ..store import History
from .session import usage_error

if TYPE_CHECKING:
    from .session import Session

__all__ = ["export_command"]

USAGE = "%swarm export [RUN] PATH.ipynb [--force]"


def _pick(magics: Session, which: str | None) -> Run:
    if which is None:
        if magics.last_run is None:
            raise UsageError("%swarm export: no swarm has run in this session yet; run a "
                             "%%swarm cell first, or name a run from %swarm history")
        if not isinstance(magics.last_run, Run):
            raise UsageError("%swarm export: the last cell was a --compare; export one of "
                             "its runs by name: first = _swarm[0], then %swarm export "
                             "first PATH.ipynb")
        return magics.last_run
    value = magics.namespace.get(which)
    if isinstance(value, Run):
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
    if not force and (taken := existing(export_paths(argv[-1]))):
        raise UsageError(f"%swarm export: not exporting: {taken}; add --force to replace it")
    run = _pick(magics, argv[0] if len(argv) == 2 else None)
    try:
        return export_run(run, argv[-1], history_path=magics.session_config().history_file(),
                          overwrite=force)
    except SwarmError as exc:
        raise usage_error(exc, "%swarm export") from None
