"""Scores in the record: ``ScoreRecord`` rows, their JSON round-trip and checked shape,
``RunRecord.scores`` (absent from the JSON when empty, so unscored runs read and write
as before), the judge's CallRecord keeping its messages and output, and the builder
folding ``ScoreRecorded`` events."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from pydantic import ValidationError

from swarmkit.engine.recordbuilder import RunRecordBuilder
from swarmkit.errors import RecordError
from swarmkit.record.events import RunFinished, RunStarted, ScoreRecorded
from swarmkit.record.rows import CallRecord, ScoreRecord
from swarmkit.record.runrecord import RunRecord
from swarmkit.record.usage import Usage

CHECK = ScoreRecord("contains('Paris')", 1.0, "found 'Paris'", "check")
JUDGE = ScoreRecord("judge", 0.7, "clear but short", "judge", step="judge-0")
FAILED = ScoreRecord("judge", None, None, "judge", error="the judge's reply held no score",
                     step="judge-0")


def test_a_score_round_trips_through_its_dict() -> None:
    for score in (CHECK, JUDGE, FAILED):
        assert ScoreRecord.from_dict(json.loads(json.dumps(score.to_dict()))) == score
    assert CHECK.passed and not JUDGE.passed and not FAILED.passed
    assert JUDGE.to_dict() == {"name": "judge", "score": 0.7, "reason": "clear but short",
                               "kind": "judge", "error": None, "step": "judge-0"}


@pytest.mark.parametrize("bad", [
    {"score": 1.5}, {"score": -0.1}, {"score": "1"}, {"score": True}, {"kind": "vibe"},
    {"name": 3}, {"reason": ["x"]},
])
def test_a_score_read_back_is_checked_field_by_field(bad: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        ScoreRecord.from_dict({**CHECK.to_dict(), **bad})


def test_an_integer_score_reads_as_a_float() -> None:
    assert ScoreRecord.from_dict({**CHECK.to_dict(), "score": 1}).score == 1.0


def _run(**fields: object) -> RunRecord:
    return RunRecord("r1", "a task", config={"worker": {"model": "m"}}, status="completed",
                     answer="Paris", **fields)  # type: ignore[arg-type]


def test_an_unscored_run_has_no_scores_key_in_its_json() -> None:
    run = _run()
    assert "scores" not in run.to_dict()
    assert "scores" not in "".join(run.json_parts())
    assert RunRecord.from_json(run.to_json()).scores == ()


def test_scores_round_trip_through_run_json_in_order() -> None:
    run = _run(scores=(CHECK, JUDGE, FAILED))
    data = run.to_dict()
    assert [s["name"] for s in data["scores"]] == ["contains('Paris')", "judge", "judge"]
    again = RunRecord.from_json(run.to_json())
    assert again.scores == (CHECK, JUDGE, FAILED) and again == run
    assert "".join(run.json_parts()) == run.to_json(indent=None)


def test_a_garbled_score_in_run_json_is_one_line_naming_the_field() -> None:
    data = _run(scores=(CHECK,)).to_dict()
    data["scores"][0]["score"] = 3
    with pytest.raises(RecordError) as caught:
        RunRecord.from_dict(data, "run.json")
    assert "scores[0].score" in str(caught.value) and "\n" not in str(caught.value)


def _call(**fields: object) -> CallRecord:
    return CallRecord(step="judge-0", role="judge", model="m", source="live",
                      usage=Usage(10, 5, requests=1), cost_usd=Decimal("0.001"), started=1.0,
                      latency=0.2, attempts=1, fingerprint="f" * 64,
                      **fields)  # type: ignore[arg-type]


def test_a_call_keeps_messages_and_output_only_when_given() -> None:
    plain = _call()
    assert "messages" not in plain.to_dict() and "output" not in plain.to_dict()
    kept = _call(messages=({"role": "user", "content": "score this"},),
                 output='{"score": 7, "reason": "ok"}')
    data = json.loads(json.dumps(kept.to_dict()))
    assert data["messages"] == [{"role": "user", "content": "score this"}]
    assert CallRecord.from_dict(data) == kept
    with pytest.raises(ValidationError):
        CallRecord.from_dict({**data, "messages": "score this"})


def test_the_builder_folds_score_events_into_the_record() -> None:
    builder = RunRecordBuilder()
    builder.on_event(RunStarted("r1", "a task", {}, "2026-01-01T00:00:00+00:00"))
    builder.on_event(ScoreRecorded(CHECK, t=1.0))
    builder.on_event(ScoreRecorded(JUDGE, t=1.5))
    builder.on_event(RunFinished("completed", "Paris", None, duration=2.0, t=2.0))
    assert builder.run is not None
    assert builder.run.scores == (CHECK, JUDGE)
