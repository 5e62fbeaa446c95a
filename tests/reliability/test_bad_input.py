"""Bad input of every kind ends in one clear line, before any model call is made.

Options through ``swarmkit.run_sync`` (ConfigError) and through ``%%swarm`` in a real
IPython shell (UsageError); cassettes that cannot be replayed; a corrupt history file.
"""

from __future__ import annotations

import json
import logging
import math
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

import swarmkit
from swarmkit.errors import CassetteError, ConfigError, StoreError
from swarmkit.store import History
from swarmkit.testing import FakeServer
from tests.support.fakekey import Options, swarm_line


def _one_line(message: str) -> None:
    assert message and "\n" not in message and len(message) < 400
    assert "Traceback" not in message


BAD_OPTIONS = [
    ({"wrokers": 3}, "unknown option 'wrokers'"),
    ({"workers": 0}, "workers must be at least 1"),
    ({"workers": "many"}, "must be a whole number, got 'many'"),
    ({"workers": 3.5}, "must be a whole number, got 3.5"),
    ({"concurrency": -1}, "concurrency must be at least 1"),
    ({"budget": "lots"}, "budget must be a USD amount"),
    ({"budget": -1}, "budget must be a positive USD amount"),
    ({"budget": math.nan}, "budget must be a finite USD amount"),
    ({"temperature": 5}, "temperature must be between 0 and 2"),
    ({"temperature": "hot"}, "temperature has a bad value 'hot'"),
    ({"max_tokens": 0}, "max_tokens must be at least 1"),
    ({"max_tokens": True}, "max_tokens must be a whole number, got True"),
    ({"call_timeout": "soon"}, "call_timeout must be a number"),
    ({"call_timeout": 0}, "call_timeout must be a positive number of seconds"),
    ({"call_timeout": -1}, "call_timeout must be a positive number of seconds"),
    ({"call_timeout": math.nan}, "call_timeout must be a positive number of seconds"),
    ({"run_timeout": 0}, "run_timeout must be a positive number of seconds"),
    ({"max_attempts": 0}, "max_attempts must be at least 1"),
    ({"backoff_base": -1}, "backoff_base must be 0 or more seconds"),
    ({"api_key_env": ""}, "api_key_env needs at least one variable name"),
    ({"api_key_env": " , "}, "api_key_env needs at least one variable name"),
    ({"model": ""}, "model must be a non-empty string"),
    ({"base_url": 123}, "base_url must be a non-empty string"),
    ({"base_url": "not a url"}, "base_url must be an http:// or https:// URL"),
    ({"base_url": "ftp://example.org/v1"}, "base_url must be an http:// or https:// URL"),
    ({"cache": "maybe"}, "cache must be true or false"),
    ({"record": "a.json", "replay": "b.json"}, "use either record or replay"),
    ({"history_path": 123}, "history_path must be a file path"),
    ({"system_prompt": 5}, "system_prompt must be text"),
    ({"planner_prompt": 'Answer {"tasks": [...]}'}, "planner_prompt may only use"),
    ({"prices": [("m", "x", "1")]}, "input price of m must be a USD amount"),
    ({"rpm": 0}, "rpm must be positive"),
    ({"seed": "x"}, "seed must be a whole number"),
    ({"model": "my-finetune", "budget": 1}, "no price known for model 'my-finetune'"),
    ({"worker_model": "my-finetune", "budget": 1}, "no price known for model 'my-finetune'"),
]


@pytest.mark.parametrize(("bad", "says"), BAD_OPTIONS, ids=[str(b) for b, _ in BAD_OPTIONS])
def test_bad_option_is_a_one_line_config_error_before_any_call(
    bad: dict[str, Any], says: str, fresh: FakeServer, options: Options
) -> None:
    with pytest.raises(ConfigError) as error:
        swarmkit.run_sync("task", **{**options(fresh), **bad})
    assert says in str(error.value)
    _one_line(str(error.value))
    assert fresh.count() == 0


# -- the magic -------------------------------------------------------------------------


_line = partial(swarm_line, flags="--workers 3")


BAD_FLAGS = [
    ("--workers many", "must be a whole number, got 'many'"),
    ("--workers 0", "workers must be at least 1"),
    ("--concurrency -2", "concurrency must be at least 1"),
    ("--budget lots", "budget must be a USD amount"),
    ("--budget 0.5 --model no-such-model", "no price known for model 'no-such-model'"),
    ("--temperature hot", "temperature has a bad value 'hot'"),
    ("--max-tokens 1.5", "--max-tokens must be a whole number"),
    ("--run-timeout 0", "--run-timeout must be a positive number of seconds"),
    ("--run-timeout soon", "--run-timeout must be a number"),
    ("--rpm -5", "rpm must be positive"),
    ("--base-url localhost:8000", "--base-url must be an http:// or https:// URL"),
    ("--replay a.json --record b.json", "use either record or replay"),
    ("--wrokers 3", "unknown option --wrokers (did you mean --workers?)"),
]


