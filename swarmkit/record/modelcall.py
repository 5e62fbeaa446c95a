"""The values that flow through one model call: request, response, usage.

They are plain frozen data with a JSON form, so the provider, the call store, cassettes
and the Run all speak the same language. The seam that serves a call is
:class:`swarmkit.engine.modelcaller.ModelCaller`.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Literal

from .usage import Usage

if TYPE_CHECKING:
    from ..config.swarmconfig import RoleConfig

__all__ = [
    "CallOutcome",
    "CallSource",
    "ChatRequest",
    "ChatResponse",
    "ToolCallRequest",
    "ToolKey",
    "ToolOutcome",
    "canonical_json",
    "endpoint_key",
    "worst_case_tokens",
]

CallSource = Literal["live", "cache", "replay"]

# Per-message framing that chat templates add around content; used for the bound only.
_MESSAGE_OVERHEAD_TOKENS = 8
_REQUEST_OVERHEAD_TOKENS = 16


# OpenAI's reasoning models (o1, o3, o4-mini, gpt-5...) refuse max_tokens and take
# max_completion_tokens; most other OpenAI-compatible servers know only max_tokens.
_REASONING_MODEL = re.compile(r"(?:^|/)(?:o\d|gpt-5)", re.IGNORECASE)


def _max_tokens_field(model: str) -> str:
    return "max_completion_tokens" if _REASONING_MODEL.search(model) else "max_tokens"


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no spaces: equal values give equal strings."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


@dataclass(frozen=True, slots=True)
class ToolCallRequest:
    """One function call the model asked for."""

    id: str
    name: str
    arguments: str

    def to_dict(self) -> dict[str, str]:
        return {"id": self.id, "name": self.name, "arguments": self.arguments}

    def to_message_part(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments},
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ToolCallRequest:
        return cls(id=str(data["id"]), name=str(data["name"]), arguments=str(data["arguments"]))


@dataclass(frozen=True, slots=True)
class ChatRequest:
    """A chat-completions request, minus transport details (headers, keys, stream)."""

    model: str
    messages: tuple[dict[str, Any], ...]
    max_tokens: int | None = None
    temperature: float | None = None
    seed: int | None = None
    response_format: dict[str, Any] | None = None
    tools: tuple[dict[str, Any], ...] = ()
    tool_choice: str | None = None
    frequency_penalty: float | None = None
    presence_penalty: float | None = None
    stream: bool = field(default=False, compare=False)
    _fingerprint: str | None = field(default=None, init=False, repr=False, compare=False)

    def body(self) -> dict[str, Any]:
        """The JSON body fields that decide the answer (no ``stream``)."""
        body: dict[str, Any] = {"model": self.model, "messages": list(self.messages)}
        if self.max_tokens is not None:
            body[_max_tokens_field(self.model)] = self.max_tokens
        if self.temperature is not None:
            body["temperature"] = self.temperature
        if self.seed is not None:
            body["seed"] = self.seed
        if self.response_format is not None:
            body["response_format"] = self.response_format
        if self.tools:
            body["tools"] = list(self.tools)
        if self.tool_choice is not None:
            body["tool_choice"] = self.tool_choice
        if self.frequency_penalty is not None:
            body["frequency_penalty"] = self.frequency_penalty
        if self.presence_penalty is not None:
            body["presence_penalty"] = self.presence_penalty
        return body

    def fingerprint(self) -> str:
        """sha256 of the canonical body: equal requests, equal fingerprints.

        Worked out once per request: the call store, the recorder and the engine all
        ask for it on every call.
        """
        digest = self._fingerprint
        if digest is None:
            digest = hashlib.sha256(canonical_json(self.body()).encode()).hexdigest()
            object.__setattr__(self, "_fingerprint", digest)  # frozen: a cache, not state
        return digest

    def prompt_token_bound(self) -> int:
        """An upper bound on prompt tokens: no tokenizer yields more tokens than bytes."""
        size = len(canonical_json(list(self.messages)).encode())
        if self.tools:
            size += len(canonical_json(list(self.tools)).encode())
        if self.response_format is not None:
            size += len(canonical_json(self.response_format).encode())
        return size + _MESSAGE_OVERHEAD_TOKENS * len(self.messages) + _REQUEST_OVERHEAD_TOKENS

    def to_dict(self) -> dict[str, Any]:
        return self.body()

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ChatRequest:
        return cls(
            model=data["model"],
            messages=tuple(data["messages"]),
            max_tokens=data.get("max_tokens", data.get("max_completion_tokens")),
            temperature=data.get("temperature"),
            seed=data.get("seed"),
            response_format=data.get("response_format"),
            tools=tuple(data.get("tools") or ()),
            tool_choice=data.get("tool_choice"),
            frequency_penalty=data.get("frequency_penalty"),
            presence_penalty=data.get("presence_penalty"),
        )


@dataclass(frozen=True, slots=True)
class ChatResponse:
    """What a model call produced: text or tool calls, the finish reason and usage."""

    content: str | None
    usage: Usage
    tool_calls: tuple[ToolCallRequest, ...] = ()
    finish_reason: str | None = None
    model: str | None = None

    def assistant_message(self) -> dict[str, Any]:
        """The message to append to the conversation before tool results."""
        message: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            message["tool_calls"] = [call.to_message_part() for call in self.tool_calls]
        return message

    def to_dict(self) -> dict[str, Any]:
        return {
            "content": self.content,
            "usage": self.usage.to_dict(),
            "tool_calls": [call.to_dict() for call in self.tool_calls],
            "finish_reason": self.finish_reason,
            "model": self.model,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ChatResponse:
        return cls(
            content=data.get("content"),
            usage=Usage.from_dict(data.get("usage") or {}),
            tool_calls=tuple(ToolCallRequest.from_dict(c) for c in data.get("tool_calls") or ()),
            finish_reason=data.get("finish_reason"),
            model=data.get("model"),
        )


@dataclass(frozen=True, slots=True)
class CallOutcome:
    """A finished model call, whichever way it was served: what every ModelCaller returns.

    ``started``, ``latency`` and ``cost_usd`` are the recorded figures in replay, so a
    replayed run shows exactly what the recording showed; live calls leave ``started``
    None (the engine measures it) and ``cost_recorded`` False (the engine prices it).
    """

    response: ChatResponse
    source: CallSource
    attempts: int
    latency: float
    occurrence: int = 0
    started: float | None = None
    cost_usd: Decimal | None = None
    cost_recorded: bool = False


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """A finished tool execution (or its recording, in replay)."""

    result: str | None
    error: str | None
    duration: float
    source: CallSource = "live"
    started: float | None = None  # recorded start offset in replay


@dataclass(frozen=True, slots=True)
class ToolKey:
    """Identifies one tool call within a run, for recording and replay."""

    step: str  # worker-<i>
    hop: int
    name: str
    arguments: str  # canonical JSON of the parsed arguments, or the raw text if invalid
    occurrence: int = 0


def worst_case_tokens(request: ChatRequest, role: RoleConfig) -> int:
    """The most tokens ``request`` can count: its prompt bound plus its output cap."""
    return request.prompt_token_bound() + (request.max_tokens or role.max_tokens)


def endpoint_key(fingerprint: str, role: RoleConfig) -> str:
    """A request's identity at its endpoint: the cache's key, and what a comparison shares.

    The same model name at two endpoints (two vLLM hosts, Ollama and a gateway) may be
    two different models, so the key includes the endpoint. The embedded model's port
    changes with every start, so it is keyed as "local" and survives a kernel restart.
    """
    if role.base_url is None or role.is_local:
        return fingerprint
    return hashlib.sha256(f"{fingerprint}@{role.base_url}".encode()).hexdigest()
