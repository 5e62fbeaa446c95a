"""Planner output parsing: fences, prose around JSON, bare lists, junk, cutting."""

from __future__ import annotations

import pytest

from swarmkit.errors import PlanError
from swarmkit.planner import parse_plan, plan_formats


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


def test_format_ladder_goes_straight_to_grammar_for_local_servers() -> None:
    hosted = plan_formats(4, local=False)
    assert hosted[0] is not None and hosted[0]["json_schema"]["name"] == "swarm_plan"
    assert hosted[-1] is None
    local = plan_formats(4, local=True)
    assert local[0] == {"type": "json_object", "schema": local[0]["schema"]}
    assert local[0]["schema"]["properties"]["tasks"]["maxItems"] == 4
