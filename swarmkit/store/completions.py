"""What a history teaches the forecast: the completion tokens of earlier calls.

:func:`completion_history` reads, per model and role, the completion tokens of the
calls of the most recent finished runs in the history file (``RECENT_RUNS`` runs,
newest first), for ``swarmkit.engine.forecast``. Only calls that answered count (a
failed call wrote nothing), and only runs that ended with workers (a dry run's planner
call teaches nothing about workers). Reading never creates the file, and a history
that cannot be read gives no basis rather than an error: the bound still stands.
"""

from __future__ import annotations

import logging
import os
from collections import defaultdict
from pathlib import Path

from ..engine.forecast import CompletionHistory, Learned
from ..errors import StoreError
from .history import History

__all__ = ["RECENT_RUNS", "completion_history"]

log = logging.getLogger("swarmkit")
RECENT_RUNS = 10  # per model and role: recent runs say more about today's prompts
_ROWS = 20_000  # calls read at most, newest first

# The max_tokens each call was asked under, from its run's recorded config: a call that
# wrote all of it was cut there (engine.forecast.Learned.mean).
_QUERY = (
    "SELECT calls.run_id, calls.role, calls.model, calls.completion_tokens, "
    "CASE calls.role WHEN 'worker' THEN json_extract(runs.config, '$.worker.max_tokens') "
    "ELSE json_extract(runs.config, '$.reducer.max_tokens') END AS asked FROM calls "
    "JOIN runs ON runs.run_id = calls.run_id "
    "WHERE calls.error IS NULL AND calls.completion_tokens IS NOT NULL "
    "AND calls.role IN ('worker', 'reducer') "
    "AND runs.status IN ('completed', 'partial', 'stopped') "
    "ORDER BY runs.saved DESC, calls.seq LIMIT ?"
)


def completion_history(path: str | os.PathLike[str] | None) -> CompletionHistory:
    """The completions of the recent runs in the history at ``path`` (None: none)."""
    if path is None or not Path(path).is_file():
        return CompletionHistory()
    try:
        with History(path) as history:
            rows = history.db.query(_QUERY, (_ROWS,))
    except StoreError as exc:
        log.warning("swarmkit: the forecast reads no history: %s", exc)
        return CompletionHistory()
    runs: dict[tuple[str, str], list[str]] = defaultdict(list)
    tokens: dict[tuple[str, str], list[int]] = defaultdict(list)
    caps: dict[tuple[str, str], list[int | None]] = defaultdict(list)
    for row in rows:
        key = (str(row["role"]), str(row["model"]))
        seen = runs[key]
        if not seen or seen[-1] != row["run_id"]:
            if len(seen) == RECENT_RUNS:
                continue
            seen.append(str(row["run_id"]))
        tokens[key].append(int(row["completion_tokens"]))
        asked = row["asked"]
        caps[key].append(asked if isinstance(asked, int) and not isinstance(asked, bool)
                         else None)
    return CompletionHistory({key: Learned(tuple(values), len(runs[key]), tuple(caps[key]))
                              for key, values in tokens.items()})
