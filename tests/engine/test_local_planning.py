"""Plans on topic for small local models (issue 32): the items a task names, one
sub-task per item, worked examples, sub-tasks that are words, and the local prompts."""

from __future__ import annotations

import json
import re
from functools import partial

import pytest

import swarmkit
from swarmkit.config.prompts import (
    DEFAULT_PLANNER_PROMPT,
    LOCAL_PLANNER_PROMPT,
    LOCAL_REDUCER_PROMPT,
    LOCAL_SYSTEM_PROMPT,
)
from swarmkit.engine.ladder import forget_rungs, item_task_pattern, plan_rungs
from swarmkit.engine.nameditems import named_count, named_items
from swarmkit.engine.planner import PLAN_EXAMPLES, is_fragment, parse_plan, plan_messages
from swarmkit.engine.reducerinput import reducer_messages
from swarmkit.engine.scaffold import without_scaffold
from swarmkit.testing import FakeReply, FakeRequest, FakeServer
from tests.support.fakekey import QUICK_RETRIES, run_options

pytestmark = pytest.mark.usefixtures("fake_key")
options = partial(run_options, **QUICK_RETRIES, history=False, model="local")

IDENTIFIERS = ["hammer.saw.drill.EASY_TIP_1.1.3.1", "sub-task 1, 2", "sub-task 2, 3",
               "cat.sleeping.sleeping.sleeping.dog.sleep", "send_email_to_team_members",
               "sub-task 1.0.0.0.0.1:8080/100/100"]


@pytest.mark.parametrize(("task", "items"), [
    ("Compare tea, coffee and cocoa as breakfast drinks.", ("tea", "coffee", "cocoa")),
    ("What are the pros and cons of cats and dogs as pets?", ("cats", "dogs")),
    ("Explain how a hammer, a saw and a drill are used.", ("hammer", "saw", "drill")),
    ("Compare email, phone calls, or meetings for a team.", ("email", "phone calls",
                                                            "meetings")),
    ("Explain what Python, JavaScript and Rust are best used for.",
     ("Python", "JavaScript", "Rust")),
    ("Give three practical tips for writing clear technical documentation.", ()),
    ("Write and test a parser.", ()),
    ("List the pros and cons of remote work.", ()),
])
def test_the_items_a_task_names_are_its_list_and_nothing_else(
        task: str, items: tuple[str, ...]) -> None:
    assert named_items(task) == items


def test_a_local_planner_is_held_to_one_sub_task_per_item_each_starting_with_it() -> None:
    rungs = plan_rungs(4, local=True, items=("tea", "phone calls"))
    assert [r.name for r in rungs] == ["json_schema", "json_object+schema", "text"]
    schema = rungs[0].response_format["json_schema"]["schema"]  # type: ignore[index]
    tasks = schema["properties"]["tasks"]
    assert (tasks["minItems"], tasks["maxItems"]) == (2, 2)
    first, second = (re.compile(item["pattern"]) for item in tasks["prefixItems"])
    assert first.match("Tea: its taste, caffeine and cost")
    assert second.match("Phone calls for a quick question")
    assert not first.match("Coffee as a drink") and not first.match("Tea")
    # More items than workers: the plain exact schema, as for a task naming none.
    many = plan_rungs(1, local=True, items=("tea", "coffee"))
    assert "prefixItems" not in json.dumps(many[0].response_format)
    assert item_task_pattern("C++") == r"^C\+\+[,:]?( " + item_task_pattern("x")[9:]


@pytest.mark.parametrize("task", IDENTIFIERS)
def test_identifiers_and_labels_are_no_sub_tasks_in_python_or_in_the_schema(task: str) -> None:
    assert is_fragment(task)
    schema = plan_rungs(4, local=True)[0].response_format["json_schema"]["schema"]  # type: ignore[index]
    assert not re.match(schema["properties"]["tasks"]["items"]["pattern"], task)
    parsed = parse_plan(json.dumps({"tasks": [task, "Describe the planet Mars"]}), 4)
    assert parsed.tasks == ("Describe the planet Mars",)


@pytest.mark.parametrize("task", ["a", "Pricing", "Explain what Node.js is for",
                                  "Sub-tasks of a project plan, explained", "e.g. the U.S."])
def test_words_stay_sub_tasks(task: str) -> None:
    assert not is_fragment(task)


def test_a_replay_also_asks_the_local_rungs_recorded_before_the_item_schema() -> None:
    live = plan_rungs(4, local=True)
    replay = plan_rungs(4, local=True, replay=True)
    assert replay[:2] == live[:2] and len(replay) == len(live) + 2
    old = json.dumps(replay[2].response_format)
    assert old != json.dumps(live[0].response_format) and '{0,39}' in old


def test_the_local_planner_prompt_brings_the_worked_examples_the_default_does_not() -> None:
    local = plan_messages(LOCAL_PLANNER_PROMPT, 3, "Compare A, B and C.")
    assert [m["role"] for m in local] == ["system", "user", "assistant", "user", "assistant",
                                         "user"]
    assert local[1]["content"] == PLAN_EXAMPLES[0][0]
    assert json.loads(local[4]["content"])["tasks"] == list(PLAN_EXAMPLES[1][1][:3])
    assert len(plan_messages(DEFAULT_PLANNER_PROMPT, 3, "t")) == 2


