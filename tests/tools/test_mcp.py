"""MCP servers: a real server process (tests/tools/mcp_server.py) over stdio, its tools as
``NAME__tool``, errors naming the server, stable JSON-RPC ids, and a whole swarm using it."""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import swarmkit
from swarmkit.errors import ConfigError, MCPError, ToolError
from swarmkit.testing import FakeReply, FakeRequest, FakeServer
from swarmkit.tools import (
    MCPRegistry,
    MCPServer,
    MCPServerSpec,
    ToolArgumentsError,
    mcp_registry,
    mcp_server_spec,
    parse_mcp_add,
)
from swarmkit.tools.mcp import parse_mcp_command
from tests.support.fakekey import run_options

SERVER = str(Path(__file__).resolve().parent / "mcp_server.py")
COMMAND = [sys.executable, SERVER]
CATALOGUE_TOKEN = "cat-4f9a2b7c1d8e6f3a"  # what mcp_server.py's price() error quotes
LISTED = "lookup, explode, price, whoami"
WITHHELD = ("(the server sent no reason: the MCP SDK keeps an unexpected exception's text "
            "on the server; a tool that raises its ToolError sends it)")


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
    assert set(tools) == {"shop__lookup", "shop__explode", "shop__price", "shop__whoami"}
    assert shop.tools == shop.listed  # no tool list given: every tool the server lists
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


def test_a_crashing_tool_is_a_tool_error_that_says_the_server_kept_its_reason(
    shop: MCPServer,
) -> None:
    with pytest.raises(ToolError) as caught:
        run_tool(shop, "shop__explode", {"message": "kaboom"})
    assert str(caught.value) == f"shop__explode failed: Error executing tool explode {WITHHELD}"
    assert shop.running  # one failing tool does not take the server down


def test_a_tools_own_error_text_arrives_without_the_sdks_prefix_and_scrubbed(
    shop: MCPServer,
) -> None:
    with pytest.raises(ToolError) as caught:
        run_tool(shop, "shop__price", {"item": "gold"})
    message = str(caught.value)
    assert message == ("shop__price failed: no price for 'gold'; the catalogue refused "
                       "Bearer [redacted]")
    assert CATALOGUE_TOKEN not in message


def test_an_allow_list_offers_only_those_tools_by_either_name(shop: MCPServer) -> None:
    try:
        offered = shop.offer(["lookup", "shop__price"])
        assert [t.name for t in offered] == ["shop__lookup", "shop__price"]
        assert [t.name for t in shop.tools] == ["shop__lookup", "shop__price"]
        assert len(shop.listed) == 4
        assert [t.name for t in mcp_registry().tools()] == ["shop__lookup", "shop__price"]
    finally:
        shop.offer()
    assert len(shop.tools) == 4


def test_a_deny_list_offers_all_the_other_tools(shop: MCPServer) -> None:
    try:
        shop.offer(exclude_tools=["explode", "shop__whoami"])
        assert [t.name for t in shop.tools] == ["shop__lookup", "shop__price"]
        shop.offer(["lookup", "explode"], exclude_tools=["explode"])
        assert [t.name for t in shop.tools] == ["shop__lookup"]
    finally:
        shop.offer()


@pytest.mark.parametrize(("tools", "exclude", "message"), [
    (["lookup", "prize"], (), f"MCP server 'shop' has no tool 'prize' to offer; it offers: "
                              f"{LISTED}"),
    (None, ["get-env"], f"MCP server 'shop' has no tool 'get-env' to exclude; it offers: "
                        f"{LISTED}"),
])
def test_a_tool_list_naming_a_tool_the_server_lacks_is_one_line_naming_what_it_offers(
    shop: MCPServer, tools: list[str] | None, exclude: list[str], message: str
) -> None:
    before = shop.tools
    with pytest.raises(ConfigError) as caught:
        shop.offer(tools, exclude)
    assert str(caught.value) == message
    assert shop.tools == before  # nothing changed


def test_a_server_started_with_a_wrong_allow_list_is_stopped_and_not_kept() -> None:
    registry = MCPRegistry()
    with pytest.raises(ConfigError, match=f"no tool 'prize' to offer; it offers: {LISTED}$"):
        registry.add_sync("picky", COMMAND, tools=["prize"])
    assert len(registry) == 0


