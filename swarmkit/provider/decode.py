"""Reading what an OpenAI-compatible server sent: completions, streamed chunks, usage, errors.

It reads a completion's parsed JSON, or the SDK's objects by attribute (duck typing), so
it never imports ``openai``; :mod:`swarmkit.provider` feeds it. Missing usage is unknown (``None``),
never zero, because servers such as llama.cpp omit it when streaming.
"""

from __future__ import annotations

import email.utils
import json
import math
import re
import sys
import time
from collections.abc import Mapping
from typing import Any

from ..record.modelcall import ChatResponse, ToolCallRequest
from ..record.usage import Usage

# Longer than any model name or finish reason: a longer text is not worth sharing.
_LABEL_CHARS = 128

__all__ = [
    "MAX_RETRY_AFTER",
    "ServerSentEvents",
    "StreamAccumulator",
    "error_message",
    "first_line",
    "parse_completion",
    "parse_usage",
    "response_text",
    "retry_after_seconds",
]

# The longest wait any Retry-After header is read as (a day); OpenAIProvider waits at
# most ``backoff_max`` anyway.
MAX_RETRY_AFTER = 86400.0

_TAG = re.compile(r"<[^>]*>")


def _field(value: Any, name: str) -> Any:
    """``value[name]`` of parsed JSON, or ``value.name`` of an SDK object; None if absent."""
    if isinstance(value, dict):
        return value.get(name)
    return getattr(value, name, None)


def _label(value: Any) -> Any:
    """A model name or finish reason as one shared string: every reply repeats the same
    few, and a large run keeps every reply: one string each would grow with N."""
    return sys.intern(value) if isinstance(value, str) and len(value) <= _LABEL_CHARS else value


def _text(content: Any) -> str | None:
    """Message content as text: a string, or the text parts of a list joined."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(_field(part, "text") or "") for part in content)
    return str(content)


def parse_completion(completion: Any) -> ChatResponse | None:
    """A non-streamed completion (parsed JSON or an SDK object) as a ChatResponse.

    None when it has no choices; a body that is text, not JSON, raises ValueError.
    """
    if isinstance(completion, str | bytes):
        completion = json.loads(completion)  # JSON sent with a non-JSON content type
    choices = _field(completion, "choices")
    if not choices or not isinstance(choices, list | tuple):
        return None
    choice = choices[0]
    message = _field(choice, "message")
    if message is None:
        return None
    tool_calls = []
    for call in _field(message, "tool_calls") or ():
        function = _field(call, "function")
        if function is None:
            continue
        arguments = _field(function, "arguments")
        if not isinstance(arguments, str):  # some servers send an object, not a string
            arguments = json.dumps(arguments if arguments is not None else {})
        tool_calls.append(ToolCallRequest(
            id=str(_field(call, "id") or ""), name=str(_field(function, "name") or ""),
            arguments=arguments,
        ))
    return ChatResponse(
        content=_text(_field(message, "content")),
        usage=parse_usage(_field(completion, "usage")),
        tool_calls=tuple(tool_calls),
        finish_reason=_label(_field(choice, "finish_reason")),
        model=_label(_field(completion, "model")),
    )


def parse_usage(usage: Any) -> Usage:
    """Usage (parsed JSON or SDK) -> Usage. Absent usage is unknown (None); an absent
    detail counts 0."""
    if usage is None:
        return Usage(None, None, None, None, requests=1)
    return Usage(
        prompt_tokens=_field(usage, "prompt_tokens"),
        completion_tokens=_field(usage, "completion_tokens"),
        cached_tokens=_field(_field(usage, "prompt_tokens_details"), "cached_tokens") or 0,
        reasoning_tokens=(
            _field(_field(usage, "completion_tokens_details"), "reasoning_tokens") or 0
        ),
        requests=1,
    )


class StreamAccumulator:
    """Joins streamed chunks into one ChatResponse: text, tool-call pieces and usage."""

    def __init__(self) -> None:
        self._content: list[str] = []
        self._calls: dict[int, dict[str, Any]] = {}
        self._usage: Any = None
        self.model: str | None = None
        self.finish_reason: str | None = None

    def add(self, chunk: Any) -> str:
        """Take one chunk (parsed JSON or an SDK object); returns the text it adds."""
        self.model = _field(chunk, "model") or self.model
        self._usage = _field(chunk, "usage") or self._usage
        text = ""
        for choice in _field(chunk, "choices") or ():
            delta = _field(choice, "delta")
            content = _field(delta, "content") if delta is not None else None
            if content:
                text += content
            for part in (_field(delta, "tool_calls") if delta is not None else None) or ():
                index = _field(part, "index") or 0
                slot = self._calls.setdefault(index, {"id": "", "name": "", "args": []})
                slot["id"] = _field(part, "id") or slot["id"]
                function = _field(part, "function")
                if function is not None:
                    slot["name"] = _field(function, "name") or slot["name"]
                    slot["args"].append(_field(function, "arguments") or "")
            self.finish_reason = _field(choice, "finish_reason") or self.finish_reason
        if text:
            self._content.append(text)
        return text

    def response(self) -> ChatResponse:
        tool_calls = tuple(
            ToolCallRequest(id=slot["id"], name=slot["name"], arguments="".join(slot["args"]))
            for _, slot in sorted(self._calls.items())
        )
        return ChatResponse(
            content="".join(self._content) if self._content or not tool_calls else None,
            usage=parse_usage(self._usage),
            tool_calls=tool_calls,
            finish_reason=_label(self.finish_reason),
            model=_label(self.model),
        )


class ServerSentEvents:
    """Assembles the ``data`` of server-sent events from a stream's lines, one at a time.

    A plain object rather than an async generator: the provider reads the body to its end
    itself, so no half-read generator is left for the event loop to finalize later.
    """

    def __init__(self) -> None:
        self._data: list[str] = []

    def feed(self, line: str) -> str | None:
        """Take one line (without its ending); returns an event's data when one ends."""
        if not line:
            return self.end()
        if line.startswith(":"):  # a comment (keep-alive)
            return None
        name, _, value = line.partition(":")
        if name == "data":
            self._data.append(value[1:] if value.startswith(" ") else value)
        return None

    def end(self) -> str | None:
        """The data of an event the body ended inside, if any."""
        data, self._data = self._data, []
        return "\n".join(data) if data else None


