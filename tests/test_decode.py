"""decode: reading completions as parsed JSON (what the provider now receives)."""

from __future__ import annotations

import json

import pytest

from swarmkit.calls import ToolCallRequest, Usage
from swarmkit.decode import parse_completion


def completion(message: dict[str, object], **extra: object) -> dict[str, object]:
    return {
        "id": "c1", "model": "m",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        **extra,
    }


def test_json_completion_maps_content_usage_and_model() -> None:
    usage = {"prompt_tokens": 9, "completion_tokens": 4,
             "prompt_tokens_details": {"cached_tokens": 2},
             "completion_tokens_details": None}
    response = parse_completion(completion({"role": "assistant", "content": "hi"}, usage=usage))
    assert response is not None
    assert (response.content, response.model, response.finish_reason) == ("hi", "m", "stop")
    assert response.usage == Usage(9, 4, 2, 0, requests=1)


def test_json_sent_as_text_is_parsed_and_garbage_raises() -> None:
    text = json.dumps(completion({"role": "assistant", "content": "hi"}))
    response = parse_completion(text)
    assert response is not None and response.content == "hi"
    with pytest.raises(ValueError):
        parse_completion("<html>Bad gateway</html>")


def test_content_parts_are_joined_and_object_arguments_become_json() -> None:
    message = {
        "role": "assistant",
        "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
        "tool_calls": [{"id": "t1", "type": "function",
                        "function": {"name": "lookup", "arguments": {"id": 7}}}],
    }
    response = parse_completion(completion(message))
    assert response is not None
    assert response.content == "ab"
    assert response.tool_calls == (ToolCallRequest("t1", "lookup", '{"id": 7}'),)


@pytest.mark.parametrize(
    "body",
    [{}, {"choices": []}, {"choices": "x"}, {"choices": [{"index": 0}]}, [1, 2], 3],
    ids=["empty", "no-choices", "choices-not-a-list", "no-message", "a-list", "a-number"],
)
def test_bodies_without_a_usable_choice_are_none(body: object) -> None:
    assert parse_completion(body) is None
