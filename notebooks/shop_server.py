"""A tiny real MCP server for the tools tutorial: ``python notebooks/shop_server.py``.

It speaks MCP over stdio through the official SDK and offers one tool, ``price(item)``,
from a fixed price list, so a recording of it is reproducible. An unknown item is the
SDK's ``ToolError``: the SDK sends that text to the client (the model reads "no price for
'gold'; ..."), and keeps the text of any other exception on the server.
"""

# No "from __future__ import annotations": the SDK resolves the hints at runtime.
from typing import Any

PRICES = {"bolts": 0.12, "nuts": 0.05, "washers": 0.02}


def build() -> Any:
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError

    server = MCPServer("shop")

    @server.tool()
    def price(item: str) -> float:
        """The unit price of an item in USD.

        Args:
            item: The item's name, e.g. bolts.
        """
        if item not in PRICES:
            raise ToolError(f"no price for {item!r}; known items: {', '.join(PRICES)}")
        return PRICES[item]

    return server


if __name__ == "__main__":
    build().run("stdio")