def test_registering_a_running_server_again_changes_only_what_it_offers() -> None:
    registry = MCPRegistry()
    server = registry.add_sync("picky", COMMAND, tools=["lookup"])
    try:
        assert [t.name for t in registry.tools()] == ["picky__lookup"]
        assert registry.add_sync("picky", COMMAND) is server  # the same process
        assert len(registry.tools()) == 4  # no list given: all of them again
        with pytest.raises(ConfigError, match="no tool 'prize'"):
            registry.add_sync("picky", COMMAND, tools=["prize"])
        assert len(registry.tools()) == 4 and server.running
    finally:
        registry.remove_sync("picky")


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


def test_mcp_add_takes_the_tool_lists_before_the_command() -> None:
    spec = parse_mcp_add(["ev", "--tools", "echo,add", "--exclude-tools=add", "--",
                          "npx", "server", "--tools", "x"])
    assert spec == MCPServerSpec("ev", ("npx", "server", "--tools", "x"), tools=("echo", "add"),
                                 exclude_tools=("add",))
    assert parse_mcp_add(["ev", "--", "npx"]) == MCPServerSpec("ev", ("npx",))


@pytest.mark.parametrize(("words", "message"), [
    (["ev", "--tools", "--", "npx"], "--tools needs tool names, e.g. --tools echo,add"),
    (["ev", "--tool", "echo", "--", "npx"], "unexpected '--tool'; usage: mcp add NAME"),
    (["ev", "--tools", "a", "--tools", "b", "--", "npx"], "unexpected '--tools'"),
    (["ev", "--tools", ",", "--", "npx"], "--tools is empty: name at least one tool"),
    (["ev", "--"], "usage: mcp add NAME -- command"),
])
def test_mcp_add_errors_name_the_mistake(words: list[str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_mcp_add(words)


def test_an_mcp_servers_entry_is_a_command_or_a_dict_with_its_tools() -> None:
    assert mcp_server_spec("a", ["python", "s.py"]) == MCPServerSpec("a", ("python", "s.py"))
    assert mcp_server_spec("a", "python 's p.py'") == MCPServerSpec("a", ("python", "s p.py"))
    assert mcp_server_spec("ev", {
        "command": "npx", "args": ["-y", "@modelcontextprotocol/server-everything"],
        "env": {"A": "1"}, "tools": "echo,add", "exclude_tools": ["add"],
    }) == MCPServerSpec("ev", ("npx", "-y", "@modelcontextprotocol/server-everything"),
                        env={"A": "1"}, tools=("echo", "add"), exclude_tools=("add",))


@pytest.mark.parametrize(("value", "message"), [
    ({"command": "npx", "allow": ["echo"]}, "MCP server 'ev': unknown key 'allow'; use "
                                            "command, args, env, tools, exclude_tools"),
    ({"tools": ["echo"]}, "MCP server 'ev' needs a command"),
    ({"command": "npx", "tools": []}, "MCP server 'ev': tools is empty"),
    ({"command": "npx", "tools": [3]}, "MCP server 'ev': tools must be tool names"),
    ({"command": "npx", "env": {"A": 1}}, "env must map names to strings"),
    (42, "MCP server 'ev': the command must be a list of strings or one string"),
])
def test_a_wrong_mcp_servers_entry_is_a_one_line_config_error(value: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        mcp_server_spec("ev", value)


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
            {"dying__lookup", "dying__explode", "dying__price", "dying__whoami"}
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


def one_task(task: str, worker: Callable[[FakeRequest], FakeReply]
             ) -> Callable[[FakeRequest], FakeReply]:
    """A model that plans ``task`` alone, lets ``worker`` answer the worker and merges."""

    def handler(request: FakeRequest) -> FakeReply:
        if request.role == "planner":
            return FakeReply(content=json.dumps({"tasks": [task]}))
        if request.role == "reducer":
            return FakeReply(content="merged")
        return worker(request)

    return handler


def offered_tools(request: FakeRequest) -> list[str]:
    return [t["function"]["name"] for t in request.tools]


def test_a_swarm_calls_mcp_tools_and_goes_on_without_a_broken_server(
    shop: MCPServer, caplog: pytest.LogCaptureFixture, fake_key: str
) -> None:
    offered: list[list[str]] = []

    def worker(request: FakeRequest) -> FakeReply:
        offered.append(offered_tools(request))
        if not any(m.get("role") == "tool" for m in request.messages):
            return FakeReply(tool_calls=[
                ("shop__lookup", {"order_id": "A-17"}),
                ("shop__explode", {"message": "x"}),
                ("shop__whoami", {}),
            ])
        return FakeReply(content="done")

    # "shop" is already running in the session with this command, so it is reused.
    servers = {"shop": COMMAND, "broken": [*COMMAND, "--fail-start"]}
    with (caplog.at_level(logging.WARNING, logger="swarmkit"),
          FakeServer(one_task("check order A-17", worker)) as fake):
        run = swarmkit.run_sync("Where is order A-17?", **run_options(
            fake, history=False, mcp_servers=servers))
    assert mcp_registry().get("shop") is shop
    assert offered[0] == ["shop__lookup", "shop__explode", "shop__price", "shop__whoami"]
    assert "MCP server 'broken' could not start" in caplog.text
    assert "the run goes on without its tools" in caplog.text
    lookup, explode, whoami = run.tool_calls
    assert json.loads(lookup.result or "")["status"] == "shipped"
    assert explode.error == ("ToolError: shop__explode failed: Error executing tool explode "
                             f"{WITHHELD}")
    # The JSON-RPC id is built from the run, the step, the hop and the call's position.
    assert whoami.result == f"swarmkit-{run.run_id}-worker-1-h1-2"
    assert run.workers[0].status == "completed" and run.workers[0].tool_calls == 3
    assert "shop__lookup" in str(run)


def test_a_swarm_is_offered_only_the_allowed_tools_and_the_model_reads_a_tools_own_error(
    fake_key: str,
) -> None:
    offered: list[list[str]] = []
    read: list[str] = []

    def worker(request: FakeRequest) -> FakeReply:
        offered.append(offered_tools(request))
        answers = [str(m.get("content")) for m in request.messages if m.get("role") == "tool"]
        if not answers:
            return FakeReply(tool_calls=[("picky__price", {"item": "gold"}),
                                         ("picky__explode", {"message": "x"})])
        read.extend(answers)
        return FakeReply(content="no price")

    servers = {"picky": {"command": COMMAND, "tools": ["lookup", "price"]}}
    try:
        with FakeServer(one_task("price gold", worker)) as fake:
            run = swarmkit.run_sync("What does gold cost?", **run_options(
                fake, history=False, mcp_servers=servers))
    finally:
        mcp_registry().remove_sync("picky")
    assert offered[0] == ["picky__lookup", "picky__price"]
    said = ("ToolError: picky__price failed: no price for 'gold'; the catalogue refused "
            "Bearer [redacted]")
    price, explode = run.tool_calls
    assert price.error == said
    assert read[0] == said  # what the model read, as the table shows it
    # A tool the list left out is never run: the model is told it is unknown.
    assert (explode.error or "").startswith("ToolError: unknown tool 'picky__explode'")
    assert "no price for 'gold'" in str(run)
    assert CATALOGUE_TOKEN not in str(run) + json.dumps(read)


def test_mcp_tools_from_python_narrow_the_servers_tools_by_their_swarmkit_names(
    shop: MCPServer, fake_key: str
) -> None:
    offered: list[list[str]] = []

    def worker(request: FakeRequest) -> FakeReply:
        offered.append(offered_tools(request))
        return FakeReply(content="done")

    with FakeServer(one_task("check order A-17", worker)) as fake:
        options = run_options(fake, history=False, mcp_servers={"shop": COMMAND})
        swarmkit.run_sync("Look up A-17", mcp_tools="shop__lookup,shop__price",
                          mcp_exclude_tools=["shop__price"], **options)
        assert offered == [["shop__lookup"]]
        with pytest.raises(ConfigError, match="mcp_tools: no MCP server 'shopp' is running "
                                              r"\(running: shop\); add it first"):
            swarmkit.run_sync("Look up A-17", mcp_tools=["shopp__lookup"], **options)
    assert len(shop.tools) == 4  # the session's server itself offers all of its tools
