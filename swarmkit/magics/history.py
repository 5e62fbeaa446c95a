"""``%swarm history``, ``show``, ``rerun`` and ``diff``: the run history in a notebook.

They read the history database the session's config points at (``history_path``,
default ``.swarmkit/history.db`` under the notebook's folder).
"""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError

from ..api.result import Run
from ..display import RunDiff, RunListing
from ..errors import ConfigError, StoreError, SwarmError
from ..store import History, rerun_config
from ..store.rerun import rerun_endpoints
from .bridge import SwarmHandle, summary_line
from .output import publish, run_bundle
from .session import LAST_RUN, check_keys, usage_error

if TYPE_CHECKING:
    from .session import Session

__all__ = ["diff_command", "history_command", "rerun_command", "show_command"]

DEFAULT_RECENT = 10


def _open(magics: Session, where: str) -> History:
    try:
        return History(magics.session_config().history_file())
    except StoreError as exc:
        raise usage_error(exc, where) from None


def _load(history: History, run_id: str, where: str) -> Run:
    try:
        return Run.of(history.load_run(run_id))
    except StoreError as exc:
        raise usage_error(exc, where) from None


def history_command(magics: Session, argv: list[str]) -> RunListing:
    if len(argv) > 1 or (argv and not argv[0].isdigit()):
        raise UsageError("%swarm history: expected how many runs to list, e.g. %swarm history 20")
    with _open(magics, "%swarm history") as history:
        try:
            runs = history.recent(int(argv[0]) if argv else DEFAULT_RECENT)
        except StoreError as exc:  # a garbled row: one line, not a traceback
            raise usage_error(exc, "%swarm history") from None
        return RunListing(runs, str(history.path))


def show_command(magics: Session, argv: list[str]) -> None:
    if len(argv) != 1:
        raise UsageError("%swarm show: expected one run id (see %swarm history)")
    with _open(magics, "%swarm show") as history:
        run = _load(history, argv[0], "%swarm show")
    publish(run_bundle(run))


def diff_command(magics: Session, argv: list[str]) -> RunDiff:
    if len(argv) != 2:
        raise UsageError("%swarm diff: expected two run ids, e.g. %swarm diff 3f2a 9c1b")
    with _open(magics, "%swarm diff") as history:
        return RunDiff(_load(history, argv[0], "%swarm diff"),
                       _load(history, argv[1], "%swarm diff"))


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:
        raise UsageError(f"%swarm rerun: {message}; usage: %swarm rerun RUN --worker K "
                         "[--base-url URL] [--api-key-env VAR] [--out NAME]")


def rerun_command(magics: Session, argv: list[str]) -> None:
    """Re-run one worker of a past run and its reducer; everything else hits the cache.

    The history may come from anywhere: the rerun says where its calls go, and refuses an
    endpoint or key variable this session has not used unless ``--base-url`` /
    ``--api-key-env`` name them (``swarmkit.store.rerun``).
    """
    parser = _Parser(prog="%swarm rerun", add_help=False, allow_abbrev=False)
    parser.add_argument("run")
    parser.add_argument("--worker", required=True)  # an index, or a dotted id: 2.1
    parser.add_argument("--out")
    parser.add_argument("--base-url")
    parser.add_argument("--api-key-env")
    args = parser.parse_args(argv)
    if args.out is not None and not args.out.isidentifier():
        raise UsageError(f"%swarm rerun: --out needs a Python variable name, got {args.out!r}")
    with _open(magics, "%swarm rerun") as history:
        past = _load(history, args.run, "%swarm rerun")
    try:
        config = rerun_config(past, args.worker, base_url=args.base_url,
                              api_key_env=args.api_key_env, trusted=magics.session_config())
    except (StoreError, ConfigError) as exc:
        raise usage_error(exc, "%swarm rerun") from None
    check_keys(config, os.environ)
    print(f"%swarm rerun: worker {args.worker} of run {past.run_id} and the reducer; "
          f"{rerun_endpoints(config)}")
    names = (LAST_RUN, *([args.out] if args.out else []))
    handle = SwarmHandle(past.task, config).start()
    try:
        run = handle.result()
    except KeyboardInterrupt:
        run = handle.cancel_and_collect("interrupt")
        magics.store(run, names)
        print(summary_line(run, "interrupted", names))
        return
    except SwarmError as exc:
        raise usage_error(exc, "%swarm rerun") from None
    magics.store(run, names)
    publish(run_bundle(run))
