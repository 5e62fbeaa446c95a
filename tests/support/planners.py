"""FakeServer handlers for planners that misbehave in a known way, shared by the tests
that drive the planner's ladder through a run (the engine's) and through a Plan (api)."""

from __future__ import annotations

from collections.abc import Callable

from swarmkit.testing import FakeReply, FakeRequest, Fault

__all__ = ["json_schema_refused"]


def json_schema_refused(plan_reply: str) -> Callable[[FakeRequest], FakeReply | Fault]:
    """A server whose planner refuses ``response_format`` json_schema as llama.cpp does,
    answers ``plan_reply`` on any other rung, and whose other steps answer ``done STEP``."""

    def handler(request: FakeRequest) -> FakeReply | Fault:
        if request.step == "planner":
            if (request.response_format or {}).get("type") == "json_schema":
                return Fault.llama_cpp_json_schema()
            return FakeReply(content=plan_reply)
        return FakeReply(content=f"done {request.step}")

    return handler
