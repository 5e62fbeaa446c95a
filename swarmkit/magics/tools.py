"""Tools in the magic: ``--tools a,b`` and ``%swarm mcp add | list | remove``.

``--tools`` picks ``@swarmkit.tool`` objects from the notebook's namespace (or an MCP
tool ``NAME__tool`` by name). The tools of every MCP server added with ``%swarm mcp
add`` are offered to every ``%%swarm`` cell of the session until ``%swarm mcp remove``:
all the tools it lists, or those ``--tools`` names, less those ``--exclude-tools`` names,
and then only those ``%swarm config mcp_tools=...`` leaves (``mcp_exclude_tools``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError

from ..config.options import TOOL_CHOICE_KEYS
from ..config.wording import counted, kind_of
from ..errors import ConfigError, MCPError
from ..tools import Tool, mcp_registry, parse_mcp_add, session_tools
from ..tools.registry import choose_tools
from .output import SmallTable

if TYPE_CHECKING:
    from .session import Session

__all__ = ["mcp_command", "resolve_tools", "with_session_tools"]

_MCP_USAGE = ("usage: %swarm mcp add NAME [--tools A,B] [--exclude-tools C,D] -- command "
              "[args...] | mcp list | mcp remove NAME")
_DESCRIPTION_WIDTH = 70


def resolve_tools(value: str, namespace: Mapping[str, Any]) -> list[Tool]:
    """``"lookup,search"`` -> the Tool objects those names hold in the notebook."""
    names = [name.strip() for name in str(value).split(",") if name.strip()]
    if not names:
        raise UsageError("%%swarm: --tools needs tool names, e.g. --tools lookup,search")
    mcp_tools = {t.name: t for t in mcp_registry().tools()}
    chosen: list[Tool] = []
    for name in names:
        found = namespace.get(name, mcp_tools.get(name))
        if found is None:
            raise UsageError(
                f"%%swarm: --tools {name}: no such name in the notebook; define it with "
                "@swarmkit.tool first (MCP tools come from %swarm mcp add)"
            )
        if not isinstance(found, Tool):
            raise UsageError(
                f"%%swarm: --tools {name}: is {kind_of(found)}, not a tool; "
                "decorate the function with @swarmkit.tool"
            )
        chosen.append(found)
    return chosen


def with_session_tools(
    engine_options: Mapping[str, Any], session_options: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """``engine_options`` plus the tools of the session's running MCP servers, narrowed
    by the session's ``mcp_tools`` / ``mcp_exclude_tools`` (``%swarm config``)."""
    options = dict(engine_options)
    chosen = {key: (session_options or {}).get(key) for key in TOOL_CHOICE_KEYS}
    if any(chosen.values()):
        try:
            served = choose_tools(mcp_registry(), chosen["mcp_tools"],
                                  chosen["mcp_exclude_tools"] or ())
        except ConfigError as exc:
            raise UsageError(f"%%swarm: {exc} (set by %swarm config)") from None
    else:
        served = session_tools()
    if served:
        given = list(options.get("tools") or ())
        options["tools"] = given + [t for t in served if t not in given]
    return options


def mcp_command(magics: Session, argv: list[str]) -> SmallTable | None:
    if not argv:
        raise UsageError(f"%swarm mcp: {_MCP_USAGE}")
    action, rest = argv[0], argv[1:]
    registry = mcp_registry()
    try:
        if action == "add":
            spec = parse_mcp_add(rest)
            server = registry.add_sync(spec.name, spec.command, tools=spec.tools,
                                       exclude_tools=spec.exclude_tools)
            return _added_table(server)
        if action == "list" and not rest:
            return _servers_table(registry)
        if action == "remove" and len(rest) == 1:
            registry.remove_sync(rest[0])
            print(f"MCP server {rest[0]} stopped")
            return None
    except (ConfigError, MCPError) as exc:
        raise UsageError(f"%swarm mcp {action}: {exc}") from None
    raise UsageError(f"%swarm mcp: {_MCP_USAGE}")


def _added_table(server: Any) -> SmallTable:
    rows = [(t.name, _first_line(t.description)) for t in server.tools]
    held = [t.name for t in server.listed if t not in server.tools]
    offered = (f"offered to every %%swarm cell; not offered: {', '.join(held)}" if held else
               "all its tools, offered to every %%swarm cell (--tools A,B offers only some)")
    return SmallTable(f"MCP server {server.name}: {counted(len(rows), 'tool')}",
                      ("tool", "description"),
                      rows, f"{offered}; %swarm mcp remove {server.name} withdraws them")


def _servers_table(registry: Any) -> SmallTable:
    rows = [
        (s.name, s.state, ", ".join(t.name for t in s.tools) if s.running else "-",
         ", ".join(t.name for t in s.listed if t not in s.tools) if s.running else "-",
         " ".join(s.command))
        for s in registry
    ]
    return SmallTable("MCP servers", ("name", "state", "tools", "not offered", "command"),
                      rows, "add one with %swarm mcp add NAME [--tools A,B] -- command "
                      "[args...]")


def _first_line(text: str) -> str:
    line = (text or "").strip().splitlines()[0] if (text or "").strip() else ""
    return line if len(line) <= _DESCRIPTION_WIDTH else line[: _DESCRIPTION_WIDTH - 1] + "…"