@pytest.mark.parametrize(("extra", "says"), BAD_FLAGS, ids=[e for e, _ in BAD_FLAGS])
def test_bad_magic_option_is_a_one_line_usage_error_before_any_call(
    extra: str, says: str, shell: InteractiveShell, fresh: FakeServer
) -> None:
    with pytest.raises(UsageError) as error:
        shell.run_cell_magic("swarm", _line(fresh, extra), "task")
    message = str(error.value)
    assert message.startswith("%%swarm: ") and says in message
    _one_line(message)
    assert fresh.count() == 0


# -- cassettes -------------------------------------------------------------------------


def _recorded(server: FakeServer, options: Options, path: Path) -> dict[str, Any]:
    swarmkit.run_sync("task", **options(server, record=str(path)))
    return json.loads(path.read_text(encoding="utf-8"))


def _cassettes(tmp: Path, good: dict[str, Any]) -> dict[str, tuple[Path, str]]:
    def write(name: str, content: str | bytes) -> Path:
        path = tmp / name
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
        return path

    text = json.dumps(good, indent=2)
    newer = {**good, "swarmkit_cassette": 99, "swarmkit_version": "9.0.0"}
    no_calls = {k: v for k, v in good.items() if k != "calls"}
    bad_call = {**good, "calls": [{**good["calls"][0], "attempts": "many"}]}
    return {
        "missing": (tmp / "nowhere.swarm.json", "not found"),
        "truncated": (write("cut.json", text[: len(text) // 2]), "is not JSON (line"),
        "binary": (write("bin.json", b"\x89PNG\r\n\x1a\n\x00\xff\xfe"), "is not JSON text"),
        "not-a-cassette": (write("other.json", '{"hello": 1}'), "is not a swarmkit cassette"),
        "newer-version": (write("newer.json", json.dumps(newer)),
                          "has format 99 (written by swarmkit 9.0.0), newer than"),
        "no-calls": (write("nocalls.json", json.dumps(no_calls)), "is garbled"),
        "bad-call": (write("badcall.json", json.dumps(bad_call)), "is garbled: calls[0]"),
        "a-folder": (tmp, "cannot read cassette"),
    }


def test_unreadable_cassettes_are_one_line_errors_with_no_network(
    tmp_path: Path, fresh: FakeServer, options: Options, shell: InteractiveShell
) -> None:
    good = _recorded(fresh, options, tmp_path / "good.swarm.json")
    fresh.clear()
    for name, (path, says) in _cassettes(tmp_path, good).items():
        with pytest.raises(CassetteError) as error:
            swarmkit.run_sync("task", **options(fresh, replay=str(path)))
        assert says in str(error.value), name
        _one_line(str(error.value))
        with pytest.raises(UsageError) as usage:
            shell.run_cell_magic("swarm", _line(fresh, f"--replay {path}"), "task")
        assert says in str(usage.value), name
        _one_line(str(usage.value))
    assert fresh.count() == 0  # replay never reaches the network, even when it fails


# -- the history database -----------------------------------------------------------------


def test_corrupt_history_is_a_clear_error_offering_a_new_database(
    tmp_path: Path, fresh: FakeServer, options: Options, shell: InteractiveShell,
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
) -> None:
    path = tmp_path / "history.db"
    path.write_bytes(b"this is not a database " * 200)
    with pytest.raises(StoreError) as error:
        History(path)
    message = str(error.value)
    _one_line(message)
    assert "is corrupt" in message and f"History.reset({str(path)!r})" in message
    # A run never fails for its history: it goes ahead without it, and says so once.
    with caplog.at_level(logging.WARNING, "swarmkit"):
        kept_out = swarmkit.run_sync("task", **options(fresh, history_path=str(path)))
    assert kept_out.status == "completed" and kept_out.config["history"] is False
    said = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert said == [f"swarmkit: the history is off for this run: {message}"]
    monkeypatch.setenv("SWARMKIT_HISTORY", str(path))  # where the magic keeps its history
    with capture_output():
        shell.run_cell_magic("swarm", _line(fresh, ""), "task")
    assert shell.user_ns["_swarm"].status == "completed"
    assert path.read_bytes().startswith(b"this is not a database")  # never touched
    # Doing what the message offers: the old file is kept aside, a new one is made.
    moved = History.reset(path)
    assert moved.exists() and moved.read_bytes().startswith(b"this is not a database")
    run = swarmkit.run_sync("task", **options(fresh, history_path=str(path)))
    assert run.status == "completed"
    with History(path) as history:  # waits for the store's background writes
        assert [r.run_id for r in history.recent()] == [run.run_id]
