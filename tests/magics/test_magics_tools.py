"""Tools through the magic, in a real IPython shell: ``--tools``, the tool limit flags and
``%swarm mcp add | list | remove`` with a real MCP server process."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

from swarmkit.api.result import Run
from swarmkit.testing import FakeReply, FakeRequest, FakeServer, swarm_shell
from swarmkit.tools import mcp_registry
from tests.support.fakekey import swarm_line

MCP_SERVER = Path(__file__).resolve().parents[1] / "tools" / "mcp_server.py"


@pytest.fixture(scope="module")
def shell() -> InteractiveShell:
    return swarm_shell()


def tool_model(request: FakeRequest) -> FakeReply:
    """Plans one task; the worker calls every tool it is offered once, then answers."""
    if request.role == "planner":
        return FakeReply(content=json.dumps({"tasks": ["check order A-17"]}))
    if request.role == "reducer":
        return FakeReply(content="merged")
    results = [m["content"] for m in request.messages if m.get("role") == "tool"]
    if results or not request.tools:
        return FakeReply(content=" | ".join(results) or "no tools")
    calls = []
    for spec in request.tools:
        name = spec["function"]["name"]
        required = spec["function"]["parameters"].get("required", [])
        calls.append((name, {key: "A-17" for key in required}))
    return FakeReply(tool_calls=calls)


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer(tool_model, lifetime=120) as fake:
        yield fake


def swarm_cell(shell: InteractiveShell, server: FakeServer, flags: str = "") -> Run:
    with capture_output():
        shell.run_cell_magic("swarm", swarm_line(server, f"--quiet {flags}"),
                             "Where is order A-17?")

    run = shell.user_ns["_swarm"]
    assert isinstance(run, Run)
    return run


def define_lookup(shell: InteractiveShell) -> None:
    shell.run_cell(
        "import swarmkit\n"
        "lookups = []\n"
        "@swarmkit.tool\n"
        "def lookup(order_id: str) -> dict:\n"
        "    '''Look up an order.'''\n"
        "    lookups.append(order_id)\n"
        "    return {'order_id': order_id, 'status': 'shipped'}\n"
        "not_a_tool = 5\n"
        "def plain(x: int) -> int:\n"
        "    return x\n"
    )


def test_tools_flag_gives_the_notebooks_tools_to_the_workers(
    shell: InteractiveShell, server: FakeServer
) -> None:
    define_lookup(shell)
    run = swarm_cell(shell, server, "--tools lookup --max-tool-hops 2 --tool-timeout 5")
    assert shell.user_ns["lookups"] == ["A-17"]
    [call] = run.tool_calls
    assert (call.tool, call.error) == ("lookup", None)
    assert run.workers[0].tool_calls == 1
    assert run.workers[0].output == '{"order_id":"A-17","status":"shipped"}'
    assert run.config["max_tool_hops"] == 2 and run.config["tool_timeout"] == 5.0


def test_tool_limit_flags_reach_the_config(
    shell: InteractiveShell, server: FakeServer
) -> None:
    define_lookup(shell)
    run = swarm_cell(shell, server, "--tools lookup --tool-concurrency 3 --max-tool-errors 4 "
                                    "--max-tool-result-chars 10")
    assert (run.config["tool_concurrency"], run.config["max_tool_errors"],
            run.config["max_tool_result_chars"]) == (3, 4, 10)
    assert run.tool_calls[0].result == '{"order_id…[truncated 28 chars]'


def test_without_tools_flag_no_python_tool_runs(
    shell: InteractiveShell, server: FakeServer
) -> None:
    define_lookup(shell)
    run = swarm_cell(shell, server)
    assert shell.user_ns["lookups"] == []
    assert run.tool_calls == [] and run.workers[0].output == "no tools"


@pytest.mark.parametrize(("flags", "message"), [
    ("--tools nosuch", "--tools nosuch: no such name in the notebook"),
    ("--tools not_a_tool", "--tools not_a_tool: is an int, not a tool"),
    ("--tools plain", "--tools plain: is a function, not a tool; decorate"),
    ("--tools ,", "--tools needs tool names"),
    ("--tools lookup --max-tool-hops -1", "--max-tool-hops must be 0 or more"),
    ("--tools lookup --tool-timeout soon", "--tool-timeout must be a number"),
])
def test_bad_tool_flags_are_usage_errors(
    shell: InteractiveShell, server: FakeServer, flags: str, message: str
) -> None:
    define_lookup(shell)
    with pytest.raises(UsageError, match=message):
        swarm_cell(shell, server, flags)
    assert server.requests == []


def test_mcp_add_list_use_and_remove(shell: InteractiveShell, server: FakeServer) -> None:
    command = f"{sys.executable} {MCP_SERVER}"
    added = shell.run_line_magic("swarm", f"mcp add shop -- {command}")
    try:
        assert added.title == "MCP server shop: 4 tools"
        assert [row[0] for row in added.rows] == \
            ["shop__lookup", "shop__explode", "shop__price", "shop__whoami"]
        listing = shell.run_line_magic("swarm", "mcp list")
        assert [row[:2] for row in listing.rows] == [("shop", "running")]
        run = swarm_cell(shell, server)
        by_tool = {c.tool: c for c in run.tool_calls}
        assert set(by_tool) == {"shop__lookup", "shop__explode", "shop__price", "shop__whoami"}
        assert json.loads(by_tool["shop__lookup"].result or "")["status"] == "shipped"
        assert (by_tool["shop__explode"].error or "").startswith("ToolError: shop__explode")
        assert "shop__lookup" in str(run)
    finally:
        with capture_output() as out:
            shell.run_line_magic("swarm", "mcp remove shop")
    assert out.stdout.strip() == "MCP server shop stopped"
    assert mcp_registry().get("shop") is None
    after = swarm_cell(shell, server)
    assert after.tool_calls == [] and after.workers[0].output == "no tools"


def test_mcp_add_with_tools_offers_only_those_and_says_what_it_holds_back(
    shell: InteractiveShell, server: FakeServer
) -> None:
    command = f"{sys.executable} {MCP_SERVER}"
    added = shell.run_line_magic("swarm", f"mcp add shop --tools lookup,price -- {command}")
    try:
        assert added.title == "MCP server shop: 2 tools"
        assert [row[0] for row in added.rows] == ["shop__lookup", "shop__price"]
        assert added.note.startswith("offered to every %%swarm cell; not offered: "
                                     "shop__explode, shop__whoami;")
        [listed] = shell.run_line_magic("swarm", "mcp list").rows
        assert listed[2:4] == ("shop__lookup, shop__price", "shop__explode, shop__whoami")
        run = swarm_cell(shell, server)
        assert [c.tool for c in run.tool_calls] == ["shop__lookup", "shop__price"]
        # The same server again with a deny-list: the same process, another choice.
        again = shell.run_line_magic(
            "swarm", f"mcp add shop --exclude-tools explode,whoami,price -- {command}")
        assert [row[0] for row in again.rows] == ["shop__lookup"]
        with pytest.raises(UsageError) as caught:
            shell.run_line_magic("swarm", f"mcp add shop --tools get-env -- {command}")
        assert str(caught.value) == (
            "%swarm mcp add: MCP server 'shop' has no tool 'get-env' to offer; it offers: "
            "lookup, explode, price, whoami")
        assert [t.name for t in mcp_registry().tools()] == ["shop__lookup"]  # unchanged
        everything = shell.run_line_magic("swarm", f"mcp add shop -- {command}")
        assert everything.title == "MCP server shop: 4 tools"
        assert everything.note.startswith("all its tools, offered to every %%swarm cell")
    finally:
        with capture_output():
            shell.run_line_magic("swarm", "mcp remove shop")


def test_swarm_config_mcp_tools_narrows_the_session_servers_tools(
    shell: InteractiveShell, server: FakeServer
) -> None:
    command = f"{sys.executable} {MCP_SERVER}"
    shell.run_line_magic("swarm", f"mcp add shop -- {command}")
    try:
        table = shell.run_line_magic("swarm", "config mcp_tools=shop__lookup,shop__price")
        assert ("mcp_tools", "shop__lookup,shop__price", "session") in table.rows
        run = swarm_cell(shell, server)
        assert [c.tool for c in run.tool_calls] == ["shop__lookup", "shop__price"]
        shell.run_line_magic("swarm", "config mcp_exclude_tools=shop__price")
        run = swarm_cell(shell, server)
        assert [c.tool for c in run.tool_calls] == ["shop__lookup"]
        shell.run_line_magic("swarm", "config mcp_tools=shop__prize mcp_exclude_tools=")
        requests = len(server.requests)
        with pytest.raises(UsageError) as caught:
            swarm_cell(shell, server)
        assert str(caught.value) == (
            "%%swarm: mcp_tools: MCP server 'shop' offers no tool 'prize'; it offers: "
            "shop__lookup, shop__explode, shop__price, shop__whoami (set by %swarm config)")
        assert len(server.requests) == requests  # refused before any call
        with pytest.raises(UsageError, match="mcp_tools: 'price' is not an MCP tool's name; "
                                             "write NAME__tool"):
            shell.run_line_magic("swarm", "config mcp_tools=price")
    finally:
        shell.run_line_magic("swarm", "config mcp_tools= mcp_exclude_tools=")
        with capture_output():
            shell.run_line_magic("swarm", "mcp remove shop")
    table = shell.run_line_magic("swarm", "config")
    assert not [row for row in table.rows if row[0].startswith("mcp_")]


@pytest.mark.parametrize(("line", "message"), [
    ("mcp", "usage: %swarm mcp add NAME"),
    ("mcp add shop python x.py", "usage: mcp add NAME -- command"),
    ("mcp remove", "usage: %swarm mcp add NAME"),
    ("mcp remove nosuch", "no MCP server named 'nosuch'"),
    ("mcp add bad.name -- python x.py", "MCP server name 'bad.name' is not allowed"),
    (f"mcp add broken -- {sys.executable} {MCP_SERVER} --fail-start",
     "%swarm mcp add: MCP server 'broken' could not start"),
])
def test_mcp_command_errors_are_one_line_usage_errors(
    shell: InteractiveShell, line: str, message: str
) -> None:
    with pytest.raises(UsageError, match=message) as caught:
        shell.run_line_magic("swarm", line)
    assert "\n" not in str(caught.value)
    assert mcp_registry().get("broken") is None


def test_help_lists_the_tool_flags_and_the_mcp_command(shell: InteractiveShell) -> None:
    with capture_output() as out:
        shell.run_cell_magic("swarm", "--help", "ignored")
    text: Any = out.stdout
    for flag in ("--tools", "--max-tool-hops", "--tool-concurrency", "--max-tool-errors",
                 "--max-tool-result-chars", "--tool-timeout", "%swarm mcp add|list|remove"):
        assert flag in text
