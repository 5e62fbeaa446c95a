"""How an MCP server is given: ``mcp_servers={"name": command | {"command", "args", "env",
"tools", "exclude_tools"}}`` from Python, ``%swarm mcp add NAME [--tools A,B]
[--exclude-tools C,D] -- command`` in a notebook; parsed into an :class:`MCPServerSpec`,
with a one-line ConfigError for anything else."""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError

__all__ = ["MCP_ADD_USAGE", "SERVER_NAME", "MCPServerSpec", "mcp_server_spec", "parse_mcp_add",
           "parse_mcp_command"]

SERVER_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,30}$")

MCP_ADD_USAGE = ("mcp add NAME -- command [args...] (before the --: --tools A,B offers only "
                 "those tools, --exclude-tools C,D all but those)")
# The keys of one server in mcp_servers={...}: the command (a list, or a string split as
# a shell would, with args= after it as in Claude Desktop's and VS Code's mcp.json), its
# environment, and which of its tools to offer.
_SPEC_KEYS = ("command", "args", "env", "tools", "exclude_tools")


@dataclass(frozen=True, slots=True)
class MCPServerSpec:
    """One MCP server to start: its name, command and environment, and which of its
    tools to offer (``tools``: only these, None: all; ``exclude_tools``: not these)."""

    name: str
    command: tuple[str, ...]
    env: Mapping[str, str] | None = None
    tools: tuple[str, ...] | None = None
    exclude_tools: tuple[str, ...] = ()


def _names(value: Any, what: str) -> tuple[str, ...]:
    """``"a,b"`` or ``["a", "b"]`` -> ``("a", "b")``; a ConfigError for anything else."""
    items = [p for p in value.split(",") if p.strip()] if isinstance(value, str) else value
    if not isinstance(items, Iterable) or isinstance(items, Mapping):
        raise ConfigError(f"{what} must be tool names, e.g. ['echo', 'add'], got {value!r}")
    names = [item.strip() if isinstance(item, str) else item for item in items]
    if not all(isinstance(n, str) and n for n in names):
        raise ConfigError(f"{what} must be tool names, e.g. ['echo', 'add'], got {value!r}")
    if not names:
        raise ConfigError(f"{what} is empty: name at least one tool, or leave it out")
    return tuple(dict.fromkeys(names))


def parse_mcp_add(words: Sequence[str]) -> MCPServerSpec:
    """``%swarm mcp add``'s words: ``NAME [--tools A,B] [--exclude-tools C] -- cmd ...``."""
    words = list(words)
    if "--" not in words or words.index("--") == 0 or words.index("--") == len(words) - 1:
        raise ConfigError(f"usage: {MCP_ADD_USAGE}")
    cut = words.index("--")
    name, flags, command = words[0], words[1:cut], words[cut + 1:]
    chosen: dict[str, tuple[str, ...]] = {}
    while flags:
        flag, *rest = flags
        key = flag.partition("=")[0].lstrip("-").replace("-", "_")
        if key not in ("tools", "exclude_tools") or key in chosen:
            raise ConfigError(f"unexpected {flag!r}; usage: {MCP_ADD_USAGE}")
        if "=" in flag:
            value, flags = flag.partition("=")[2], rest
        elif rest:
            value, flags = rest[0], rest[1:]
        else:
            raise ConfigError(f"{flag} needs tool names, e.g. {flag} echo,add")
        chosen[key] = _names(value, flag)
    return MCPServerSpec(name, tuple(command), tools=chosen.get("tools"),
                         exclude_tools=chosen.get("exclude_tools", ()))


def parse_mcp_command(words: Sequence[str]) -> tuple[str, list[str]]:
    """``["NAME", "--", "cmd", "arg"]`` -> ``("NAME", ["cmd", "arg"])``."""
    spec = parse_mcp_add(words)
    return spec.name, list(spec.command)


def mcp_server_spec(name: str, value: Any) -> MCPServerSpec:
    """One entry of ``mcp_servers={name: value}``: a command (a list of words, or a
    string split as a shell would), or a dict with ``command`` (and ``args``, ``env``,
    ``tools``, ``exclude_tools``)."""
    if isinstance(value, MCPServerSpec):
        return value
    if not isinstance(value, Mapping):
        return MCPServerSpec(name, _command(name, value))
    unknown = [key for key in value if key not in _SPEC_KEYS]
    if unknown:
        raise ConfigError(f"MCP server {name!r}: unknown key {unknown[0]!r}; use "
                          f"{', '.join(_SPEC_KEYS)}")
    if "command" not in value:
        raise ConfigError(f"MCP server {name!r} needs a command, e.g. "
                          "{'command': ['python', 'server.py']}")
    command = _command(name, value["command"]) + _command(name, value.get("args", ()), True)
    env = value.get("env")
    if env is not None and not (
        isinstance(env, Mapping) and all(isinstance(v, str) for v in env.values())
    ):
        raise ConfigError(f"MCP server {name!r}: env must map names to strings")
    tools = value.get("tools")
    return MCPServerSpec(
        name, command, env=None if env is None else dict(env),
        tools=None if tools is None else _names(tools, f"MCP server {name!r}: tools"),
        exclude_tools=(_names(value["exclude_tools"], f"MCP server {name!r}: exclude_tools")
                       if value.get("exclude_tools") is not None else ()),
    )


def _command(name: str, value: Any, extra: bool = False) -> tuple[str, ...]:
    if isinstance(value, str):
        return tuple(shlex.split(value))
    if isinstance(value, Sequence) and all(isinstance(w, str) for w in value):
        return tuple(value)
    what = "args" if extra else "the command"
    raise ConfigError(f"MCP server {name!r}: {what} must be a list of strings or one "
                      f"string, got {value!r}")