def response_text(response: Any) -> str:
    """An HTTP response's body as text, or "" when it cannot be read."""
    try:
        return str(response.text)
    except Exception:  # an unread or undecodable body: nothing to show
        return ""


def error_message(body: object) -> str:
    """The ``message`` of a JSON error body (the SDK unwraps ``{"error": {...}}``)."""
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return str(error["message"])
        if isinstance(error, str):
            return error
    return ""


def first_line(text: str) -> str:
    """The first line with words in it, markup removed (an HTML error page's title)."""
    for line in text.splitlines():
        stripped = _TAG.sub(" ", line).strip()
        if stripped:
            return stripped
    return ""


# Where a wait may be named, in the order read: the server's own headers, then a relay's
# copies of its upstream's. LiteLLM's proxy moves every upstream header under an
# ``llm_provider-`` prefix, so a 429 it passes on carries ``llm_provider-retry-after``
# and no ``Retry-After`` (checked with LiteLLM 1.106).
_RETRY_AFTER_PREFIXES = ("", "llm_provider-")


def retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """Seconds from ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date), or,
    when the server sent neither, from a relay's copies of them
    (``llm_provider-retry-after-ms``, ``llm_provider-retry-after``).

    A server's header is input like any other: a number is only digits (``nan``, ``inf``,
    ``1e400`` and other words are ignored, so the caller's own backoff applies), a
    negative number or a date in the past means "now" (0), and an unreadable date is
    ignored. The result is within 0 .. ``MAX_RETRY_AFTER`` (a day, for a huge number or a
    far date); the provider then caps it at ``backoff_max``, so no header stalls a run.
    """
    for prefix in _RETRY_AFTER_PREFIXES:
        raw_ms, raw = headers.get(f"{prefix}retry-after-ms"), headers.get(f"{prefix}retry-after")
        if raw_ms is not None or raw is not None:
            return _retry_after(raw_ms, raw)
    return None


def _retry_after(raw_ms: str | None, raw: str | None) -> float | None:
    ms = _delay_number(raw_ms)
    seconds = ms / 1000 if ms is not None else _delay_number(raw)
    if seconds is None and raw:
        try:
            seconds = email.utils.parsedate_to_datetime(raw).timestamp() - time.time()
        except (TypeError, ValueError, OverflowError, IndexError):
            return None
    if seconds is None or math.isnan(seconds):
        return None
    return min(max(0.0, seconds), MAX_RETRY_AFTER)


_DELAY = re.compile(r"\s*([+-]?)(\d+)(?:\.(\d*))?\s*")


def _delay_number(raw: str | None) -> float | None:
    """A plain decimal number (a negative one: 0; a long one may be inf), else None."""
    match = _DELAY.fullmatch(raw) if raw else None
    if match is None:
        return None
    sign, whole, fraction = match.groups()
    return 0.0 if sign == "-" else float(f"{whole}.{fraction or 0}")
