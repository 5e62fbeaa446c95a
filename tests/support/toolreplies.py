"""A FakeServer handler for runs with one tool: each worker calls it once, then answers
with what it returned (test-only machinery)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from swarmkit.testing import FakeReply, FakeRequest

__all__ = ["tool_then_answer"]


def tool_then_answer(
    tool: str, answer: str = "ran in {}",
    arguments: Callable[[FakeRequest], dict[str, Any]] = lambda request: {},
) -> Callable[[FakeRequest], FakeReply]:
    """The handler: a worker offered tools calls ``tool`` (with ``arguments(request)``)
    once, then answers ``answer`` formatted with the tool's result; a worker offered none
    answers ``done``; the planner's and the reducer's answer is ``merged``."""
    def handle(request: FakeRequest) -> FakeReply:
        if request.role != "worker":
            return FakeReply(content="merged")
        if not request.tools:
            return FakeReply(content="done")
        said = [m["content"] for m in request.messages if m.get("role") == "tool"]
        if not said:
            return FakeReply(tool_calls=[(tool, arguments(request))])
        return FakeReply(content=answer.format(said[0]))

    return handle
