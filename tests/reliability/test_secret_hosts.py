"""A history or cassette from somewhere else never sends the user's key where it says.

The stored run is edited the way a hostile file would be (its endpoint or its key
variable changed), then ``%swarm rerun`` and ``--replay`` are driven in a real shell. A
second FakeServer, the "stranger", records every Authorization header it receives.
"""

from __future__ import annotations

import base64
import itertools
import json
import secrets
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import ExitStack, closing
from pathlib import Path
from typing import Any

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

from swarmkit.api.result import Run
from swarmkit.credentials.endpoints import used_endpoint
from swarmkit.errors import StoreError
from swarmkit.magics import SwarmMagics
from swarmkit.store import History, rerun_config
from swarmkit.store.writethread import wait_for_writes
from swarmkit.testing import FakeRequest, FakeServer
from tests.support.fakekey import swarm_line

KEY_ENV = "SWARMKIT_HOSTS_KEY"
TASK = "Name three rivers"


@pytest.fixture
def key(monkeypatch: pytest.MonkeyPatch) -> str:
    value = f"sk-hosts-{secrets.token_hex(20)}"
    monkeypatch.setenv(KEY_ENV, value)
    return value


@pytest.fixture
def history(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "history.db"
    monkeypatch.setenv("SWARMKIT_HISTORY", str(path))
    return path


@pytest.fixture
def home() -> Iterator[FakeServer]:
    drafts = itertools.count(1)

    def handler(request: FakeRequest) -> str | None:  # a new draft each time: the reducer
        return f"draft {next(drafts)}" if request.step.startswith("worker") else None

    with FakeServer(handler, lifetime=60) as server:
        yield server


@pytest.fixture
def stranger() -> Iterator[FakeServer]:
    # The process remembers every endpoint it has used, by port; the OS may hand this
    # server a port an earlier test's server had, which would make it no stranger.
    with ExitStack() as stack:
        for _ in range(20):
            server = stack.enter_context(FakeServer(lifetime=60))
            if used_endpoint(server.base_url) is None:
                break
        else:
            pytest.fail("every new server's port was one this process had used")
        yield server


def first_run(shell: InteractiveShell, base_url: str) -> Run:
    with capture_output():
        shell.run_cell_magic(
            "swarm", swarm_line(base_url, "--workers 2 --out first", key_env=KEY_ENV), TASK)
    run = shell.user_ns["first"]
    assert isinstance(run, Run) and run.status == "completed"
    return run


def tamper(history: Path, run_id: str, change: Callable[[dict[str, Any]], None]) -> None:
    """Edit the stored run's config, as a history file from elsewhere may hold it."""
    wait_for_writes(history)  # the history is written in the background
    with closing(sqlite3.connect(history)) as db, db:
        (text,) = db.execute("SELECT run_json FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        data = json.loads(text)
        for role in ("planner", "worker", "reducer"):
            change(data["config"][role])
        db.execute("UPDATE runs SET run_json = ?, config = ? WHERE run_id = ?",
                   (json.dumps(data), json.dumps(data["config"]), run_id))
    db.close()


def rerun(shell: InteractiveShell, line: str) -> str:
    with capture_output() as captured:
        shell.run_line_magic("swarm", f"rerun {line}")
    return captured.stdout


def test_rerun_refuses_an_endpoint_the_session_has_not_used_until_one_is_named(
    shell: InteractiveShell, magics: SwarmMagics, history: Path, key: str,
    home: FakeServer, stranger: FakeServer,
) -> None:
    run = first_run(shell, home.base_url)
    tamper(history, run.run_id,
           lambda role: role.update(base_url=stranger.base_url))
    home.clear()

    with pytest.raises(UsageError) as refused:
        rerun(shell, f"{run.run_id} --worker 1")
    message = str(refused.value)
    assert "\n" not in message and stranger.base_url in message  # shows the endpoint
    assert "has not used" in message and "--base-url" in message  # and says what to do
    assert stranger.count() == 0 and home.count() == 0  # nothing sent anywhere
    with History(history) as stored, pytest.raises(StoreError, match="has not used"):
        rerun_config(stored.load_run(run.run_id), 1)  # the same rule from Python

    shown = rerun(shell, f"{run.run_id} --worker 1 --base-url {home.base_url}")
    assert f"worker: {home.base_url} (${KEY_ENV})" in shown  # the endpoint, before the calls
    assert home.counts_by_step() == {"worker-1": 1, "reducer": 1}
    assert stranger.count() == 0

    shown = rerun(shell, f"{run.run_id} --worker 2 --base-url {stranger.base_url}")
    assert f"worker: {stranger.base_url}" in shown  # named by the user, so it wins
    assert {r.authorization for r in stranger.requests} == {f"Bearer {key}"}


def test_rerun_refuses_a_key_variable_the_session_has_not_used(
    shell: InteractiveShell, magics: SwarmMagics, history: Path, key: str,
    home: FakeServer, monkeypatch: pytest.MonkeyPatch,
) -> None:
    other = f"aws-{secrets.token_hex(20)}"
    monkeypatch.setenv("SWARMKIT_HOSTS_OTHER_SECRET", other)
    run = first_run(shell, home.base_url)
    tamper(history, run.run_id,
           lambda role: role.update(api_key_env=["SWARMKIT_HOSTS_OTHER_SECRET"]))
    home.clear()

    with pytest.raises(UsageError, match=r"\$SWARMKIT_HOSTS_OTHER_SECRET, which this "
                                         r"session has not used as a key; pass --api-key-env"):
        rerun(shell, f"{run.run_id} --worker 1")
    assert home.count() == 0

    rerun(shell, f"{run.run_id} --worker 1 --api-key-env {KEY_ENV}")
    assert {r.authorization for r in home.requests} == {f"Bearer {key}"}


def test_rerun_through_a_gateway_sends_the_session_credentials_not_the_mask(
    shell: InteractiveShell, magics: SwarmMagics, history: Path, key: str, home: FakeServer,
) -> None:
    password = f"gw-{secrets.token_hex(16)}"
    url = home.base_url.replace("http://", f"http://gateway:{password}@")
    run = first_run(shell, url)
    assert run.config["worker"]["base_url"] == home.base_url.replace("http://", "http://***@")
    home.clear()

    shown = rerun(shell, f"{run.run_id} --worker 1")
    assert home.count() == 2 and password not in shown and "***@" in shown
    real = base64.b64encode(f"gateway:{password}".encode()).decode()
    assert {r.authorization for r in home.requests} == {f"Basic {real}"}  # not "***"
    assert password.encode() not in history.read_bytes()


def test_a_cassette_naming_another_endpoint_replays_without_sending_anything(
    shell: InteractiveShell, magics: SwarmMagics, history: Path, key: str,
    home: FakeServer, stranger: FakeServer, tmp_path: Path,
) -> None:
    cassette = tmp_path / "run.swarm.json"
    with capture_output():
        shell.run_cell_magic("swarm", swarm_line(
            home, f"--workers 2 --record {cassette} --out recorded", key_env=KEY_ENV), TASK)
    text = cassette.read_text(encoding="utf-8").replace(home.base_url, stranger.base_url)
    cassette.write_text(text, encoding="utf-8")
    home.clear()
    with capture_output():
        shell.run_cell_magic("swarm", f"--model gpt-4.1-mini --workers 2 --replay {cassette} "
                             "--out replayed", TASK)
    assert shell.user_ns["replayed"].answer == shell.user_ns["recorded"].answer
    assert stranger.count() == 0 and home.count() == 0
