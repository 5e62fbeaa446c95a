"""The session's MCP servers by name: one registry per process (a Jupyter kernel).

``%swarm mcp add`` and ``swarmkit.run(mcp_servers=...)`` put servers here; they stay up
for the session, are reused by name and command, and are stopped at interpreter exit.
A server offers the tools its latest registration chose (all of them unless ``tools=`` or
``exclude_tools=`` says otherwise); registering a running server again with the same
command changes only that choice.
"""

from __future__ import annotations

import atexit
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from ..engine.background import BackgroundLoop, background_loop
from ..errors import ConfigError, MCPError
from .definition import Tool
from .mcp import MCPServer, MCPServerSpec

__all__ = ["MCPRegistry", "choose_tools", "mcp_registry", "session_tools", "tool_names"]


class MCPRegistry:
    """The session's MCP servers by name (one per kernel / process)."""

    def __init__(self, bridge: BackgroundLoop | None = None) -> None:
        self._bridge = bridge
        self._servers: dict[str, MCPServer] = {}
        self._lock = threading.Lock()

    def __iter__(self) -> Iterator[MCPServer]:
        with self._lock:
            return iter(list(self._servers.values()))

    def __len__(self) -> int:
        return len(self._servers)

    def get(self, name: str) -> MCPServer | None:
        return self._servers.get(name)

    def tools(self) -> list[Tool]:
        """The tools of every running server."""
        return [tool for server in self if server.running for tool in server.tools]

    async def add(
        self, name: str, command: Sequence[str], *, env: Mapping[str, str] | None = None,
        cwd: str | None = None, tools: Sequence[str] | None = None,
        exclude_tools: Sequence[str] = (),
    ) -> MCPServer:
        """Start a server under ``name`` (replacing one of that name); MCPError if it fails,
        ConfigError if ``tools`` or ``exclude_tools`` names a tool it does not list.

        A running server with the same command is reused, offering the tools chosen now.
        """
        existing = self._servers.get(name)
        if existing is not None:
            if existing.running and existing.command == tuple(command) and existing.env == env:
                existing.offer(tools, exclude_tools)
                return existing
            await self.remove(name)
        server = MCPServer(name, command, env=env, cwd=cwd, bridge=self._bridge, tools=tools,
                           exclude_tools=exclude_tools)
        await server.start()
        with self._lock:
            self._servers[name] = server
        return server

    def add_sync(self, name: str, command: Sequence[str], **options: Any) -> MCPServer:
        bridge = self._bridge or background_loop()
        return bridge.wait(bridge.submit(self.add(name, command, **options)))

    async def add_spec(self, spec: MCPServerSpec) -> MCPServer:
        """:meth:`add` for a server given as a spec (``swarmkit.tools.mcp_server_spec``)."""
        return await self.add(spec.name, spec.command, env=spec.env, tools=spec.tools,
                              exclude_tools=spec.exclude_tools)

    async def remove(self, name: str) -> None:
        with self._lock:
            server = self._servers.pop(name, None)
        if server is None:
            raise MCPError(f"no MCP server named {name!r}; `%swarm mcp list` shows them")
        await server.stop()

    def remove_sync(self, name: str) -> None:
        bridge = self._bridge or background_loop()
        bridge.wait(bridge.submit(self.remove(name)))

    def stop_all(self) -> None:
        """Stop every server (at interpreter exit)."""
        with self._lock:
            servers = list(self._servers.values())
            self._servers.clear()
        for server in servers:
            server.stop_sync()


def tool_names(value: Sequence[str] | str | None) -> list[str]:
    """``"a__x, b__y"`` or ``["a__x", "b__y"]`` -> ``["a__x", "b__y"]`` (None: [])."""
    items = value.split(",") if isinstance(value, str) else list(value or ())
    return [str(item).strip() for item in items if str(item).strip()]


def choose_tools(
    servers: Iterable[MCPServer], tools: Sequence[str] | str | None = None,
    exclude_tools: Sequence[str] | str = (),
) -> list[Tool]:
    """The tools the running ``servers`` offer, narrowed by names across servers, each
    ``NAME__tool``: ``tools`` keeps only the named tools of each server it names (a
    server it does not name keeps all of its own), ``exclude_tools`` drops the named
    ones. A name whose server is not running, or that its server does not offer, is a
    one-line ConfigError naming the option (``mcp_tools``, ``mcp_exclude_tools``)."""
    running = {s.name: s for s in servers if s.running}

    def named(names: Sequence[str] | str, option: str) -> dict[str, set[str]]:
        by_server: dict[str, set[str]] = {}
        for name in tool_names(names):
            server_name, sep, tool = name.partition("__")
            server = running.get(server_name)
            if not sep or not tool:
                raise ConfigError(f"{option}: {name!r} is not an MCP tool's name; write "
                                  "NAME__tool, as %swarm mcp list shows them")
            if server is None:
                names_running = ", ".join(running) or "none"
                raise ConfigError(f"{option}: no MCP server {server_name!r} is running "
                                  f"(running: {names_running}); add it first")
            offered = [t.name for t in server.tools]
            if name not in offered:
                raise ConfigError(f"{option}: MCP server {server_name!r} offers no tool "
                                  f"{tool!r}; it offers: {', '.join(offered) or 'none'}")
            by_server.setdefault(server_name, set()).add(name)
        return by_server

    kept = named(tools or (), "mcp_tools")
    dropped = {n for names in named(exclude_tools, "mcp_exclude_tools").values() for n in names}
    return [t for server in running.values() for t in server.tools
            if (server.name not in kept or t.name in kept[server.name]) and t.name not in dropped]


_registry_lock = threading.Lock()
_registry: MCPRegistry | None = None


def mcp_registry() -> MCPRegistry:
    """The process-wide registry; its servers are stopped at interpreter exit."""
    global _registry
    with _registry_lock:
        if _registry is None:
            background_loop()  # created first, so its own atexit stop runs after ours
            _registry = MCPRegistry()
            atexit.register(_registry.stop_all)
        return _registry


def session_tools() -> list[Tool]:
    """The tools of the process's running MCP servers; [] (and no registry, no loop
    thread) when no server was ever added."""
    with _registry_lock:
        registry = _registry
    return [] if registry is None else registry.tools()
