"""A reducer that fits its context: past ``reducer_max_input_tokens`` (or the model's
context) the workers' outputs are merged in parts (``reducer-1.1``, ...), then the
partial answers, through the real openai client against the loopback FakeServer."""

from __future__ import annotations

import re
from decimal import Decimal
from functools import partial
from pathlib import Path
from typing import Any

import pytest

import swarmkit
from swarmkit.config.swarmconfig import SwarmConfig
from swarmkit.display.timeline import timeline_svg
from swarmkit.engine.estimate import estimate
from swarmkit.engine.prices import PriceTable
from swarmkit.engine.reducerinput import DEFAULT_CONTEXT, input_limit, reducer_request
from swarmkit.provider.embedded import SLOT_CONTEXT
from swarmkit.record.modelcall import ChatRequest, canonical_json
from swarmkit.record.steps import reducer_part_of_step
from swarmkit.testing import FakeReply, FakeRequest, FakeServer, run_problems
from tests.support.fakekey import QUICK_RETRIES, run_options

pytestmark = pytest.mark.usefixtures("fake_key")

LIMIT = 3000
# JSON the SDK adds around the messages (model, max_tokens, stream): the body a server
# measures may pass the prompt bound by this much, never more.
BODY_FIELDS = 128
FINAL = "FINAL ANSWER over "

options = partial(run_options, **QUICK_RETRIES, history=False)



def tasks(n: int) -> list[str]:
    return [f"row {i}" for i in range(1, n + 1)]


def handler(request: FakeRequest) -> FakeReply | None:
    """Workers write 400 characters; a part answers with its step and the workers it
    read; the final reducer names the partial answers it merged."""
    text = request.last_user_message
    if request.role == "worker":
        return FakeReply(content=f"{request.step} says " + "w" * 400)
    if request.step == "reducer":
        partials = re.findall(r"^Partial answer (\d+\.\d+)", text, re.M)
        return FakeReply(content=FINAL + ",".join(partials))
    workers = re.findall(r"^Worker (\d+) ", text, re.M)
    return FakeReply(content=f"{request.step} merged workers {','.join(workers)}")


def reducer_requests(server: FakeServer) -> list[Any]:
    return [r for r in server.requests if r.step.startswith("reducer")]


def test_outputs_past_the_limit_are_merged_in_parts_each_under_the_limit() -> None:
    with FakeServer(handler) as server:
        run = swarmkit.run_sync("Summarise the rows", tasks=tasks(24),
                                **options(server, reducer_max_input_tokens=LIMIT))
        seen = reducer_requests(server)
    parts = [r for r in seen if r.step != "reducer"]
    assert len(parts) >= 3 and [r.step for r in seen].count("reducer") == 1
    assert seen[-1].step == "reducer"  # the final merge comes after every part
    assert sorted(r.step for r in parts) == sorted(f"reducer-1.{n}"
                                                   for n in range(1, len(parts) + 1))
    for request in seen:  # measured at the server: every body is within the limit
        assert ChatRequest.from_dict(request.body).prompt_token_bound() <= LIMIT
        assert len(canonical_json(request.body["messages"]).encode()) <= LIMIT
        assert int(request.headers["content-length"]) <= LIMIT + BODY_FIELDS
    # Every worker is in exactly one part, in worker order.
    read = [int(i) for r in sorted(parts, key=lambda r: reducer_part_of_step(r.step))
            for i in re.findall(r"^Worker (\d+) ", r.body["messages"][1]["content"], re.M)]
    assert read == list(range(1, 25))
    final = seen[-1].body["messages"][1]["content"]
    assert "Merge the partial answers below" in final and "Worker 1 " not in final
    assert "reducer-1.1 merged workers 1," in final  # the parts' answers are its input
    assert run.status == "completed" and run.error is None
    assert run.answer == FINAL + ",".join(f"1.{n}" for n in range(1, len(parts) + 1))
    assert run.reduced == list(range(1, 25))
    reducer_calls = [c for c in run.calls if c.role == "reducer"]
    assert [c.step for c in reducer_calls] == [r.step for r in seen]
    assert all(c.cost_usd is not None and c.cost_usd > 0 for c in reducer_calls)
    assert run.cost_usd == sum((c.cost_usd or Decimal(0) for c in run.calls), Decimal(0))
    assert run_problems(run) == []
    assert ">reducer-1.1<" in timeline_svg(run)  # a lane of its own, after the workers


