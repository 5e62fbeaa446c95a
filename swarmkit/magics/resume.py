"""``%swarm resume [RUN]``: continue a run that did not finish, here or anywhere.

A run's plan is in the history as soon as the planner answers, and every call's answer
as it lands (cache on or off: a ``run_sync`` run too), so a kernel that died, an
interrupt or a cancel leaves enough to continue. Resuming runs the stored task with the
stored options and plan; the answered calls are served from the history and only the
missing ones are made. Without RUN, the most recent run that did not complete; a dry-run
(``planned``) is not one: it is refused, since its calls take the explicit
``%%swarm --plan-from RUN``.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError

from ..api.entry import check_resumable, resumed_config
from ..config.wording import counted
from ..errors import ConfigError, StoreError
from ..store import History
from ..store.rerun import rerun_endpoints, stored_config
from .session import LAST_RUN, check_keys, usage_error

if TYPE_CHECKING:
    from ..record.runrecord import RunRecord
    from .session import Session

__all__ = ["resume_command"]

WHERE = "%swarm resume"
USAGE = "%swarm resume [RUN] [--base-url URL] [--api-key-env VAR] [--out NAME]"
# How far back a bare ``%swarm resume`` looks for a run that did not complete.
_LOOK_BACK = 50
# Not unfinished: a completed run, and a dry-run (planned), which never started its calls.
_FINISHED = frozenset({"completed", "planned"})


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:
        raise UsageError(f"{WHERE}: {message}; usage: {USAGE}")


def _unfinished(history: History) -> str:
    for summary in history.recent(_LOOK_BACK):
        if summary.status not in _FINISHED:
            return summary.run_id
    raise UsageError(f"{WHERE}: every recent run in {history.path} completed (or was a "
                     "dry-run); name the run to continue (see %swarm history)")


def _past(magics: Session, run: str | None) -> RunRecord:
    try:
        with History(magics.session_config().history_file()) as history:
            return history.load_run(run if run is not None else _unfinished(history))
    except StoreError as exc:
        raise usage_error(exc, WHERE) from None


def resume_command(magics: Session, argv: list[str]) -> None:
    parser = _Parser(prog=WHERE, add_help=False, allow_abbrev=False)
    parser.add_argument("run", nargs="?")
    parser.add_argument("--out")
    parser.add_argument("--base-url")
    parser.add_argument("--api-key-env")
    args = parser.parse_args(argv)
    if args.out is not None and not args.out.isidentifier():
        raise UsageError(f"{WHERE}: --out needs a Python variable name, got {args.out!r}")
    past = _past(magics, args.run)
    try:
        check_resumable(past, notebook=True)  # first: a dry-run's endpoints do not matter
        config = stored_config(past, base_url=args.base_url, api_key_env=args.api_key_env,
                               trusted=magics.session_config())
        # The session's history: where the answers were written, and where this goes.
        config = resumed_config(
            replace(config, history_path=magics.session_config().history_path), past,
            past.task)
    except (StoreError, ConfigError) as exc:
        raise usage_error(exc, WHERE) from None
    check_keys(config, os.environ)
    print(f"{WHERE}: run {past.run_id} ({past.status}, {counted(len(past.plan), 'sub-task')}); "
          f"{rerun_endpoints(config)}")
    magics.run_in_cell(past.task, config, (LAST_RUN, *([args.out] if args.out else [])))
