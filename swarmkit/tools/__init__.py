"""Tools for workers: ``@tool`` Python functions, MCP servers, the worker tool loop, and
the built-in ``split_task`` of a tree (depth > 1)."""

from __future__ import annotations

from .definition import (
    TOOL_NAME_PATTERN,
    Tool,
    ToolArgumentsError,
    check_tool_name,
    parse_arguments,
    parse_docstring,
    render_result,
    tool,
)
from .mcp import (
    MCPServer,
    MCPServerSpec,
    MCPServerState,
    mcp_server_spec,
    parse_mcp_add,
    parse_mcp_command,
)
from .registry import MCPRegistry, mcp_registry, session_tools
from .split import SPLIT_TOOL, split_spec
from .turns import (
    FINAL_ANSWER_PROMPT,
    ToolLoop,
    build_worker_loop,
    collect_tools,
    describe_error,
    tree_loop,
)

__all__ = [
    "FINAL_ANSWER_PROMPT",
    "SPLIT_TOOL",
    "TOOL_NAME_PATTERN",
    "MCPRegistry",
    "MCPServer",
    "MCPServerSpec",
    "MCPServerState",
    "Tool",
    "ToolArgumentsError",
    "ToolLoop",
    "build_worker_loop",
    "check_tool_name",
    "collect_tools",
    "describe_error",
    "mcp_registry",
    "mcp_server_spec",
    "parse_arguments",
    "parse_docstring",
    "parse_mcp_add",
    "parse_mcp_command",
    "render_result",
    "session_tools",
    "split_spec",
    "tool",
    "tree_loop",
]
