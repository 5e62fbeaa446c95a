"""What the fake server sees and answers: requests, scripted replies, the default script.

:class:`FakeRequest` is what a handler receives, :class:`FakeReply` what it returns, and
:class:`RecordedRequest` what the server keeps of every chat request. This module also
turns a reply into OpenAI chat-completion JSON, plain or as streamed chunks.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ..record.modelcall import ToolCallRequest
from ..record.usage import Usage

__all__ = [
    "FakeReply",
    "FakeRequest",
    "RecordedRequest",
    "ToolCallSpec",
    "completion_body",
    "default_reply",
    "estimate_tokens",
    "role_of_step",
    "stream_chunks",
]

# A tool call in a reply: a ToolCallRequest, or (name, arguments as dict or JSON string).
ToolCallSpec = ToolCallRequest | tuple[str, Mapping[str, Any] | str]

_ROLES = ("planner", "worker", "reducer", "judge")


def role_of_step(step: str) -> str:
    """``"worker-3"`` -> ``"worker"``; a step with no known role prefix is a worker."""
    prefix = step.split("-", 1)[0]
    return prefix if prefix in _ROLES else "worker"


def estimate_tokens(chars: int) -> int:
    """The fake tokenizer: one token per four characters, rounded up."""
    return math.ceil(chars / 4)


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """One chat-completions request as the server received it."""

    step: str  # X-Swarm-Step, "" when absent
    attempt: int | None  # X-Swarm-Attempt, None when absent or not a number
    run_id: str | None  # X-Swarm-RunRecord
    authorization: str | None  # the Authorization header, verbatim
    body: dict[str, Any]
    arrived_at: float  # time.monotonic() when the request arrived
    headers: Mapping[str, str] = field(default_factory=dict, compare=False)


@dataclass(frozen=True, slots=True)
class FakeRequest:
    """What a handler receives."""

    body: dict[str, Any]
    step: str
    attempt: int
    headers: Mapping[str, str]
    run_id: str | None = None

    @property
    def role(self) -> str:
        return role_of_step(self.step)

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages") or [])

    @property
    def model(self) -> str:
        return str(self.body.get("model", ""))

    @property
    def tools(self) -> list[dict[str, Any]]:
        return list(self.body.get("tools") or [])

    @property
    def stream(self) -> bool:
        return bool(self.body.get("stream"))

    @property
    def response_format(self) -> dict[str, Any] | None:
        value = self.body.get("response_format")
        return value if isinstance(value, dict) else None

    @property
    def max_tokens(self) -> int | None:
        value = self.body.get("max_completion_tokens", self.body.get("max_tokens"))
        return value if isinstance(value, int) else None

    @property
    def last_user_message(self) -> str:
        for message in reversed(self.messages):
            if message.get("role") == "user":
                return message_text(message)
        return ""

    def prompt_chars(self) -> int:
        return sum(len(message_text(m)) for m in self.messages)


def message_text(message: Mapping[str, Any]) -> str:
    """The text of a message: its content string, or its text parts joined."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(part.get("text", "")) for part in content if isinstance(part, Mapping)
        )
    return ""


@dataclass(frozen=True, slots=True)
class FakeReply:
    """A scripted answer.

    ``usage=None`` computes usage with the fake tokenizer (prompt from every message's
    text, completion from ``content``, capped at the request's ``max_tokens``);
    a :class:`~swarmkit.record.modelcall.Usage` or a raw dict is sent as given; ``False`` sends no
    usage at all (like llama.cpp when streaming). ``latency`` overrides the server's.
    """

    content: str | None = None
    tool_calls: Sequence[ToolCallSpec] = ()
    usage: Usage | Mapping[str, Any] | Literal[False] | None = None
    finish_reason: str | None = None
    latency: float | None = None


