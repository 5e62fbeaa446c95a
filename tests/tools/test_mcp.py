"""MCP servers: a real server process (tests/tools/mcp_server.py) over stdio, its tools as
``NAME__tool``, errors naming the server, stable JSON-RPC ids, and a whole swarm using it."""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import swarmkit
from swarmkit.errors import ConfigError, MCPError, ToolError
from swarmkit.testing import FakeReply, FakeRequest, FakeServer
from swarmkit.tools import MCPRegistry, MCPServer, ToolArgumentsError, mcp_registry
from swarmkit.tools.mcp import parse_mcp_command

SERVER = str(Path(__file__).resolve().parent / "mcp_server.py")
COMMAND = [sys.executable, SERVER]
KEY_ENV = "SWARMKIT_TEST_KEY"


@pytest.fixture(scope="module")
def shop() -> Iterator[MCPServer]:
    """One server for the module, in the session registry (the swarm test reuses it)."""
    server = mcp_registry().add_sync("shop", COMMAND)
    yield server
    mcp_registry().remove_sync("shop")


def run_tool(server: MCPServer, name: str, arguments: dict[str, Any], call_id: str = "") -> Any:
    found = {t.name: t for t in server.tools}[name]

    async def go() -> Any:
        return await found.run(found.validate(arguments), call_id)

    return asyncio.run(go())


def test_tools_are_listed_with_the_servers_schema(shop: MCPServer) -> None:
    assert shop.running and shop.state == "running"
    tools = {t.name: t for t in shop.tools}
    assert set(tools) == {"shop__lookup", "shop__explode", "shop__whoami"}
    lookup = tools["shop__lookup"]
    assert lookup.parameters["required"] == ["order_id"]
    assert lookup.parameters["properties"]["order_id"]["type"] == "string"
    assert lookup.description.startswith("Look up an order by its id.")
    assert lookup.spec()["function"]["name"] == "shop__lookup"


def test_a_tool_returns_its_data_from_another_loop(shop: MCPServer) -> None:
    # asyncio.run is a different loop from the one holding the session: it is bridged.
    text = run_tool(shop, "shop__lookup", {"order_id": "A-17"})
    assert json.loads(text) == {"order_id": "A-17", "status": "shipped", "carrier": "DHL"}


def test_the_tool_is_callable_from_plain_code(shop: MCPServer) -> None:
    lookup = {t.name: t for t in shop.tools}["shop__lookup"]
    assert json.loads(lookup(order_id="B-2"))["order_id"] == "B-2"


def test_a_raising_tool_is_a_tool_error(shop: MCPServer) -> None:
    with pytest.raises(ToolError, match="shop__explode failed: Error executing tool explode"):
        run_tool(shop, "shop__explode", {"message": "kaboom"})
    assert shop.running  # one failing tool does not take the server down


def test_arguments_are_checked_against_the_input_schema_before_sending(
    shop: MCPServer,
) -> None:
    lookup = {t.name: t for t in shop.tools}["shop__lookup"]
    with pytest.raises(ToolArgumentsError, match="invalid arguments for shop__lookup: "
                                                 "order_id: 5 is not of type 'string'"):
        lookup.validate({"order_id": 5})
    with pytest.raises(ToolArgumentsError, match="'order_id' is a required property"):
        lookup.validate({})


def test_the_json_rpc_id_is_the_one_swarmkit_chose(shop: MCPServer) -> None:
    call_id = "swarmkit-abc123-worker-2-h1-0"
    assert run_tool(shop, "shop__whoami", {}, call_id) == call_id
    # The same id again (a retry of the same step) is accepted: only in-flight ids clash.
    assert run_tool(shop, "shop__whoami", {}, call_id) == call_id


def test_a_server_that_never_starts_names_itself_and_its_stderr() -> None:
    server = MCPServer("broken", [*COMMAND, "--fail-start"])
    with pytest.raises(MCPError) as caught:
        server.start_sync()
    message = str(caught.value)
    assert message.startswith("MCP server 'broken' could not start")
    assert "refusing to start: --fail-start" in message
    assert "\n" not in message
    assert server.state == "failed" and not server.running


