"""``@tool``: schemas from signatures and docstrings, name rules, validation, running."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
from collections.abc import Callable
from typing import Annotated, Any, Literal

import pydantic
import pytest

import swarmkit
from swarmkit.errors import ConfigError
from swarmkit.tools import (
    Tool,
    ToolArgumentsError,
    ToolLoop,
    collect_tools,
    parse_arguments,
    parse_docstring,
    render_result,
    tool,
)


@tool
def search(query: str, limit: int = 5, *, kind: Literal["web", "news"] = "web") -> list[str]:
    """Search the index.

    Returns the best matches first.

    Args:
        query: What to look for,
            in plain words.
        limit (int): At most this many results.
        kind: Which index.

    Returns:
        The matching titles.
    """
    return [f"{kind}:{query}"] * limit


def test_schema_comes_from_signature_hints_and_docstring() -> None:
    assert isinstance(search, Tool)
    assert search.name == "search"
    assert search.description == "Search the index.\n\nReturns the best matches first."
    params = search.parameters
    assert params["type"] == "object"
    assert params["required"] == ["query"]
    assert params["additionalProperties"] is False
    props = params["properties"]
    assert props["query"]["type"] == "string"
    assert props["query"]["description"] == "What to look for, in plain words."
    assert props["limit"] == {"default": 5, "description": "At most this many results.",
                              "title": "Limit", "type": "integer"}
    assert props["kind"]["enum"] == ["web", "news"]
    assert search.spec() == {"type": "function", "function": {
        "name": "search", "description": search.description, "parameters": dict(params)}}


def test_the_decorated_tool_still_calls_the_function() -> None:
    assert search("cats", 2) == ["web:cats", "web:cats"]
    assert swarmkit.tool is tool and swarmkit.Tool is Tool


def test_options_name_description_and_timeout() -> None:
    @tool(name="find-orders", description="Find orders.", timeout=2.5)
    def anything(customer: str) -> str:
        """Ignored docstring."""
        return customer

    assert (anything.name, anything.description, anything.timeout) == \
        ("find-orders", "Find orders.", 2.5)
    assert anything.spec()["function"]["name"] == "find-orders"


def test_rich_json_types_work() -> None:
    @dataclasses.dataclass
    class Window:
        start: dt.date
        end: dt.date

    class Filter(pydantic.BaseModel):
        tags: list[str] = []
        min_score: float | None = None

    @tool
    def report(window: Window, filters: Filter, top: Annotated[int, pydantic.Field(gt=0)],
               extra: dict[str, Any] | None = None) -> str:
        """Make a report."""
        return f"{window.start}..{window.end} {filters.tags} {top} {extra}"

    props = report.parameters["properties"]
    assert props["top"]["exclusiveMinimum"] == 0
    args = report.validate({"window": {"start": "2024-01-01", "end": "2024-02-01"},
                            "filters": {"tags": ["a"]}, "top": "3"})
    assert args["window"] == Window(dt.date(2024, 1, 1), dt.date(2024, 2, 1))
    assert args["top"] == 3 and "extra" not in args
    assert asyncio.run(report.run(args)) == "2024-01-01..2024-02-01 ['a'] 3 None"
    with pytest.raises(ToolArgumentsError, match="top: Input should be greater than 0"):
        report.validate({"window": {"start": "2024-01-01", "end": "2024-02-01"},
                         "filters": {}, "top": 0})


def test_parameter_names_that_clash_with_pydantic_still_work() -> None:
    @tool
    def odd(model_config: str, schema: int, json: bool = False) -> str:
        """Odd names."""
        return f"{model_config}-{schema}-{json}"

    assert set(odd.parameters["properties"]) == {"model_config", "schema", "json"}
    args = odd.validate({"model_config": "m", "schema": 1})
    assert asyncio.run(odd.run(args)) == "m-1-False"


def test_positional_only_parameters_are_passed_positionally() -> None:
    @tool
    def pos(a: int, /, b: int) -> int:
        """Subtract."""
        return a - b

    assert asyncio.run(pos.run(pos.validate({"a": 5, "b": 2}))) == 3


@pytest.mark.parametrize("name", ["", "has space", "dot.name", "x" * 65, "ünï"])
def test_names_must_match_the_openai_rule(name: str) -> None:
    with pytest.raises(ConfigError, match="is not allowed: use 1-64 letters"):
        tool(name=name)(lambda: None)


def test_a_lambda_needs_a_name() -> None:
    with pytest.raises(ConfigError, match="'<lambda>' is not allowed"):
        tool(lambda: None)
    assert tool(name="ok_name")(lambda: 1).name == "ok_name"


class NotJson:
    pass


def unannotated(x):  # type: ignore[no-untyped-def]
    return x


def arbitrary_class(x: NotJson) -> None:
    pass


def a_callable(callback: Callable[[int], int]) -> None:
    pass


def star_args(*values: int) -> None:
    pass


def star_kwargs(**values: int) -> None:
    pass


@pytest.mark.parametrize(("function", "message"), [
    (unannotated, "parameter 'x' of tool 'unannotated' has no type annotation"),
    (arbitrary_class, "parameter 'x' of tool 'arbitrary_class': type NotJson cannot be "
                      "described as JSON schema"),
    (a_callable, "parameter 'callback' of tool 'a_callable': type collections.abc.Callable"),
    (star_args, "parameter 'values' of tool 'star_args': \\*args/\\*\\*kwargs"),
    (star_kwargs, "parameter 'values' of tool 'star_kwargs': \\*args/\\*\\*kwargs"),
])
def test_inexpressible_parameters_are_config_errors_naming_them(
    function: Callable[..., Any], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        tool(function)


def test_unresolvable_forward_reference_is_a_config_error() -> None:
    def later(x: DoesNotExist) -> None:  # type: ignore[name-defined]  # noqa: F821
        pass

    with pytest.raises(ConfigError, match="a type hint cannot be resolved"):
        tool(later)


def test_validation_lists_every_problem_in_one_line() -> None:
    with pytest.raises(ToolArgumentsError) as caught:
        search.validate({"limit": "many", "colour": "red"})
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("invalid arguments for search: ")
    assert "query: Field required" in message
    assert "limit: Input should be a valid integer" in message
    assert "colour: Extra inputs are not permitted" in message


def test_async_and_sync_tools_both_run() -> None:
    @tool
    async def double(n: int) -> int:
        """Double."""
        await asyncio.sleep(0)
        return n * 2

    @tool
    def triple(n: int) -> int:
        """Triple."""
        return n * 3

    async def both() -> tuple[int, int]:
        return await double.run({"n": 2}), await triple.run({"n": 2})

    assert asyncio.run(both()) == (4, 6)


def test_parse_arguments() -> None:
    assert parse_arguments('{"a": 1}') == {"a": 1}
    assert parse_arguments("") == {}
    assert parse_arguments("  ") == {}
    with pytest.raises(ToolArgumentsError, match="not valid JSON"):
        parse_arguments("{a: 1}")
    with pytest.raises(ToolArgumentsError, match="must be a JSON object, got list"):
        parse_arguments("[1]")


def test_render_result_strings_json_and_truncation() -> None:
    class Point(pydantic.BaseModel):
        x: int
        y: int

    assert render_result("plain text", 100) == "plain text"
    assert render_result({"b": [1, 2], "when": dt.date(2024, 1, 2)}, 100) == \
        '{"b":[1,2],"when":"2024-01-02"}'
    assert render_result(Point(x=1, y=2), 100) == '{"x":1,"y":2}'
    assert render_result(None, 100) == "null"
    assert render_result(NotJson(), 1000).startswith('"<')
    assert render_result("abcdef", 4) == "abcd…[truncated 2 chars]"
    assert render_result("abcd", 4) == "abcd"


def test_docstring_styles() -> None:
    google = "Sum two numbers.\n\nArgs:\n    a: first\n    b (int): second\n        and more\n"
    assert parse_docstring(google) == ("Sum two numbers.", {"a": "first", "b": "second and more"})
    sphinx = "Sum.\n\n:param a: first\n:param int b: second\n   continued\n:returns: total\n"
    assert parse_docstring(sphinx) == ("Sum.", {"a": "first", "b": "second continued"})
    numpy = "Sum.\n\nParameters\n----------\na : int\n    The first.\nb : int\n    The second.\n"
    assert parse_docstring(numpy) == ("Sum.", {"a": "The first.", "b": "The second."})
    assert parse_docstring("") == ("", {})


def test_collect_tools_wraps_functions_and_refuses_duplicate_names() -> None:
    def helper(x: int) -> int:
        return x

    tools = collect_tools([search, helper])
    assert list(tools) == ["search", "helper"]
    assert isinstance(tools["helper"], Tool)
    with pytest.raises(ConfigError, match="two tools are named 'search'"):
        collect_tools([search, tool(name="search")(helper)])
    with pytest.raises(ConfigError, match="must be Tool objects or functions"):
        collect_tools(["search"])  # type: ignore[list-item]
    assert ToolLoop([search]).specs == (search.spec(),)


def test_timeout_must_be_positive() -> None:
    with pytest.raises(ConfigError, match="timeout must be a positive number of seconds"):
        tool(timeout=0)(search.function)