def test_a_refused_identifier_plan_falls_to_the_next_rung_with_the_local_prompts() -> None:
    forget_rungs()
    task = "Compare tea, coffee and cocoa as breakfast drinks."
    good = ["Tea at breakfast", "Coffee at breakfast", "Cocoa at breakfast"]

    def handler(request: FakeRequest) -> FakeReply:
        if request.step == "planner":
            rung = (request.response_format or {}).get("type")
            tasks = IDENTIFIERS[:2] if rung == "json_schema" else good
            return FakeReply(content=json.dumps({"tasks": tasks}))
        if request.step == "reducer":
            return FakeReply(content="Task: t. Worker 1: Tea is mild. Your sub-task is done.")
        return FakeReply(content="Sub-task 1 of 3. It is a warm drink.")

    with FakeServer(handler) as server:
        run = swarmkit.run_sync(task, **options(server, workers=4))
    assert run.plan == good
    planner = [r for r in server.requests if r.step == "planner"]
    # The first rung, its one repair, then the next rung.
    assert [r.body["response_format"]["type"] for r in planner] == [
        "json_schema", "json_schema", "json_object"]
    first = planner[0].body
    assert first["messages"][0]["content"] == LOCAL_PLANNER_PROMPT.format(max_workers=4)
    assert first["messages"][1]["content"] == PLAN_EXAMPLES[0][0]
    patterns = first["response_format"]["json_schema"]["schema"]["properties"]["tasks"]
    assert [p["pattern"][:6] for p in patterns["prefixItems"]] == ["^Tea[,", "^Coffe",
                                                                   "^Cocoa"]
    worker = next(r for r in server.requests if r.step == "worker-1")
    assert worker.body["messages"][0]["content"] == LOCAL_SYSTEM_PROMPT
    reducer = next(r for r in server.requests if r.step == "reducer")
    assert reducer.body["messages"][0]["content"] == LOCAL_REDUCER_PROMPT
    # Swarmkit's own wording is dropped from what the local model said.
    assert run.answer == "Tea is mild."
    assert [w.output for w in run.workers] == ["It is a warm drink."] * 3
    assert run.config["planner_prompt"] == LOCAL_PLANNER_PROMPT


def test_a_prompt_the_user_gave_is_kept_on_a_local_model() -> None:
    with FakeServer(lambda r: FakeReply(content='{"tasks": ["Say hi"]}')) as server:
        run = swarmkit.run_sync("t", **options(server, system_prompt="Be brief.",
                                                 reduce=False))
    worker = next(r for r in server.requests if r.step == "worker-1")
    assert worker.body["messages"][0]["content"] == "Be brief."
    assert run.config["system_prompt"] == "Be brief."


def test_sentences_in_swarmkits_own_words_are_dropped_from_a_local_answer() -> None:
    text = ("Task: Compare tea and coffee. Worker 1: \"Tea is mild.\" I'll provide a "
            "separate sub-task. Worker 2 (sub-task: Coffee). Coffee is strong.")
    assert without_scaffold(text, thorough=True) == '"Tea is mild." Coffee is strong.'
    assert without_scaffold(text, local=False, thorough=True) is text
    # With the default prompts (a run recorded before them): the cleanup it had then.
    assert without_scaffold(text) is text


@pytest.mark.parametrize(("task", "count"), [
    ("Give three practical tips for writing clear technical documentation.", 3),
    ("List 5 ways to save water.", 5), ("Compare two cars and three bikes.", None),
    ("Describe the sun.", None)])
def test_a_task_that_counts_its_sub_tasks_is_planned_to_that_count(
        task: str, count: int | None) -> None:
    assert named_count(task) == count
    rungs = plan_rungs(4, local=True, count=named_count(task))
    tasks = rungs[0].response_format["json_schema"]["schema"]["properties"]["tasks"]  # type: ignore[index]
    expected = count if count is not None and count <= 4 else 4
    assert (tasks["minItems"], tasks["maxItems"]) == (expected, expected)


def test_the_local_reducer_reads_notes_by_topic_then_the_task_as_its_question() -> None:
    inputs = [(1, "Tea at breakfast", "Tea is mild."), (2, "Coffee", "Coffee is strong.")]
    local = reducer_messages(LOCAL_REDUCER_PROMPT, "Compare tea and coffee.", inputs)
    assert local[1]["content"] == ("Notes on Tea at breakfast:\nTea is mild.\n\n"
                                   "Notes on Coffee:\nCoffee is strong.\n\n"
                                   "Using these notes, answer: Compare tea and coffee.")
    hosted = reducer_messages("Merge.", "Compare tea and coffee.", inputs)
    assert hosted[1]["content"].startswith("Task: Compare tea and coffee.\n\nWorker 1 (sub-task:")
    # The headings a small model may echo go, as swarmkit's other labels do.
    assert without_scaffold("Notes on Coffee: Coffee is strong. The notes agree.",
                            thorough=True) == "Coffee is strong."


def test_a_sentence_that_mentions_an_identifier_along_the_way_stays_a_sub_task() -> None:
    task = ('**Use a clear commit message format**: e.g. "New commit with type '
            'terraform-dev-2.0.0-p1" for every release.')
    assert not is_fragment(task)
    assert is_fragment("terraform-dev-2.0.0-p1 for every release")


def test_a_sentence_repeating_the_roles_own_prompt_is_dropped() -> None:
    text = ("Tea is mild. I will answer the question below in three or four short "
            "sentences. Coffee is strong.")
    assert without_scaffold(text, thorough=True, prompt=LOCAL_SYSTEM_PROMPT) == (
        "Tea is mild. Coffee is strong.")
    assert without_scaffold(text, prompt=LOCAL_SYSTEM_PROMPT) is text  # default prompts