def test_a_missing_command_names_the_server() -> None:
    server = MCPServer("ghost", ["/nonexistent/swarmkit-mcp-server"])
    with pytest.raises(MCPError, match=r"MCP server 'ghost' could not start .*FileNotFound"):
        server.start_sync()


@pytest.mark.parametrize("name", ["", "a b", "x__y", "n" * 31])
def test_server_names_are_checked(name: str) -> None:
    with pytest.raises(ConfigError, match="MCP server name"):
        MCPServer(name, COMMAND)


def test_a_command_is_required() -> None:
    with pytest.raises(ConfigError, match="needs a command"):
        MCPServer("empty", [])


def test_parse_mcp_command() -> None:
    assert parse_mcp_command(["fs", "--", "npx", "server", "/tmp"]) == \
        ("fs", ["npx", "server", "/tmp"])
    with pytest.raises(ConfigError, match="usage: mcp add NAME -- command"):
        parse_mcp_command(["fs", "npx"])


def test_registry_keeps_live_servers_and_a_dying_one_errors_clearly() -> None:
    registry = MCPRegistry()
    with pytest.raises(MCPError, match="could not start"):
        registry.add_sync("bad", [*COMMAND, "--fail-start"])
    assert len(registry) == 0  # a server that failed is not kept
    command = [*COMMAND, "--die-after", "1"]
    server = registry.add_sync("dying", command)
    try:
        assert registry.add_sync("dying", command) is server  # same command: reused
        assert [s.name for s in registry] == ["dying"]
        assert {t.name for t in registry.tools()} == \
            {"dying__lookup", "dying__explode", "dying__whoami"}
        assert json.loads(run_tool(server, "dying__lookup", {"order_id": "A"}))["order_id"] == "A"
        with pytest.raises(MCPError, match="MCP server 'dying' died"):
            run_tool(server, "dying__lookup", {"order_id": "B"})
        assert server.state == "failed" and not server.running
        assert registry.tools() == []  # a dead server offers no tools to the next run
        with pytest.raises(MCPError, match="MCP server 'dying' died"):
            run_tool(server, "dying__lookup", {"order_id": "C"})
    finally:
        registry.remove_sync("dying")
    assert len(registry) == 0
    with pytest.raises(MCPError, match="no MCP server named 'dying'"):
        registry.remove_sync("dying")


# -- a whole swarm --------------------------------------------------------------------------


def test_a_swarm_calls_mcp_tools_and_goes_on_without_a_broken_server(
    shop: MCPServer, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-test-mcp-0000")
    offered: list[list[str]] = []

    def handler(request: FakeRequest) -> FakeReply:
        if request.role == "planner":
            return FakeReply(content=json.dumps({"tasks": ["check order A-17"]}))
        if request.role == "reducer":
            return FakeReply(content="merged")
        offered.append([t["function"]["name"] for t in request.tools])
        if not any(m.get("role") == "tool" for m in request.messages):
            return FakeReply(tool_calls=[
                ("shop__lookup", {"order_id": "A-17"}),
                ("shop__explode", {"message": "x"}),
                ("shop__whoami", {}),
            ])
        return FakeReply(content="done")

    # "shop" is already running in the session with this command, so it is reused.
    servers = {"shop": COMMAND, "broken": [*COMMAND, "--fail-start"]}
    with caplog.at_level(logging.WARNING, logger="swarmkit"), FakeServer(handler) as fake:
        run = swarmkit.run_sync(
            "Where is order A-17?", model="gpt-4.1-mini", base_url=fake.base_url,
            api_key_env=KEY_ENV, history=False, mcp_servers=servers,
        )
    assert mcp_registry().get("shop") is shop
    assert offered[0] == ["shop__lookup", "shop__explode", "shop__whoami"]
    assert "MCP server 'broken' could not start" in caplog.text
    assert "the run goes on without its tools" in caplog.text
    lookup, explode, whoami = run.tool_calls
    assert json.loads(lookup.result or "")["status"] == "shipped"
    assert explode.error == "ToolError: shop__explode failed: Error executing tool explode"
    # The JSON-RPC id is built from the run, the step, the hop and the call's position.
    assert whoami.result == f"swarmkit-{run.run_id}-worker-1-h1-2"
    assert run.workers[0].status == "completed" and run.workers[0].tool_calls == 3
    assert "shop__lookup" in str(run)
