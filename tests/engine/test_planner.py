"""Planner output parsing: fences, prose around JSON, bare lists, junk, cutting."""

from __future__ import annotations

import json
import re

import pytest

from swarmkit.engine.ladder import plan_rungs
from swarmkit.engine.planner import is_fragment, is_placeholder, parse_plan
from swarmkit.errors import PlanError


@pytest.mark.parametrize(
    "text",
    [
        '{"tasks": ["a", "b"]}',
        '```json\n{"tasks": ["a", "b"]}\n```',
        'Here is the plan:\n{"tasks": ["a", "b"]}\nGood luck!',
        '["a", "b"]',
        '{"tasks": [{"task": "a"}, {"description": "b"}]}',
        '{"tasks": ["a", "  ", "b"]}',
    ],
)
def test_usable_shapes_parse(text: str) -> None:
    assert parse_plan(text, 8).tasks == ("a", "b")


@pytest.mark.parametrize(
    "text", ["Sure, I can help with that.", '{"steps": ["a"]}', '{"tasks": [1, 2]}', "", None]
)
def test_junk_is_a_plan_error_that_keeps_the_raw_text(text: str | None) -> None:
    with pytest.raises(PlanError) as info:
        parse_plan(text, 8)
    assert info.value.raw == (text or "")


def test_empty_list_is_its_own_clear_error() -> None:
    with pytest.raises(PlanError, match="empty task list"):
        parse_plan('{"tasks": []}', 8)


def test_ten_thousand_tasks_are_cut_to_max_workers() -> None:
    text = '{"tasks": [' + ",".join(f'"t{i}"' for i in range(10_000)) + "]}"
    parsed = parse_plan(text, 5)
    assert parsed.tasks == ("t0", "t1", "t2", "t3", "t4")
    assert parsed.truncated_from == 10_000


def test_format_ladder_starts_the_embedded_server_at_an_exact_json_schema() -> None:
    hosted = plan_rungs(4, local=False)
    assert [r.name for r in hosted] == ["json_schema", "json_object+schema", "json_object", "text"]
    first = hosted[0].response_format
    assert first is not None and first["json_schema"]["name"] == "swarm_plan"
    grammar = hosted[1].response_format
    assert grammar is not None and set(grammar) == {"type", "schema"}
    assert grammar["type"] == "json_object"
    assert [r.after_refusal for r in hosted] == [False, False, True, False]
    assert hosted[-1].response_format is None
    local = plan_rungs(4, local=True)
    assert [r.name for r in local] == ["json_schema", "json_object+schema", "text"]
    exact = local[0].response_format
    assert exact is not None and exact["type"] == "json_schema"
    tasks = exact["json_schema"]["schema"]["properties"]["tasks"]
    assert (tasks["minItems"], tasks["maxItems"]) == (4, 4)
    # Each task is one line that starts with a letter: ", but also" cannot match.
    pattern = re.compile(tasks["items"]["pattern"])
    assert pattern.match("Describe the planet Mars")
    for fragment in (", but also", "and .", ". 2.", "Mars"):
        assert not pattern.match(fragment), fragment


def test_a_remembered_rung_starts_the_ladder_and_is_tried_even_if_refusal_only() -> None:
    assert [r.name for r in plan_rungs(4, local=False, start="text")] == ["text"]
    rest = plan_rungs(4, local=False, start="json_object")
    assert [(r.name, r.after_refusal) for r in rest] == [("json_object", False), ("text", False)]


@pytest.mark.parametrize(
    "task",
    ["...", "…", " - ", "task 1", "Sub-task 2", "subtask #3", "Step one", "first sub-task",
     "<task>", "[Task 4]", "TODO", "tbd", "placeholder", "string", "your task here", "N/A"],
)
def test_placeholders_are_recognised(task: str) -> None:
    assert is_placeholder(task)


@pytest.mark.parametrize(
    "task", ["Mars", "Explain Venus", "Step 1: book the flights", "Task 1 of the audit: list"
             " the tables", "red", "3D printing basics"],
)
def test_real_tasks_are_not_placeholders(task: str) -> None:
    assert not is_placeholder(task)


def test_numbered_and_bulleted_lists_are_read_only_when_asked() -> None:
    text = "Plan:\n1. Book flights\n2) Find a hotel\n- Pack bags\n* Pack bags\nEnjoy!"
    with pytest.raises(PlanError):
        parse_plan(text, 8)
    parsed = parse_plan(text, 8, lists=True)
    assert parsed.tasks == ("Book flights", "Find a hotel", "Pack bags")
    assert parsed.dropped == ("Pack bags",)


def test_echoes_of_the_prompt_are_dropped_and_only_echoes_is_a_plan_error() -> None:
    prompt = "Plan a trip to Rome."
    parsed = parse_plan('{"tasks": ["plan a trip to rome", "Book flights"]}', 8, echoes=(prompt,))
    assert parsed.tasks == ("Book flights",)
    with pytest.raises(PlanError, match="only placeholders or the prompt itself"):
        parse_plan(f'{{"tasks": ["{prompt}", "..."]}}', 8, echoes=(prompt,))


@pytest.mark.parametrize(
    "fragment", [", but also", "and .", ". 2.", "of the sun", "- or so", "[1, 2, 3]"])
def test_fragments_of_a_sentence_are_never_sub_tasks(fragment: str) -> None:
    assert is_fragment(fragment)
    raw = json.dumps({"tasks": ["Describe the planet Mars", fragment, "Describe Venus"]})
    parsed = parse_plan(raw, 4)
    assert parsed.tasks == ("Describe the planet Mars", "Describe Venus")
    assert fragment.strip("- ") in " ".join(parsed.dropped) or parsed.dropped


def test_a_plan_of_only_fragments_is_a_plan_error() -> None:
    with pytest.raises(PlanError, match="placeholders or the prompt itself"):
        parse_plan(json.dumps({"tasks": [", but also", "and ."]}), 4)


@pytest.mark.parametrize("task", ["a", "Mercury", "2 planets compared", '"Describe red"'])
def test_short_or_quoted_sub_tasks_are_not_fragments(task: str) -> None:
    assert not is_fragment(task)
