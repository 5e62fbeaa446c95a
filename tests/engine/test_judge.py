"""The judge (``judge=MODEL``, ``rubric=``) against FakeServer with the real openai client:
its call a role of its own (step ``judge-0``) with its prompt and reply kept, in the
spend-by-role table and the budget, cached on a re-run, recorded and replayed with no
server at all; a reply that is no score; routing it to a second server; the ladder."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from IPython.core.error import UsageError

import swarmkit
from swarmkit.config.automodel import judge_notice
from swarmkit.display.byrole import role_spend
from swarmkit.engine.judge import DEFAULT_RUBRIC, parse_verdict
from swarmkit.engine.ladder import forget_rungs
from swarmkit.errors import ConfigError
from swarmkit.magics.session import check_keys
from swarmkit.record.runrecord import RunRecord
from swarmkit.testing import FakeReply, FakeRequest, FakeServer, Fault

KEY_ENV = "SWARMKIT_TEST_KEY"
ANSWER = "The capital of France is Paris."
PRICES = [("gpt-4.1-mini", "0.4", "1.6"), ("judge-model", "2", "8")]


@pytest.fixture(autouse=True)
def _fresh(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv(KEY_ENV, "sk-test-judge-0000")
    forget_rungs()
    yield
    forget_rungs()


def options(server: FakeServer | None, **extra: Any) -> dict[str, Any]:
    base = {} if server is None else {"base_url": server.base_url}
    return {"model": "gpt-4.1-mini", "api_key_env": KEY_ENV, "backoff_base": 0.001,
            "backoff_max": 0.05, "judge": "judge-model", "prices": PRICES, **base, **extra}


class Script:
    """Two sub-tasks, the reducer's answer, and the judge's reply (``judge``)."""

    def __init__(self, judge: str | FakeReply | Fault | None = None) -> None:
        self.judge = judge

    def __call__(self, request: FakeRequest) -> FakeReply | Fault | str | None:
        if request.step == "planner":
            return FakeReply(content=json.dumps({"tasks": ["find the country",
                                                           "find its capital"]}))
        if request.step == "reducer":
            return FakeReply(content=ANSWER)
        if request.step.startswith("judge-"):
            return self.judge  # None: the default script's {"score": 8, ...}
        return None


def test_the_judge_scores_the_answer_and_its_call_keeps_prompt_and_reply() -> None:
    with FakeServer(Script()) as server:
        run = swarmkit.run_sync("What is the capital of France?",
                                **options(server, rubric="Names the right city."))
        judged = [r for r in server.requests if r.step == "judge-0"]
    assert run.status == "completed" and run.answer == ANSWER
    (score,) = run.scores
    assert (score.name, score.kind, score.step, score.score) == ("judge", "judge", "judge-0",
                                                                 0.8)
    assert score.reason == "Scripted judge: the answer addresses the task."
    # One request, at the judge's model, on the ladder's first rung, with the rubric.
    (request,) = judged
    assert request.body["model"] == "judge-model"
    assert request.body["response_format"]["type"] == "json_schema"
    assert request.body["response_format"]["json_schema"]["name"] == "judge_score"
    prompt = request.body["messages"][-1]["content"]
    assert "Names the right city." in prompt and ANSWER in prompt
    assert "What is the capital of France?" in prompt
    # The run's call of step judge-0 keeps what was sent and what came back.
    (call,) = [c for c in run.calls if c.step == "judge-0"]
    assert call.role == "judge" and call.model == "judge-model"
    assert list(call.messages or ()) == request.body["messages"]
    assert call.output is not None and json.loads(call.output)["score"] == 8
    # The other calls keep nothing extra: their JSON is as it was.
    assert all(c.messages is None and c.output is None for c in run.calls if c is not call)
    again = RunRecord.from_json(run.to_json())
    assert again.scores == run.scores and again.calls == run.calls


def test_without_a_rubric_the_default_one_is_asked() -> None:
    with FakeServer(Script()) as server:
        run = swarmkit.run_sync("What is the capital of France?", **options(server))
        (request,) = [r for r in server.requests if r.step == "judge-0"]
    assert DEFAULT_RUBRIC in request.body["messages"][-1]["content"]
    # The run reads back from its JSON and the history, its unset rubric and all.
    assert run.config["rubric"] is None
    assert RunRecord.from_json(run.to_json()).scores == run.scores
    assert swarmkit.load_run(run.run_id).config["judge"]["model"] == "judge-model"


def test_the_judge_is_a_row_of_the_spend_by_role_table_and_of_the_runs_cost() -> None:
    with FakeServer(Script()) as server:
        run = swarmkit.run_sync("What is the capital of France?", **options(server))
    rows = {row.role: row for row in role_spend(run.calls)}
    assert list(rows) == ["planner", "workers", "reducer", "judge", "total"]
    judge = rows["judge"]
    assert (judge.calls, judge.models) == (1, ("judge-model",))
    assert judge.cost_usd is not None and judge.cost_usd > 0
    assert run.cost_usd == sum(row.cost_usd for role, row in rows.items()  # type: ignore[misc]
                               if role != "total")
    table = run.tables().role_table()
    assert "judge" in table and "judge-model" in table


def test_a_judge_call_past_the_budget_is_a_judge_error_and_the_answer_is_kept() -> None:
    dear = [("gpt-4.1-mini", "0.4", "1.6"), ("judge-model", "1000", "1000")]
    with FakeServer(Script()) as server:
        run = swarmkit.run_sync("What is the capital of France?",
                                **options(server, budget="0.05", prices=dear))
        steps = [r.step for r in server.requests]
    assert run.status == "completed" and run.answer == ANSWER
    (score,) = run.scores
    assert score.score is None and score.step == "judge-0"
    assert (score.error or "").startswith("BudgetExceeded: ") and "\n" not in score.error
    assert "judge-0" not in steps  # refused before anything was sent
    assert run.cost_usd is not None and run.cost_usd <= swarmkit.SwarmConfig().with_options(
        budget="0.05").budget_usd


def test_the_judge_spends_under_the_runs_budget() -> None:
    with FakeServer(Script()) as server:
        run = swarmkit.run_sync("What is the capital of France?",
                                **options(server, budget="1"))
    (score,) = run.scores
    assert score.score == 0.8 and score.error is None
    (call,) = [c for c in run.calls if c.step == "judge-0"]
    assert call.cost_usd is not None and call.cost_usd > 0


def test_a_rerun_is_served_from_the_cache_with_no_second_judge_request() -> None:
    with FakeServer(Script()) as server:
        first = swarmkit.run_sync("What is the capital of France?", **options(server, cache=True))
        second = swarmkit.run_sync("What is the capital of France?",
                                   **options(server, cache=True))
        judged = server.count("judge-*")
    assert judged == 1
    (call,) = [c for c in second.calls if c.step == "judge-0"]
    assert call.source == "cache"
    assert second.scores == first.scores


def test_a_recorded_judge_replays_from_its_cassette_with_no_server(tmp_path: Path) -> None:
    cassette = tmp_path / "judged.swarm.json"
    with FakeServer(Script()) as server:
        recorded = swarmkit.run_sync("What is the capital of France?",
                                     **options(server, record=str(cassette), rubric="Right?"))
    assert server.running is False
    recording = json.loads(cassette.read_text(encoding="utf-8"))
    assert any(call["step"] == "judge-0" for call in recording["calls"])
    # No server, no judge given: the recording's judge and rubric are asked again.
    replayed = swarmkit.run_sync("What is the capital of France?", replay=str(cassette),
                                 model="gpt-4.1-mini", api_key_env=KEY_ENV)
    assert {c.source for c in replayed.calls} == {"replay"}
    assert replayed.scores == recorded.scores
    assert replayed.tables().text() == recorded.tables().text()
    assert replayed.tables().html() == recorded.tables().html()


@pytest.mark.parametrize(("reply", "error"), [
    ("I liked it a lot.", "the judge's reply held no score (got 'I liked it a lot.')"),
    ("", "the judge's reply was empty"),
    ('{"score": 42, "reason": "huge"}', "the judge's score 42 is not a number from 0 to 10"),
])
def test_a_reply_that_is_no_score_is_a_judge_error_not_a_failed_run(reply: str,
                                                                     error: str) -> None:
    with FakeServer(Script(FakeReply(content=reply))) as server:
        run = swarmkit.run_sync("What is the capital of France?", **options(server))
    assert run.status == "completed" and run.answer == ANSWER
    (score,) = run.scores
    assert (score.score, score.error, score.step) == (None, error, "judge-0")
    (call,) = [c for c in run.calls if c.step == "judge-0"]
    assert call.output == reply and call.error is None


def test_a_judge_server_error_is_a_judge_error() -> None:
    with FakeServer(Script(Fault.status(500))) as server:
        run = swarmkit.run_sync("What is the capital of France?",
                                **options(server, max_attempts=1))
    assert run.status == "completed" and run.answer == ANSWER
    (score,) = run.scores
    assert score.score is None and (score.error or "").startswith("ProviderError: ")


@pytest.mark.parametrize(("text", "verdict"), [
    ('{"score": 7, "reason": "fine"}', (7.0, "fine")),
    ('Here you go:\n```json\n{"score": "9", "reason": "good"}\n```', (9.0, "good")),
    ("Score: 6/10. It is short.", (6.0, "Score: 6/10. It is short.")),
    ('{"score": 10}', (10.0, None)),
])
def test_a_verdict_is_read_leniently(text: str, verdict: tuple[float, str | None]) -> None:
    assert parse_verdict(text) == verdict


def test_the_judge_routes_to_its_own_server() -> None:
    with FakeServer(Script()) as swarm, FakeServer(Script(
            FakeReply(content='{"score": 3, "reason": "from the judge server"}'))) as judge:
        run = swarmkit.run_sync("What is the capital of France?",
                                **options(swarm, judge_base_url=judge.base_url))
        swarm_steps = [r.step for r in swarm.requests]
        judge_steps = [r.step for r in judge.requests]
    assert judge_steps == ["judge-0"]
    assert "judge-0" not in swarm_steps and "reducer" in swarm_steps
    assert run.scores[0].score == 0.3 and run.scores[0].reason == "from the judge server"
    assert run.config["judge"]["base_url"] == judge.base_url


def test_a_refused_response_format_goes_down_the_ladder() -> None:
    def judge(request: FakeRequest) -> FakeReply | Fault | str | None:
        if request.step.startswith("judge-") and request.response_format is not None:
            return Fault.format_refusal("litellm")
        return Script(FakeReply(content='{"score": 5, "reason": "plain"}'))(request)

    with FakeServer(judge) as server:
        run = swarmkit.run_sync("What is the capital of France?", **options(server))
        formats = [r.body.get("response_format", {}).get("type")
                   for r in server.requests if r.step == "judge-0"]
    assert formats == ["json_schema", "json_object", "json_object", None]
    assert run.scores[0].score == 0.5


def test_without_a_reducer_each_output_is_judged_in_its_own_step() -> None:
    with FakeServer(Script()) as server:
        run = swarmkit.run_sync("What is the capital of France?",
                                **options(server, reduce=False))
        steps = sorted(r.step for r in server.requests if r.step.startswith("judge-"))
    assert steps == ["judge-0", "judge-1"]
    assert [(s.step, s.score) for s in run.scores] == [("judge-0", 0.8), ("judge-1", 0.8)]


def test_a_judge_on_the_embedded_model_is_flagged_as_weak_in_one_line() -> None:
    notice = judge_notice({"judge": {"model": "local"}})
    assert notice is not None and "weak judge" in notice and "\n" not in notice
    assert judge_notice({"judge": {"model": "gpt-4.1"}}) is None
    assert judge_notice({}) is None
    run = swarmkit.Run("r1", "t", config={"judge": {"model": "local"}}, status="completed")
    assert notice in run.tables().text()


def test_a_judge_with_no_key_is_refused_before_any_call_from_python_and_the_magic(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_SUCH_JUDGE_KEY", raising=False)
    with FakeServer(Script()) as server:
        # A remote endpoint (never reached: the missing key is found first). The run
        # would pay for every call and then have no judge: refused like a missing key of
        # any role, before the planner is asked.
        with pytest.raises(ConfigError, match="api_key_env names NO_SUCH_JUDGE_KEY, but it "
                                              "is not set"):
            swarmkit.run_sync("What is the capital of France?",
                              **options(server, judge_api_key_env="NO_SUCH_JUDGE_KEY",
                                        judge_base_url="http://judge.invalid/v1"))
        assert server.count() == 0
    # The magic says so before any call: the judge is a hosted role like the others.
    config = swarmkit.SwarmConfig().with_options(model="gpt-4.1-mini", api_key_env=KEY_ENV,
                                                 judge="judge-model",
                                                 judge_api_key_env="NO_SUCH_JUDGE_KEY")
    with pytest.raises(UsageError, match="no API key for the judge model judge-model: set "
                                         "NO_SUCH_JUDGE_KEY, or %swarm config"):
        check_keys(config, {KEY_ENV: "sk-test-judge-0000"})
