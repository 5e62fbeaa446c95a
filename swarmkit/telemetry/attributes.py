"""Span attributes: the OpenTelemetry GenAI semantic conventions, plus swarmkit's ids.

The GenAI names are those of the conventions' latest experimental version (v1.37 and
later: ``gen_ai.provider.name``, not the older ``gen_ai.system``; content as
``gen_ai.input.messages`` / ``gen_ai.output.messages`` JSON). Values are built here from
events only; message content is built only when the run asked for it and always goes
through swarmkit's secret scrubber first.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from decimal import Decimal
from typing import Any
from urllib.parse import urlsplit

from ..credentials.endpoints import OPENAI_BASE_URL
from ..credentials.scrub import scrub
from ..record.rows import CallRecord
from ..record.usage import Usage

__all__ = [
    "OP_AGENT",
    "OP_CHAT",
    "OP_TOOL",
    "OP_WORKFLOW",
    "PROVIDER",
    "WORKFLOW",
    "call_attributes",
    "error_type",
    "input_messages",
    "output_messages",
    "request_attributes",
    "role_of",
    "scrubbed",
    "usage_attributes",
]

OP_WORKFLOW, OP_AGENT, OP_CHAT, OP_TOOL = "invoke_workflow", "invoke_agent", "chat", "execute_tool"
# Every endpoint swarmkit calls speaks the OpenAI API through the openai client: the
# conventions ask for the instrumentation's best knowledge, and server.address names the
# actual host.
PROVIDER = "openai"
WORKFLOW = "swarmkit"  # gen_ai.workflow.name: low cardinality, one name for every run
_ROLES = ("planner", "worker", "reducer", "judge")
# A class name leading an error message ("ProviderError: ...", "BudgetExceeded: ...").
_ERROR_NAME = re.compile(r"^([A-Z][A-Za-z0-9_]*)(?::|$)")


def role_of(step: str) -> str:
    """``worker-3`` -> ``worker``; ``reducer-1.2`` -> ``reducer``; ``planner``;
    ``judge-0`` -> ``judge``."""
    head = step.split("-", 1)[0]
    return head if head in _ROLES else "worker"


def error_type(error: str | None, status: int | None = None) -> str:
    """``error.type``: the HTTP status when there is one, else the error's class name
    (``ProviderError``, ``ToolError``, ...), ``cancelled``, or ``_OTHER``."""
    if status is not None:
        return str(status)
    text = (error or "").strip()
    if text.startswith("cancelled"):
        return "cancelled"
    match = _ERROR_NAME.match(text)
    return match.group(1) if match else "_OTHER"


def _server(base_url: str | None) -> dict[str, Any]:
    """``server.address`` and ``server.port`` of a role's endpoint (never its userinfo)."""
    try:
        parts = urlsplit(base_url or OPENAI_BASE_URL)
        port = parts.port or {"http": 80, "https": 443}.get(parts.scheme)
    except ValueError:
        return {}
    if not parts.hostname:
        return {}
    return {"server.address": parts.hostname, **({"server.port": port} if port else {})}


def request_attributes(config: Mapping[str, Any], role: str) -> dict[str, Any]:
    """What a role's requests ask for, from the run's config summary (RunStarted)."""
    settings = config.get(role)
    if not isinstance(settings, Mapping):
        return {}
    attributes: dict[str, Any] = _server(settings.get("base_url"))
    for key, name in (("max_tokens", "gen_ai.request.max_tokens"),
                      ("temperature", "gen_ai.request.temperature"),
                      ("seed", "gen_ai.request.seed")):
        value = settings.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            attributes[name] = value
    return attributes


def _cost(cost: Decimal | None) -> dict[str, Any]:
    # A float, so a tracing backend can sum it; unknown stays absent, never 0.
    return {} if cost is None else {"swarmkit.cost_usd": float(cost)}


def usage_attributes(usage: Usage, cost: Decimal | None) -> dict[str, Any]:
    """Token counts (unknown ones left out) and the cost in USD."""
    attributes: dict[str, Any] = _cost(cost)
    if usage.prompt_tokens is not None:
        attributes["gen_ai.usage.input_tokens"] = usage.prompt_tokens
    if usage.completion_tokens is not None:
        attributes["gen_ai.usage.output_tokens"] = usage.completion_tokens
    if usage.cached_tokens:
        attributes["gen_ai.usage.cache_read.input_tokens"] = usage.cached_tokens
    return attributes


def call_attributes(call: CallRecord, response_model: str | None) -> dict[str, Any]:
    """What the final attempt of a call learned: usage, cost, source, response model."""
    attributes = {"swarmkit.source": call.source, **usage_attributes(call.usage, call.cost_usd)}
    if response_model:
        attributes["gen_ai.response.model"] = response_model
    return attributes


def scrubbed(text: str) -> str:
    return scrub(text)


def input_messages(text: str) -> str:
    """``gen_ai.input.messages``: one user message, as the conventions' JSON."""
    return json.dumps([{"role": "user", "parts": [{"type": "text", "content": scrub(text)}]}],
                      ensure_ascii=False)


def output_messages(text: str) -> str:
    """``gen_ai.output.messages``: one assistant message, as the conventions' JSON."""
    return json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": scrub(text)}],
                        "finish_reason": "stop"}], ensure_ascii=False)
