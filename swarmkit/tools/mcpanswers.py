"""What an MCP server's answers become for a worker: its listed tools (every page), a
tool result's text, a tool error's text as the model should read it, a failed start's
one line, and a validator of a tool's arguments from its input schema.

Pure functions of the SDK's values (``mcp`` is imported only inside the one that needs
its types); ``mcp.MCPServer`` calls them.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

from .definition import ToolArgumentsError

__all__ = ["error_text", "exception_text", "list_all_tools", "result_text",
           "schema_validator"]

log = logging.getLogger("swarmkit")


async def list_all_tools(session: Any) -> list[Any]:
    from mcp_types import PaginatedRequestParams

    tools: list[Any] = []
    cursor = None
    while True:
        params = None if cursor is None else PaginatedRequestParams(cursor=cursor)
        page = await session.list_tools(params=params)
        tools += page.tools
        cursor = page.next_cursor
        if not cursor:
            return tools


def result_text(result: Any) -> str:
    parts = []
    for block in result.content or ():
        text = getattr(block, "text", None)
        parts.append(text if isinstance(text, str) else f"[{getattr(block, 'type', 'content')}]")
    if not parts and result.structured_content is not None:
        return json.dumps(result.structured_content, ensure_ascii=False)
    return "\n".join(parts)


def error_text(tool: str, text: str) -> str:
    """A tool's error as the model should read it. The MCP Python SDK prefixes the text a
    tool raised as its ToolError with ``Error executing tool NAME: ``, and sends that
    prefix alone for any other exception, whose text it keeps on the server."""
    prefix = f"Error executing tool {tool}"
    if text.strip() == prefix:
        return (f"{prefix} (the server sent no reason: the MCP SDK keeps an unexpected "
                "exception's text on the server; a tool that raises its ToolError sends it)")
    return text.removeprefix(f"{prefix}: ") or prefix


def exception_text(exc: BaseException) -> str:
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    if isinstance(exc, TimeoutError):
        return "no answer to the handshake in time"
    message = getattr(exc, "message", None) or str(exc)
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def schema_validator(
    name: str, schema: dict[str, Any]
) -> Callable[[dict[str, Any]], dict[str, Any]]:
    import jsonschema

    try:
        cls = jsonschema.validators.validator_for(schema)
        cls.check_schema(schema)
        validator = cls(schema)
    except jsonschema.SchemaError as exc:
        log.warning("MCP tool %r has an invalid input schema (%s); the server validates",
                    name, exc.message)
        return dict

    def validate(arguments: dict[str, Any]) -> dict[str, Any]:
        problems = [
            f"{'.'.join(str(p) for p in error.absolute_path) or '(arguments)'}: {error.message}"
            for error in validator.iter_errors(arguments)
        ]
        if problems:
            raise ToolArgumentsError(f"invalid arguments for {name}: {'; '.join(problems)}")
        return arguments

    return validate
