"""A small real MCP server for the tests, run as ``python tests/mcp_server.py``.

It speaks MCP over stdio (the official SDK's server API) and offers:

- ``lookup(order_id)``: returns data about an order (structured and as text);
- ``explode(message)``: always raises, so the client sees a tool error;
- ``whoami()``: echoes the JSON-RPC request id the client sent, so tests can check
  that swarmkit's ids are stable.

``--die-after N`` makes the process exit after N tool calls (a dying server);
``--fail-start`` exits at once, before the handshake (a server that never starts).
"""

from __future__ import annotations

import argparse
import os
import sys

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("swarmkit-test")
_calls = {"n": 0, "die_after": 0}


def _count() -> None:
    _calls["n"] += 1
    if _calls["die_after"] and _calls["n"] > _calls["die_after"]:
        os._exit(3)  # sys.exit in the tool's worker thread would not end the process


@server.tool()
def lookup(order_id: str) -> dict[str, str]:
    """Look up an order by its id.

    Args:
        order_id: The order's id, e.g. A-17.
    """
    _count()
    return {"order_id": order_id, "status": "shipped", "carrier": "DHL"}


@server.tool()
def explode(message: str) -> str:
    """Always fails with the given message."""
    _count()
    raise RuntimeError(f"boom: {message}")


@server.tool()
def whoami(ctx: Context) -> str:
    """The JSON-RPC id of this request, as the server received it."""
    _count()
    return ctx.request_id


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--die-after", type=int, default=0)
    parser.add_argument("--fail-start", action="store_true")
    args = parser.parse_args()
    if args.fail_start:
        print("refusing to start", file=sys.stderr)
        sys.exit(2)
    _calls["die_after"] = args.die_after
    server.run("stdio")


if __name__ == "__main__":
    main()
