"""Tools for a replay: stand-ins built from the tool schemas the recorded requests carried.

A replay must send the very requests the recording sent, tools list included, but it
never runs a tool: every tool result (and every rejected call) comes from the cassette.
So a replayed notebook needs none of the original functions or MCP servers: each
stand-in has the recorded name, description and schema, accepts the arguments as
recorded, and refuses to run if anything ever asked it to.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..errors import ToolError
from .definition import Tool
from .split import SPLIT_TOOL
from .turns import ToolLoop

__all__ = ["recorded_tools", "replay_worker_loop"]


def _as_recorded(arguments: dict[str, Any]) -> dict[str, Any]:
    return arguments


def _stand_in(name: str) -> Any:
    def refuse(**_: Any) -> Any:
        raise ToolError(
            f"tool {name!r} is replayed from the cassette and cannot run; pass the real "
            "tool to run live"
        )

    return refuse


def recorded_tools(worker_requests: Iterable[Mapping[str, Any]]) -> list[Tool]:
    """Stand-ins for the tools the recorded workers were offered, in the recorded order.

    ``worker_requests``: the request bodies of a recording's worker calls (a cassette's
    ``RecordedCall.request`` where ``role == "worker"``), in the order they were sent.
    """
    for request in worker_requests:
        specs = request.get("tools")
        if not specs:
            continue
        tools = []
        for spec in specs:
            function = spec.get("function") or {}
            name = function.get("name", "")
            if name == SPLIT_TOOL:
                continue  # the loop offers its own, and a replay runs the split again
            tools.append(Tool(
                name=name,
                description=function.get("description", ""),
                parameters=dict(function.get("parameters") or {}),
                function=_stand_in(name),
                validate=_as_recorded,
            ))
        return tools
    return []


def replay_worker_loop(worker_requests: Iterable[Mapping[str, Any]]) -> ToolLoop | None:
    """The worker loop a replay of these recorded worker requests needs: None when no
    tools were offered."""
    tools = recorded_tools(worker_requests)
    return ToolLoop(tools) if tools else None