def test_partial_answers_that_still_do_not_fit_are_merged_again() -> None:
    def verbose(request: FakeRequest) -> FakeReply | None:
        if request.role == "reducer" and request.step != "reducer":
            return FakeReply(content=f"{request.step}: " + "p" * 900)  # long partials
        return handler(request)

    with FakeServer(verbose) as server:
        run = swarmkit.run_sync("Summarise the rows", tasks=tasks(24),
                                **options(server, reducer_max_input_tokens=LIMIT))
        steps = [r.step for r in reducer_requests(server)]
        bounds = [ChatRequest.from_dict(r.body).prompt_token_bound()
                  for r in reducer_requests(server)]
    assert "reducer-2.1" in steps and steps[-1] == "reducer" and steps.count("reducer") == 1
    assert max(bounds) <= LIMIT
    assert run.status == "completed" and run.answer is not None
    levels = {int(p.split(".")[0]) for p in run.answer.removeprefix(FINAL).split(",")}
    assert len(levels) == 1 and levels.pop() >= 2  # the final call merged one higher level


def test_one_output_bigger_than_the_limit_is_cut_and_says_so() -> None:
    def huge(request: FakeRequest) -> FakeReply | None:
        if request.step == "worker-2":
            return FakeReply(content="H" * 20_000)
        return handler(request)

    with FakeServer(huge) as server:
        run = swarmkit.run_sync("Summarise the rows", tasks=tasks(3),
                                **options(server, reducer_max_input_tokens=LIMIT))
        seen = reducer_requests(server)
    assert run.status == "completed" and run.answer
    assert all(ChatRequest.from_dict(r.body).prompt_token_bound() <= LIMIT for r in seen)
    texts = [r.body["messages"][1]["content"] for r in seen]
    cut = [t for t in texts if "Worker 2 " in t]
    assert len(cut) == 1 and "[cut to fit the reducer's context: the first " in cut[0]
    assert "of 20000 characters]" in cut[0] and "H" * 20_000 not in cut[0]


def test_a_cassette_of_a_tree_replays_offline_to_the_same_answer(tmp_path: Path) -> None:
    cassette = tmp_path / "tree.swarm.json"
    with FakeServer(handler) as server:
        recorded = swarmkit.run_sync("Summarise the rows", tasks=tasks(12),
                                     record=str(cassette),
                                     **options(server, reducer_max_input_tokens=LIMIT))
    # No server now, and no limit given: the recording sets it, so the same parts replay.
    replayed = swarmkit.run_sync("Summarise the rows", replay=str(cassette),
                                 **options(None))
    assert replayed.answer == recorded.answer and recorded.answer.startswith(FINAL + "1.1")
    assert [c.step for c in replayed.calls] == [c.step for c in recorded.calls]
    assert {c.source for c in replayed.calls} == {"replay"}
    assert replayed.tables().text() == recorded.tables().text()


def test_a_budget_too_small_for_the_tree_stops_with_budget_exceeded_and_keeps_workers(
) -> None:
    def talkative(request: FakeRequest) -> FakeReply | None:
        if request.role == "worker":  # a worker reports few tokens, so the budget lasts
            return FakeReply(content=f"{request.step} says " + "w" * 400,
                             usage={"prompt_tokens": 10, "completion_tokens": 10,
                                    "total_tokens": 20})
        return handler(request)

    with FakeServer(talkative) as server:
        run = swarmkit.run_sync(
            "Summarise the rows", tasks=tasks(12), budget=Decimal("0.001"),
            worker_max_tokens=16, **options(server, reducer_max_input_tokens=LIMIT))
        steps = [r.step for r in server.requests]
    assert run.status == "failed" and run.answer is None
    assert run.error is not None and run.error.startswith("BudgetExceeded: budget: reducer-")
    assert "raise the budget" in run.error
    assert [w.status for w in run.workers] == ["completed"] * 12
    assert all(w.output for w in run.workers)
    assert "reducer" not in steps  # the final merge was never sent
    assert run_problems(run) == []


