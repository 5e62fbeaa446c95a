"""What a script sees when something goes wrong: an error out of ``run_sync`` is the
error alone, and a sink that raises is logged once with its traceback, not per event."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

import swarmkit
from swarmkit.errors import ConfigError
from swarmkit.record.events import Event
from swarmkit.testing import FakeServer
from tests.support.fakekey import run_options

pytestmark = pytest.mark.usefixtures("fake_key")


def test_an_error_from_run_sync_in_a_script_is_not_chained_to_a_loop_lookup() -> None:
    with pytest.raises(ConfigError, match="workers must be at least 1, got 0") as caught:
        swarmkit.run_sync("x", workers=0, model="gpt-4.1-mini")
    # No "During handling of the above exception" (RuntimeError: no running event loop).
    assert caught.value.__context__ is None
    assert caught.value.__cause__ is None


class Broken:
    def __init__(self) -> None:
        self.events = 0

    def on_event(self, event: Event) -> None:
        self.events += 1
        raise ValueError("this sink is broken")

    def __repr__(self) -> str:
        return "<Broken sink>"


def test_a_sink_that_raises_on_every_event_logs_its_traceback_once_then_counts(
    tmp_path: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    sink = Broken()
    with FakeServer(plan_tasks=3) as server, caplog.at_level(logging.ERROR, "swarmkit"):
        run = swarmkit.run_sync("task", sinks=[sink], **run_options(
            server, history_path=str(tmp_path / "h.db")))
    assert run.status == "completed" and len(run.workers) == 3
    assert sink.events > 10  # every event reached it
    mine = [r for r in caplog.records if "<Broken sink>" in r.getMessage()]
    tracebacks = [r for r in mine if r.exc_info]
    assert len(tracebacks) == 1
    assert "failed on run_started" in tracebacks[0].getMessage()
    text = caplog.text
    assert text.count("Traceback") == 1
    assert "During handling of the above exception" not in text
    repeats = [r for r in mine if not r.exc_info]
    assert [r.getMessage() for r in repeats] == [
        f"swarmkit sink <Broken sink> failed on {sink.events - 1} more events of this run "
        "(the first traceback is above)"]