def default_reply(request: FakeRequest, *, plan_tasks: int = 4) -> FakeReply:
    """The built-in script, by role (from the ``X-Swarm-Step`` header).

    - judge: JSON ``{"score": 8, "reason": "Scripted judge: ..."}``.
    - planner (or any other request with ``response_format``): JSON
      ``{"tasks": ["Sub-task 1 of <first 40 chars of the last user message>", ...]}``
      with ``plan_tasks`` tasks.
    - reducer: ``"Final answer merging N results"``, N being the number of lines in the
      user messages that start with ``"Worker "`` or, in a tree reduction's final merge,
      ``"Partial answer "`` (after leading spaces and ``#``).
    - worker (and anything else): ``"Result for: <the last user message>"``.
    """
    text = request.last_user_message
    if request.role == "judge":
        return FakeReply(content=json.dumps(
            {"score": 8, "reason": "Scripted judge: the answer addresses the task."}))
    if request.role == "planner" or request.response_format is not None:
        head = text[:40]
        tasks = [f"Sub-task {i} of {head}" for i in range(1, plan_tasks + 1)]
        return FakeReply(content=json.dumps({"tasks": tasks}))
    if request.role == "reducer":
        count = sum(
            1
            for message in request.messages
            if message.get("role") == "user"
            for line in message_text(message).splitlines()
            if line.lstrip(" #").startswith(("Worker ", "Partial answer "))
        )
        return FakeReply(content=f"Final answer merging {count} results")
    return FakeReply(content=f"Result for: {text}")


def _tool_call_parts(request: FakeRequest, reply: FakeReply) -> list[dict[str, Any]]:
    # Ids depend only on the conversation so far, so they are the same in every run
    # and differ between the turns of one worker's tool loop.
    turn = sum(1 for m in request.messages if m.get("role") == "assistant")
    parts = []
    for index, spec in enumerate(reply.tool_calls):
        if isinstance(spec, ToolCallRequest):
            call_id, name, arguments = spec.id, spec.name, spec.arguments
        else:
            name, raw = spec
            call_id = f"call_{turn}_{index}"
            arguments = raw if isinstance(raw, str) else json.dumps(raw)
        parts.append(
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
        )
    return parts


def _usage_json(request: FakeRequest, reply: FakeReply) -> dict[str, Any] | None:
    if reply.usage is False:
        return None
    if isinstance(reply.usage, Mapping):
        return dict(reply.usage)
    if isinstance(reply.usage, Usage):
        usage = reply.usage
        prompt, completion = usage.prompt_tokens or 0, usage.completion_tokens or 0
        cached, reasoning = usage.cached_tokens or 0, usage.reasoning_tokens or 0
    else:
        prompt = estimate_tokens(request.prompt_chars())
        completion = estimate_tokens(len(reply.content or ""))
        if request.max_tokens is not None:
            completion = min(completion, request.max_tokens)
        cached = reasoning = 0
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": cached},
        "completion_tokens_details": {"reasoning_tokens": reasoning},
    }


def _finish_reason(reply: FakeReply) -> str:
    if reply.finish_reason is not None:
        return reply.finish_reason
    return "tool_calls" if reply.tool_calls else "stop"


def completion_body(request: FakeRequest, reply: FakeReply, completion_id: str) -> dict[str, Any]:
    """The non-streamed chat-completion JSON for ``reply``."""
    message: dict[str, Any] = {"role": "assistant", "content": reply.content}
    tool_calls = _tool_call_parts(request, reply)
    if tool_calls:
        message["tool_calls"] = tool_calls
    body: dict[str, Any] = {
        "id": completion_id,
        "object": "chat.completion",
        "created": 0,
        "model": request.model,
        "choices": [{"index": 0, "message": message, "finish_reason": _finish_reason(reply)}],
    }
    usage = _usage_json(request, reply)
    if usage is not None:
        body["usage"] = usage
    return body


def _split_text(text: str, size: int = 12) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def stream_chunks(request: FakeRequest, reply: FakeReply, completion_id: str) -> list[str]:
    """The SSE ``data:`` payloads for ``reply``, ``[DONE]`` included."""

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": completion_id,
            "object": "chat.completion.chunk",
            "created": 0,
            "model": request.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    chunks = [chunk({"role": "assistant", "content": ""})]
    chunks += [chunk({"content": piece}) for piece in _split_text(reply.content or "")]
    for index, part in enumerate(_tool_call_parts(request, reply)):
        arguments = part["function"]["arguments"]
        half = len(arguments) // 2
        first = {"name": part["function"]["name"], "arguments": arguments[:half]}
        chunks.append(chunk({"tool_calls": [
            {"index": index, "id": part["id"], "type": "function", "function": first}
        ]}))
        chunks.append(chunk({"tool_calls": [
            {"index": index, "function": {"arguments": arguments[half:]}}
        ]}))
    chunks.append(chunk({}, _finish_reason(reply)))
    options = request.body.get("stream_options")
    usage = _usage_json(request, reply)
    if isinstance(options, dict) and options.get("include_usage") and usage is not None:
        last = chunk({})
        last["choices"] = []
        last["usage"] = usage
        chunks.append(last)
    return [json.dumps(c) for c in chunks] + ["[DONE]"]
