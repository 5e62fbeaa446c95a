"""decode: reading completions as parsed JSON (what the provider now receives)."""

from __future__ import annotations

import json

import pytest

from swarmkit.provider.decode import (
    ServerSentEvents,
    StreamAccumulator,
    parse_completion,
    retry_after_seconds,
)
from swarmkit.record.modelcall import ToolCallRequest
from swarmkit.record.usage import Usage


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


def _events(lines: list[str]) -> list[str]:
    events = ServerSentEvents()
    found = [data for line in lines if (data := events.feed(line)) is not None]
    last = events.end()
    return [*found, last] if last is not None else found


def test_server_sent_events_follow_the_wire_format() -> None:
    lines = [
        ": keep-alive", "", "data: one", "",
        "event: message", "data:two", "data:  three", "id: 7", "",
        "retry: 100", "", "", "data: [DONE]",  # the body ends without a blank line
    ]
    assert _events(lines) == ["one", "two\n three", "[DONE]"]


def test_stream_accumulator_joins_json_chunks_with_tool_call_pieces() -> None:
    chunks = [
        {"model": "m", "choices": [{"delta": {"content": "Hel"}, "finish_reason": None}]},
        {"choices": [{"delta": {"content": "lo", "tool_calls": [
            {"index": 0, "id": "c1", "function": {"name": "add", "arguments": '{"a":'}}]}}]},
        {"choices": [{"delta": {"tool_calls": [
            {"index": 0, "function": {"arguments": " 1}"}}]}, "finish_reason": "tool_calls"}]},
        {"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 3}},
    ]
    accumulator = StreamAccumulator()
    assert [accumulator.add(chunk) for chunk in chunks] == ["Hel", "lo", "", ""]
    response = accumulator.response()
    assert response.content == "Hello" and response.model == "m"
    assert response.finish_reason == "tool_calls"
    assert response.tool_calls == (ToolCallRequest(id="c1", name="add", arguments='{"a": 1}'),)
    assert (response.usage.prompt_tokens, response.usage.completion_tokens) == (5, 3)


@pytest.mark.parametrize(("headers", "seconds"), [
    ({"llm_provider-retry-after": "1.5"}, 1.5),  # LiteLLM's copy of the upstream's
    ({"llm_provider-retry-after-ms": "250"}, 0.25),
    ({"retry-after-ms": "250"}, 0.25),
    ({"retry-after": "2", "llm_provider-retry-after": "9"}, 2.0),  # the server's own first
    ({"retry-after-ms": "100", "llm_provider-retry-after": "9"}, 0.1),
    ({"llm_provider-retry-after": "nan"}, None),
    ({"x-ratelimit-reset-requests": "1s"}, None),
])
def test_retry_after_is_read_from_the_server_then_from_a_relays_copy(
    headers: dict[str, str], seconds: float | None
) -> None:
    assert retry_after_seconds(headers) == seconds