def test_outputs_that_fit_make_exactly_one_reducer_call_as_before() -> None:
    with FakeServer(handler) as server:
        run = swarmkit.run_sync("Summarise the rows", tasks=tasks(24), **options(server))
        seen = reducer_requests(server)
    assert [r.step for r in seen] == ["reducer"]
    config = SwarmConfig.from_options(**options(server))
    inputs = [(w.index, w.task, w.output or "") for w in run.workers]
    assert seen[0].body["messages"] == list(reducer_request(config, "Summarise the rows",
                                                            inputs).messages)
    assert run.answer == FINAL and [c.step for c in run.calls if c.role == "reducer"] == [
        "reducer"]


def test_the_limit_comes_from_the_option_the_model_table_or_a_default() -> None:
    prices = PriceTable()
    table = SwarmConfig.from_options(model="openai/gpt-4.1", reducer_max_tokens=1000)
    assert input_limit(table, prices).tokens == 1_047_576 - 1000
    local = SwarmConfig.from_options(model="local")
    assert input_limit(local, prices).tokens == SLOT_CONTEXT - local.reducer.max_tokens
    unknown = SwarmConfig.from_options(model="my-own-llama")
    limit = input_limit(unknown, prices)
    assert limit.tokens == DEFAULT_CONTEXT - 2048 and "default context" in limit.source
    given = SwarmConfig.from_options(model="gpt-4.1", reducer_max_input_tokens=5000)
    assert input_limit(given, prices).tokens == 5000


def test_a_limit_too_small_for_the_prompt_fails_the_run_with_one_line() -> None:
    with FakeServer(handler) as server:
        run = swarmkit.run_sync("T" * 2000, tasks=tasks(4),
                                **options(server, reducer_max_input_tokens=2048))
        steps = [r.step for r in server.requests]
    assert run.status == "failed" and not any(s.startswith("reducer") for s in steps)
    assert run.error is not None and "reducer_max_input_tokens" in run.error
    assert "\n" not in run.error and all(w.status == "completed" for w in run.workers)


def test_the_dry_run_estimate_prices_the_tree() -> None:
    prices = PriceTable()
    plan = tuple(tasks(40))
    small = SwarmConfig.from_options(model="gpt-4.1-mini", worker_max_tokens=200,
                                     reducer_max_input_tokens=LIMIT)
    whole = SwarmConfig.from_options(model="gpt-4.1-mini", worker_max_tokens=200)
    tree = {r.role: r for r in estimate(small, prices, [], "Task", plan).roles}
    one = {r.role: r for r in estimate(whole, prices, [], "Task", plan).roles}
    assert one["reducer"].calls == 1
    assert tree["reducer"].calls > 3  # the parts and the final merge
    assert tree["reducer"].cost_usd is not None and one["reducer"].cost_usd is not None
    assert tree["reducer"].cost_usd > one["reducer"].cost_usd
    assert tree["worker"] == one["worker"]


@pytest.mark.slow
def test_ten_thousand_given_tasks_complete_with_an_answer() -> None:
    # At 10,000 workers one reducer request would be over the server's 1 MB body limit
    # (HTTP 413): the model's context (gpt-4.1-mini's, from the table) splits it.
    with FakeServer(keep_requests=False) as server:
        run = swarmkit.run_sync("Summarise every row", tasks=[f"row {i}" for i in range(10_000)],
                                **options(server, concurrency=100))
    assert run.status == "completed" and run.error is None and run.answer
    assert len(run.workers) == 10_000 and run.reduced == list(range(1, 10_001))
    parts = [c.step for c in run.calls if reducer_part_of_step(c.step) is not None]
    assert len(parts) >= 2 and [c.step for c in run.calls][-1] == "reducer"
    # FakeServer's default reducer reply counts the partial answers the final merge read.
    last_level = max(step.split("-")[1].split(".")[0] for step in parts)
    merged = sum(step.startswith(f"reducer-{last_level}.") for step in parts)
    assert run.answer == f"Final answer merging {merged} results"
