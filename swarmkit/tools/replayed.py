"""Tools for a replay: stand-ins built from the tool schemas the recorded requests carried.

A replay must send the very requests the recording sent, tools list included, but it
never runs a tool: every tool result (and every rejected call) comes from the cassette.
So a replayed notebook needs none of the original functions or MCP servers: each
stand-in has the recorded name, description and schema, accepts the arguments as
recorded, and refuses to run if anything ever asked it to.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import ToolError
from .definition import Tool
from .turns import ToolLoop

if TYPE_CHECKING:
    from ..store.cassette import Cassette

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


def recorded_tools(cassette: Cassette) -> list[Tool]:
    """Stand-ins for the tools the recorded workers were offered, in the recorded order."""
    for call in cassette.calls:
        specs = call.request.get("tools") if call.role == "worker" else None
        if not specs:
            continue
        tools = []
        for spec in specs:
            function = spec.get("function") or {}
            name = function.get("name", "")
            tools.append(Tool(
                name=name,
                description=function.get("description", ""),
                parameters=dict(function.get("parameters") or {}),
                function=_stand_in(name),
                validate=_as_recorded,
            ))
        return tools
    return []


def replay_worker_loop(cassette: Cassette) -> ToolLoop | None:
    """The worker loop a replay of ``cassette`` needs: None when no tools were offered."""
    tools = recorded_tools(cassette)
    return ToolLoop(tools) if tools else None
