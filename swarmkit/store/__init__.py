"""The call store: response cache, record/replay cassettes and the SQLite run history.

    store = CallStore.from_config(config, env=os.environ, provider_factory=...)
    History().recent(10); History().load_run("3f2a"); History.reset(path)
    Cassette.load("run.swarm.json")

``swarmkit.api.create_engine`` builds the store from ``SwarmConfig`` (``cache``,
``record``, ``replay``, ``history``, ``history_path``, ``refresh``).
"""

from __future__ import annotations

from .cache import ResponseCache
from .callstore import CallStore
from .cassette import CASSETTE_FORMAT, Cassette, RecordedCall, RecordedTool
from .cassettebuilder import CassetteBuilder
from .database import Database, reset_database
from .history import History, HistorySink, RunSummary, default_history_path
from .recent import recent_recording, remember_recording
from .replay import Player, first_difference
from .rerun import rerun_config

__all__ = [
    "CASSETTE_FORMAT",
    "CallStore",
    "Cassette",
    "CassetteBuilder",
    "Database",
    "History",
    "HistorySink",
    "Player",
    "RecordedCall",
    "RecordedTool",
    "ResponseCache",
    "RunSummary",
    "default_history_path",
    "first_difference",
    "recent_recording",
    "remember_recording",
    "rerun_config",
    "reset_database",
]
