"""Checks (``swarmkit.Check``): each built-in passing and failing, a user's check by its
name, a check that raises (a failed score, never a crashed run), what a check takes
from its first parameter, and the engine running them after the reducer against
FakeServer, their scores in the Run, its JSON and the history."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pydantic
import pytest

import swarmkit
from swarmkit import Check
from swarmkit.config.outputschema import canonical_schema
from swarmkit.engine.ladder import forget_rungs
from swarmkit.engine.scoring import CheckInput, score_checks
from swarmkit.errors import ConfigError
from swarmkit.record.rows import ScoreRecord
from swarmkit.testing import FakeReply, FakeRequest, FakeServer

KEY_ENV = "SWARMKIT_TEST_KEY"
ANSWER = "The capital of France is Paris."


class City(pydantic.BaseModel):
    city: str


@pytest.fixture(autouse=True)
def _fresh(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv(KEY_ENV, "sk-test-scoring-0000")
    forget_rungs()
    yield
    forget_rungs()


def options(server: FakeServer, **extra: Any) -> dict[str, Any]:
    return {"model": "gpt-4.1-mini", "base_url": server.base_url, "api_key_env": KEY_ENV,
            "backoff_base": 0.001, "backoff_max": 0.05, **extra}


def script(answer: str = ANSWER) -> Any:
    def reply(request: FakeRequest) -> FakeReply | None:
        if request.step == "planner":
            tasks = ["find the country", "find its capital"]
            return FakeReply(content=json.dumps({"tasks": tasks}))
        if request.step == "reducer":
            return FakeReply(content=answer)
        return None  # workers: "Result for: ..."
    return reply


def view(answer: str | None = ANSWER, **fields: Any) -> CheckInput:
    values: dict[str, Any] = {"outputs": ("Paris", "France"), "cost_usd": Decimal("0.002"),
                              "seconds": 1.5, **fields}
    return CheckInput(answer, **values)


def scored(check: Check, given: CheckInput | None = None, reduced: bool = True) -> ScoreRecord:
    return asyncio.run(score_checks([check], given or view(), reduced=reduced))[0]


@pytest.mark.parametrize(("check", "passes", "fails", "name"), [
    (Check.contains("Paris"), view(), view("Lyon"), "contains('Paris')"),
    (Check.not_contains("Lyon"), view(), view("Lyon is not it"), "not_contains('Lyon')"),
    (Check.regex(r"capital of \w+"), view(), view("no capital here"),
     "regex('capital of \\\\w+')"),
    (Check.valid_json(), view('```json\n{"city": "Paris"}\n```'), view(), "valid_json()"),
    (Check.max_length(40), view(), view("x" * 41), "max_length(40)"),
    (Check.max_cost("0.01"), view(), view(cost_usd=Decimal("0.02")), "max_cost('0.01')"),
    (Check.max_latency(2), view(), view(seconds=2.5), "max_latency(2)"),
])
def test_each_builtin_passes_and_fails(check: Check, passes: CheckInput, fails: CheckInput,
                                       name: str) -> None:
    good, bad = scored(check, passes), scored(check, fails)
    assert (good.score, bad.score) == (1.0, 0.0)
    assert good.name == bad.name == check.name == name
    assert good.kind == "check" and good.error is None and good.reason
    assert bad.reason and "\n" not in bad.reason
    # The expression rebuilds an equal check, under the same name.
    rebuilt = eval(check.source(), {"Check": Check})
    assert rebuilt.name == check.name and rebuilt.on == check.on


def test_matches_schema_checks_the_runs_schema() -> None:
    schema = canonical_schema(City)
    check = Check.matches_schema()
    assert scored(check, view('{"city": "Paris"}', output_schema=schema)).score == 1.0
    bad = scored(check, view('{"town": "Paris"}', output_schema=schema))
    assert bad.score == 0.0 and "city" in (bad.reason or "")
    # Without a reducer: the share of worker outputs that match.
    half = scored(check, view(None, outputs=('{"city": "Paris"}', "Paris"),
                              output_schema=schema))
    assert half.score == 0.5
    # Without a --schema it cannot check: its error says what it needs.
    missing = scored(check, view('{"city": "Paris"}'))
    assert missing.score == 0.0 and "--schema" in (missing.error or "")


def test_unknown_cost_fails_max_cost_with_a_reason() -> None:
    result = scored(Check.max_cost(1), view(cost_usd=None))
    assert result.score == 0.0 and "unknown" in (result.reason or "")


def test_what_a_check_takes_comes_from_its_first_parameter() -> None:
    def short(answer: str) -> bool:
        return len(answer) < 100

    def mentions(output: str) -> float:
        return 1.0 if "Paris" in output else 0.0

    def cheap(run: CheckInput) -> tuple[bool, str]:
        return run.cost_usd is not None and run.cost_usd < 1, "under a dollar"

    assert (Check.of(short).on, Check.of(mentions).on, Check.of(cheap).on) == (
        "answer", "workers", "run")
    assert Check.of(short).name == "short" and Check(short, name="brief").name == "brief"
    assert scored(Check.of(mentions)) == ScoreRecord("mentions", 0.5, "1 of 2 outputs passed",
                                                     "check")
    assert scored(Check.of(cheap)).reason == "under a dollar"
    with pytest.raises(ConfigError, match="name it answer, output or run"):
        Check.of(lambda text: True)
    assert Check(lambda text: True, on="answer").on == "answer"


def test_a_check_that_raises_or_returns_nonsense_is_a_failed_score() -> None:
    def explodes(answer: str) -> bool:
        raise RuntimeError("boom\nsecond line")

    def wrong(answer: str) -> Any:
        return "yes"

    failed = scored(Check.of(explodes))
    assert failed == ScoreRecord("explodes", 0.0, None, "check",
                                 error="RuntimeError: boom second line")
    nonsense = scored(Check.of(wrong))
    assert nonsense.score == 0.0 and "return True/False" in (nonsense.error or "")
    too_big = scored(Check(lambda answer: 1.5, name="big"))
    assert too_big.score == 0.0 and "1.5" in (too_big.error or "")


def test_an_async_check_is_awaited() -> None:
    async def later(answer: str) -> tuple[float, str]:
        await asyncio.sleep(0)
        return 0.25, "a quarter"

    assert scored(Check.of(later)) == ScoreRecord("later", 0.25, "a quarter", "check")


def test_a_bad_regex_is_refused_when_the_check_is_made() -> None:
    with pytest.raises(ConfigError, match="not a regular expression"):
        Check.regex("(")


def test_the_engine_scores_the_answer_after_the_reducer() -> None:
    def raises(answer: str) -> bool:
        raise ValueError("no luck")

    def words(answer: str) -> tuple[float, str]:
        return min(1.0, len(answer.split()) / 10), f"{len(answer.split())} words"

    checks = [Check.contains("Paris"), Check.not_contains("Paris"), words, raises,
              Check.max_cost(1), Check.max_latency(60)]
    events: list[Any] = []

    class Sink:
        def on_event(self, event: Any) -> None:
            events.append(event)

    with FakeServer(script()) as server:
        run = swarmkit.run_sync("What is the capital of France?", checks=checks,
                                sinks=[Sink()], **options(server, prices=[
                                    ("gpt-4.1-mini", "0.4", "1.6")]))
        steps = [r.step for r in server.requests]
    assert run.status == "completed" and run.answer == ANSWER
    assert [(s.name, s.score) for s in run.scores] == [
        ("contains('Paris')", 1.0), ("not_contains('Paris')", 0.0), ("words", 0.6),
        ("raises", 0.0), ("max_cost(1)", 1.0), ("max_latency(60)", 1.0)]
    assert run.scores[3].error == "ValueError: no luck"
    assert "judge-0" not in steps  # no judge unless judge= is set
    # One event per check, after the reducer's call and before the run's end.
    kinds = [e.kind for e in events]
    first = kinds.index("score_recorded")
    assert kinds.count("score_recorded") == len(checks)
    assert kinds[first:first + len(checks)] == ["score_recorded"] * len(checks)
    assert kinds[-1] == "run_finished"
    assert max(i for i, e in enumerate(events)
               if e.kind == "call_finished" and e.call.step == "reducer") < first
    # The scores are in the Run's JSON and come back from the history.
    assert swarmkit.RunRecord.from_json(run.to_json()).scores == run.scores
    assert swarmkit.load_run(run.run_id).scores == run.scores


def test_without_a_reducer_answer_checks_score_each_output_averaged() -> None:
    with FakeServer(script()) as server:
        run = swarmkit.run_sync("What is the capital of France?", reduce=False,
                                checks=[Check.contains("country")], **options(server))
    assert run.answer is None
    (score,) = run.scores
    # The worker of "find the country" echoes it, the worker of "find its capital" not.
    assert score.score == 0.5 and score.reason == "1 of 2 outputs passed"


def test_a_failed_run_is_not_scored() -> None:
    def fail(request: FakeRequest) -> FakeReply | None:
        return FakeReply(content="not a plan at all") if request.step == "planner" else None

    with FakeServer(fail) as server:
        run = swarmkit.run_sync("What is the capital of France?",
                                checks=[Check.contains("Paris")], **options(server))
    assert run.status == "failed" and run.scores == ()
    assert "scores" not in run.to_dict()


def test_a_replay_scores_exactly_as_the_recording_did(tmp_path: Path) -> None:
    cassette = tmp_path / "scored.swarm.json"
    checks = [Check.max_latency(30), Check.max_cost("0.5"), Check.contains("Paris")]
    with FakeServer(script(), latency=0.01) as server:
        recorded = swarmkit.run_sync("What is the capital of France?", checks=checks,
                                     record=str(cassette), **options(server, prices=[
                                         ("gpt-4.1-mini", "0.4", "1.6")]))
    # No server: the figures a check reads (latency, cost) come from the recording.
    replayed = swarmkit.run_sync("What is the capital of France?", checks=checks,
                                 replay=str(cassette), model="gpt-4.1-mini",
                                 api_key_env=KEY_ENV, prices=[("gpt-4.1-mini", "0.4", "1.6")])
    assert [s.score for s in recorded.scores] == [1.0, 1.0, 1.0]
    assert replayed.scores == recorded.scores  # the reasons' seconds and dollars too
