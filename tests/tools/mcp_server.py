"""A small real MCP server for the tests, run as ``python tests/tools/mcp_server.py``.

It speaks MCP over stdio through the official SDK's server API and offers:

- ``lookup(order_id)``: returns data about an order;
- ``explode(message)``: always raises (a crash: the SDK keeps its text on the server);
- ``price(item)``: refuses every item with the SDK's ``ToolError``, whose text the client
  receives; the text quotes a credential (``Bearer ...``), which swarmkit must scrub;
- ``whoami()``: the JSON-RPC request id it received, so tests can check swarmkit's ids.

``--die-after N`` ends the process during the call after N tool calls (a server that
dies); ``--fail-start`` exits at once, before importing the SDK (a server that never
starts).
"""

# No "from __future__ import annotations": the SDK resolves the hints at runtime.
import argparse
import os
import sys
from typing import Any

# The credential price()'s error quotes: swarmkit must never pass it on.
CATALOGUE_TOKEN = "cat-4f9a2b7c1d8e6f3a"


def build(die_after: int) -> Any:
    from mcp.server.mcpserver import Context, MCPServer
    from mcp.server.mcpserver.exceptions import ToolError

    server = MCPServer("swarmkit-test")
    calls = {"n": 0}

    def count() -> None:
        calls["n"] += 1
        if die_after and calls["n"] > die_after:
            os._exit(3)  # sys.exit in the tool's worker thread would not end the process

    @server.tool()
    def lookup(order_id: str) -> dict[str, str]:
        """Look up an order by its id.

        Args:
            order_id: The order's id, e.g. A-17.
        """
        count()
        return {"order_id": order_id, "status": "shipped", "carrier": "DHL"}

    @server.tool()
    def explode(message: str) -> str:
        """Always fails with the given message."""
        count()
        raise RuntimeError(f"boom: {message}")

    @server.tool()
    def price(item: str) -> float:
        """The unit price of an item in USD."""
        count()
        raise ToolError(f"no price for {item!r}; the catalogue refused Bearer {CATALOGUE_TOKEN}")

    @server.tool()
    def whoami(ctx: Context) -> str:
        """The JSON-RPC id of this request, as the server received it."""
        count()
        return ctx.request_id

    return server


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--die-after", type=int, default=0)
    parser.add_argument("--fail-start", action="store_true")
    args = parser.parse_args()
    if args.fail_start:
        print("refusing to start: --fail-start", file=sys.stderr)
        sys.exit(2)
    build(args.die_after).run("stdio")


if __name__ == "__main__":
    main()
