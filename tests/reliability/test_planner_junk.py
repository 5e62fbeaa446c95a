"""Whatever the planner answers, the run ends with a clear plan or a one-line PlanError.

Real openai client → FakeServer, whose handler plays the planner's junk on every planner
attempt (so each rung's one repair request gets junk too) and answers workers normally.
The server takes every response_format, so junk costs three rungs (json_schema,
json_object with the schema, plain text) of two requests each.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import swarmkit
from swarmkit.api.result import Run
from swarmkit.record.events import Event, PlanReady
from swarmkit.testing import FakeReply, FakeRequest, FakeServer, default_reply, run_problems
from tests.support.fakekey import Options

MAX_WORKERS = 5
RUNGS = ["json_schema", "json_schema", "json_object", "json_object", None, None]


def _formats(server: FakeServer) -> list[str | None]:
    return [(r.body.get("response_format") or {}).get("type") for r in server.requests
            if r.step == "planner"]


def _run(options: Options, planner_says: str | None, **extra: Any) -> tuple[Run, FakeServer]:
    def handler(request: FakeRequest) -> FakeReply:
        if request.step == "planner":
            return FakeReply(content=planner_says)
        return default_reply(request)

    with FakeServer(handler) as server:
        run = swarmkit.run_sync("Plan a trip", **options(server, workers=MAX_WORKERS, **extra))
    return run, server


JUNK = {
    "prose": "Sure! First book flights, then find a hotel, and finally pack your bags.",
    "prose-with-newlines": "Here is my plan:\n\nflights, then\nhotel\n\n<b>Enjoy!</b>",
    "wrong-key": json.dumps({"steps": ["flights", "hotel"]}),
    "tasks-not-a-list": json.dumps({"tasks": "flights and hotel"}),
    "tasks-of-numbers": json.dumps({"tasks": [1, 2, 3]}),
    "json-null": "null",
    "truncated-json": '{"tasks": ["book flights", "find a ho',
    "nothing": "",
    "no-content": None,
}


@pytest.mark.parametrize("name", list(JUNK))
def test_planner_junk_is_repaired_once_per_rung_then_fails_with_a_one_line_plan_error(
    name: str, options: Options
) -> None:
    run, server = _run(options, JUNK[name])
    assert _formats(server) == RUNGS  # each rung: the answer, then one repair request
    repairs = [r for r in server.requests if r.step == "planner"][1::2]
    assert all("could not be used" in r.body["messages"][-1]["content"] for r in repairs)
    assert server.count("worker-*") == 0
    assert run_problems(run) == []
    assert run.status == "failed" and run.workers == [] and run.plan == []
    assert run.error is not None and run.error.startswith("PlanError: ")
    assert "\n" not in run.error and "<b>" not in run.error and len(run.error) < 400
    assert run.plan_raw == (JUNK[name] or "")  # the raw reply is kept for the user to see
    if not JUNK[name]:
        assert "got an empty reply" in run.error


def test_empty_task_list_is_a_plan_error_that_says_so(options: Options) -> None:
    run, server = _run(options, json.dumps({"tasks": []}))
    assert _formats(server) == RUNGS
    assert run.status == "failed"
    assert run.error == "PlanError: the planner returned an empty task list; rephrase the task"
    assert run.plan_raw == '{"tasks": []}'
    assert run_problems(run) == []


def test_blank_tasks_count_as_an_empty_list(options: Options) -> None:
    run, _ = _run(options, json.dumps({"tasks": ["", "   ", "\n"]}))
    assert run.error is not None and "empty task list" in run.error


@pytest.mark.parametrize(
    ("reply", "plan"),
    [
        ('```json\n{"tasks": ["flights", "hotel"]}\n```', ["flights", "hotel"]),
        ('Here you go:\n```\n{"tasks": ["flights"]}\n```\nHave fun!', ["flights"]),
        ('Plan: {"tasks": ["flights", "hotel"]} -- done', ["flights", "hotel"]),
        ('["flights", "hotel"]', ["flights", "hotel"]),
        ('{"tasks": [{"task": "flights"}, {"description": "hotel"}]}', ["flights", "hotel"]),
        ('{"tasks": ["  flights  ", "", "hotel"]}', ["flights", "hotel"]),
    ],
    ids=["fenced", "fenced-in-prose", "json-in-prose", "bare-list", "objects", "padded"],
)
def test_near_json_plans_are_read_without_a_repair(
    reply: str, plan: list[str], options: Options
) -> None:
    run, server = _run(options, reply)
    assert server.count("planner") == 1
    assert run.plan == plan and run.plan_raw == reply
    assert run.status == "completed"
    assert run_problems(run) == []


def test_ten_thousand_tasks_are_cut_to_max_workers(options: Options) -> None:
    tasks = [f"visit city number {i}" for i in range(10_000)]
    plans: list[PlanReady] = []

    class Plans:
        def on_event(self, event: Event) -> None:
            if isinstance(event, PlanReady):
                plans.append(event)

    run, server = _run(options, json.dumps({"tasks": tasks}), sinks=[Plans()])
    assert run.plan == tasks[:MAX_WORKERS]
    assert len(run.workers) == MAX_WORKERS and server.count("worker-*") == MAX_WORKERS
    assert plans[0].truncated_from == 10_000  # the cut is announced, not silent
    assert run.status == "completed"
    assert run_problems(run) == []


def test_a_repaired_plan_is_used(options: Options) -> None:
    replies = iter(["I would suggest several steps.", '{"tasks": ["flights", "hotel"]}'])

    def handler(request: FakeRequest) -> FakeReply:
        if request.step == "planner":
            return FakeReply(content=next(replies))
        return default_reply(request)

    with FakeServer(handler) as server:
        run = swarmkit.run_sync("Plan a trip", **options(server))
    assert run.plan == ["flights", "hotel"] and run.status == "completed"
    assert [c.step for c in run.calls].count("planner") == 2
    assert run_problems(run) == []
