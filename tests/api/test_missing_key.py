"""A missing key is a refusal, like a bad option: one line, nothing sent, and no run in
the history (it used to be kept as a ``failed`` run whose error called it a bug)."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest

import swarmkit
from swarmkit.errors import ConfigError
from swarmkit.store.writethread import wait_for_writes

ROOT = Path(__file__).resolve().parents[2]


def runs_in(history: Path) -> list[tuple[str, str]]:
    wait_for_writes()  # what the history's write thread had queued is in the file
    if not history.exists():
        return []
    with closing(sqlite3.connect(history)) as db, db:
        return db.execute("SELECT run_id, status FROM runs").fetchall()


def test_run_sync_without_the_key_refuses_and_keeps_no_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    history = tmp_path / "history.db"
    with pytest.raises(ConfigError, match=r"^OPENAI_API_KEY is not set; export it") as caught:
        swarmkit.run_sync("Key check", model="gpt-4.1-mini", history_path=str(history))
    assert "bug" not in str(caught.value)
    assert runs_in(history) == []


def test_a_judge_without_its_key_is_refused_before_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-used-0123456789")
    monkeypatch.delenv("JUDGE_KEY", raising=False)
    history = tmp_path / "history.db"
    with pytest.raises(ConfigError, match=r"^JUDGE_KEY is not set"):
        swarmkit.run_sync("Key check", model="gpt-4.1-mini", judge="gpt-4.1",
                          judge_api_key_env="JUDGE_KEY", history_path=str(history))
    assert runs_in(history) == []


def test_jswarm_run_without_the_key_is_one_line_exit_2_and_no_history(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    env.update(PYTHONPATH=str(ROOT), SWARMKIT_HISTORY=str(tmp_path / "history.db"))
    done = subprocess.run([sys.executable, "-m", "swarmkit", "run", "Key check", "--model",
                           "gpt-4.1-mini"], capture_output=True, text=True, timeout=120,
                          env=env, cwd=tmp_path, check=False)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "jswarm: ConfigError: OPENAI_API_KEY is not set; export it or pass "
        "api_key_env=/--api-key-env naming the variable that holds your key"]
    assert runs_in(tmp_path / "history.db") == []
