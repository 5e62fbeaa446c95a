"""Cassettes: the JSON format, its clear errors, atomic writes, and the key-leak refusal."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from swarmkit.config.swarmconfig import SwarmConfig
from swarmkit.credentials.secrets import find_secret, secret_values
from swarmkit.errors import CassetteError, ReplayMiss
from swarmkit.record.modelcall import ChatRequest
from swarmkit.store import Cassette, Player, RecordedCall

KEY = "sk-cassette-test-0123456789"


def recorded_call(step: str = "worker-1", content: str = "hello", **extra: Any) -> RecordedCall:
    request = ChatRequest(model="m", messages=({"role": "user", "content": f"do {step}"},))
    values: dict[str, Any] = {
        "step": step, "role": step.split("-")[0], "fingerprint": request.fingerprint(),
        "occurrence": 0, "request": request.body(),
        "response": {"content": content, "usage": {"prompt_tokens": 3,
                                                   "completion_tokens": 1}},
        "source": "live", "started": 0.5, "latency": 0.25, "attempts": 1,
        "cost_usd": Decimal("0.000012"),
    }
    values.update(extra)
    return RecordedCall(**values)


def cassette(*calls: RecordedCall) -> Cassette:
    run = {"run_id": "abc123", "started_at": "2026-01-01T00:00:00+00:00", "task": "t",
           "config": {"worker": {"model": "gpt-x"}}, "status": "completed", "duration": 1.5}
    return Cassette(run=run, calls=calls or (recorded_call(),), swarmkit_version="0.1.0")


def write(path: Path, data: Any) -> Path:
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def test_round_trip_keeps_every_figure(tmp_path: Path) -> None:
    original = cassette(recorded_call(), recorded_call("reducer", error=None,
                                                       retries=({"step": "reducer",
                                                                 "attempt": 1, "error": "429",
                                                                 "delay": 0.5, "status": 429,
                                                                 "t": 0.7},)))
    path = original.save(tmp_path / "sub" / "c.swarm.json", secrets={})
    loaded = Cassette.load(path)
    assert loaded == original
    assert loaded.calls[0].cost_usd == Decimal("0.000012")
    assert (loaded.run_id, loaded.duration) == ("abc123", 1.5)
    assert [p.name for p in path.parent.iterdir()] == ["c.swarm.json"]  # no temp left over


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", r"is not JSON \(line 1, column 2: .*re-record it"),
        ('{"swarmkit_cassette": 1, "run": {"run_id"', r"is not JSON .*truncated"),
        ("[1, 2]", r"is not a swarmkit cassette"),
        ('{"calls": []}', r"is not a swarmkit cassette"),
        ('{"swarmkit_cassette": 2, "swarmkit_version": "9.0"}',
         r"format 2 \(written by swarmkit 9.0\), newer .*upgrade swarmkit"),
        ('{"swarmkit_cassette": 0}', r"old format 0.*reads format 1.*re-record"),
        ('{"swarmkit_cassette": "1"}', r"garbled: 'swarmkit_cassette' is '1'"),
        ('{"swarmkit_cassette": 1, "run": [], "calls": []}',
         r"garbled: run: Input should be a JSON object"),
        ('{"swarmkit_cassette": 1, "run": {"run_id": "a", "started_at": "s", "task": "t"},'
         ' "calls": []}', r"garbled: run.duration: missing"),
    ],
)
def test_unreadable_cassettes_give_one_line_errors(
    tmp_path: Path, content: str, message: str
) -> None:
    with pytest.raises(CassetteError, match=message) as caught:
        Cassette.load(write(tmp_path / "bad.json", content))
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda c: c.update(response=None), r"calls\[0\] has neither a response nor an error"),
        (lambda c: c.pop("response"), r"calls\[0\].response: missing"),
        (lambda c: c.update(occurrence=True), r"calls\[0\].occurrence: .*integer \(got True\)"),
        (lambda c: c.update(latency="fast"), r"calls\[0\].latency: .*number \(got 'fast'\)"),
        (lambda c: c.update(cost_usd="lots"), r"calls\[0\].cost_usd: .*decimal string"),
        (lambda c: c.update(retries=[{"step": "x"}]),
         r"calls\[0\].retries\[0\].attempt: missing \(and 4 more problems\)"),
        (lambda c: c.update(request="hi"), r"calls\[0\].request: .*JSON object \(got 'hi'\)"),
    ],
)
def test_garbled_entries_name_where(tmp_path: Path, damage: Any, message: str) -> None:
    data = cassette().to_dict()
    damage(data["calls"][0])
    with pytest.raises(CassetteError, match=f"garbled: {message}"):
        Cassette.load(write(tmp_path / "bad.json", data))


def test_missing_and_binary_files(tmp_path: Path) -> None:
    with pytest.raises(CassetteError, match="not found; record one with --record"):
        Cassette.load(tmp_path / "nope.json")
    (tmp_path / "bin.json").write_bytes(b"\x80\x81\xff\x00")
    with pytest.raises(CassetteError, match="binary data"):
        Cassette.load(tmp_path / "bin.json")
    with pytest.raises(CassetteError, match="cannot read cassette"):
        Cassette.load(tmp_path)


def test_save_refuses_a_key_value_and_writes_nothing(tmp_path: Path) -> None:
    leaky = cassette(recorded_call(content=f"the key is {KEY}"))
    secrets = secret_values(SwarmConfig.from_options(api_key_env="MY_KEY", env={}),
                            {"MY_KEY": KEY})
    with pytest.raises(CassetteError, match=r"would contain the value of \$MY_KEY"):
        leaky.save(tmp_path / "c.json", secrets)
    assert list(tmp_path.iterdir()) == []
    assert KEY not in str(secrets.keys())


def test_secret_scan_ignores_placeholders_and_finds_escaped_values() -> None:
    config = SwarmConfig.from_options(api_key_env="A,B", env={})
    secrets = secret_values(config, {"A": "test", "B": 'sk-"quoted"-value', "C": KEY})
    assert secrets == {"B": 'sk-"quoted"-value'}  # short placeholders and unnamed vars: no
    assert find_secret(json.dumps({"x": 'sk-"quoted"-value'}), secrets) == "$B"
    assert find_secret("nothing here", secrets) is None


def test_resolve_config_pins_auto_and_local_models_to_the_recording() -> None:
    config = SwarmConfig.from_options(env={}, planner_model="local", reducer_model="mine")
    resolved = cassette().resolve_config(config)
    assert resolved.worker.model == "gpt-x"
    assert resolved.planner.model == "local"  # not recorded: left alone
    assert resolved.reducer.model == "mine"  # chosen explicitly: left alone


def test_player_falls_back_to_another_occurrence_then_misses_clearly() -> None:
    first = recorded_call(content="one")
    second = recorded_call(content="two", occurrence=1)
    player = Player(cassette(first, second))
    request = ChatRequest(model="m", messages=({"role": "user", "content": "do worker-1"},))
    assert player.call(request, step="worker-1", occurrence=1).chat_response().content == "two"
    # occurrence 5 was never recorded: the unused recording of the same request serves
    assert player.call(request, step="worker-1", occurrence=5).chat_response().content == "one"
    changed = ChatRequest(model="m", messages=({"role": "user", "content": "do worker-1!"},))
    with pytest.raises(ReplayMiss) as caught:
        player.call(changed, step="worker-1", occurrence=0)
    text = str(caught.value)
    assert text.startswith("replay miss at worker-1: this request is not in cassette")
    assert "closest recorded is worker-1 #0" in text
    assert "messages[0].content: recorded 'do worker-1' vs now 'do worker-1!'" in text
