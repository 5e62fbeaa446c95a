"""Tools under stress: cancelled mid-call, inexpressible schemas, MCP commands taken literally.

The model is FakeServer scripting OpenAI function calls; MCP servers are real processes
(``tests/tools/mcp_server.py``) started by the real MCP SDK.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

import swarmkit
from swarmkit.api.entry import create_engine
from swarmkit.api.result import Run
from swarmkit.engine.engine import Engine
from swarmkit.errors import ConfigError, MCPError
from swarmkit.testing import FakeReply, FakeRequest, FakeServer, run_problems
from swarmkit.tools import MCPServer, tool
from tests.support.fakekey import KEY_ENV, run_options, swarm_line

ROOT = Path(__file__).resolve().parents[2]
MCP_SERVER = ROOT / "tests" / "tools" / "mcp_server.py"
WORKERS = 3
HANG = 30.0


def _turns(request: FakeRequest) -> int:
    return sum(1 for m in request.messages if m.get("role") == "assistant")


def calls_tool(name: str, arguments: dict[str, Any]) -> Callable[[FakeRequest], FakeReply]:
    """A model whose workers call ``name`` once, then answer."""

    def handler(request: FakeRequest) -> FakeReply:
        if request.role == "planner":
            return FakeReply(content=json.dumps({"tasks": [f"order {i}" for i in range(WORKERS)]}))
        if request.role == "reducer":
            return FakeReply(content="merged")
        if _turns(request) == 0:
            return FakeReply(tool_calls=[(name, arguments)])
        return FakeReply(content=f"done after {len(request.messages)} messages")

    return handler


# -- cancelled inside the tool loop ----------------------------------------------------------

holder: list[Engine] = []  # the engine being run, for the tool that cancels it


async def _cancel_inside_a_tool(server: FakeServer, slow_tool: Any) -> tuple[Run, Engine]:
    before = asyncio.all_tasks()
    engine = await create_engine(**run_options(
        server, workers=WORKERS, concurrency=WORKERS, tools=[slow_tool], history=False))
    holder.append(engine)
    try:
        run = await asyncio.create_task(engine.execute("check orders"))
    finally:
        await engine.caller.aclose()
    for _ in range(500):
        if server.in_flight == 0:
            break
        await asyncio.sleep(0.01)
    assert asyncio.all_tasks() - before == set()
    assert server.in_flight == 0
    return run, engine


def _check_cancelled_in_tools(run: Run) -> None:
    assert run_problems(run) == []
    assert run.status == "cancelled" and run.error == "run interrupted"
    assert len(run.workers) == WORKERS
    assert all(w.status_label == "cancelled (interrupt)" for w in run.workers)
    # Each worker's first model turn is kept: finished (it asked for the tool) or cut short.
    assert all(w.calls == 1 for w in run.workers)
    first_turns = [c for c in run.calls if c.role == "worker"]
    assert any(c.error is None and c.usage.total_tokens for c in first_turns)
    assert all(c.error in (None, "cancelled (interrupt)") for c in first_turns)


@pytest.mark.parametrize("kind", ["async", "sync"])
def test_cancel_while_tools_run_leaves_nothing_behind_and_the_next_run_works(kind: str) -> None:
    release = threading.Event()
    entered = threading.Event()

    def cancel_once() -> None:
        if not entered.is_set():
            entered.set()
            holder[-1].cancel("interrupt")

    if kind == "async":
        @tool
        async def lookup(order_id: str) -> str:
            """Slow lookup."""
            asyncio.get_running_loop().call_soon(cancel_once)
            await asyncio.sleep(HANG)
            return "never"
    else:
        loop_of_engine: list[asyncio.AbstractEventLoop] = []

        @tool
        def lookup(order_id: str) -> str:
            """Slow lookup in a thread."""
            loop_of_engine[0].call_soon_threadsafe(cancel_once)
            release.wait(HANG)  # a thread cannot be cancelled: it is let go after the test
            return "late"

    async def go() -> Run:
        if kind == "sync":
            loop_of_engine.append(asyncio.get_running_loop())
        with FakeServer(calls_tool("lookup", {"order_id": "A-1"})) as server:
            run, _ = await _cancel_inside_a_tool(server, lookup)
            release.set()
            assert entered.is_set()
            # The next run in the same process (and loop) works, tools and all.
            again = await _quick_tool_run(server)
            assert again.status == "completed" and len(again.tool_calls) == WORKERS
            return run

    try:
        run = asyncio.run(go())
    finally:
        release.set()
    _check_cancelled_in_tools(run)


async def _quick_tool_run(server: FakeServer) -> Run:
    @tool
    def lookup(order_id: str) -> str:
        """Fast lookup."""
        return f"{order_id}: shipped"

    engine = await create_engine(**run_options(
        server, workers=WORKERS, tools=[lookup], history=False))
    try:
        return await engine.execute("check orders")
    finally:
        await engine.caller.aclose()


# -- tool schemas the Python types cannot express --------------------------------------------


def connect(sock: socket.socket) -> str:
    """Needs a live socket: nothing JSON can carry."""
    return "connected"


def test_a_tool_the_types_cannot_express_is_a_config_error_before_any_call(
    options: Callable[..., dict[str, Any]], shell: InteractiveShell
) -> None:
    with FakeServer() as server:
        with pytest.raises(ConfigError) as error:
            swarmkit.run_sync("task", **options(server, tools=[connect]))
        message = str(error.value)
        assert "parameter 'sock' of tool 'connect'" in message
        assert "cannot be described as JSON schema" in message and "\n" not in message
        # In a notebook the decorator refuses it in the cell that defines it...
        shell.user_ns.pop("connect", None)
        result = shell.run_cell(
            "import socket, swarmkit\n@swarmkit.tool\n"
            "def connect(sock: socket.socket) -> str:\n    return 'connected'\n"
        )
        assert isinstance(result.error_in_exec, ConfigError)
        assert str(result.error_in_exec) == message
        # ...and an undecorated function given to --tools is a one-line usage error.
        shell.user_ns["connect"] = connect
        line = swarm_line(server, "--tools connect")
        with pytest.raises(UsageError) as usage:
            shell.run_cell_magic("swarm", line, "task")
        assert "--tools connect: is a function, not a tool" in str(usage.value)
        assert "\n" not in str(usage.value)
        assert server.count() == 0


# -- MCP servers run exactly the command given -------------------------------------------------


def _children() -> dict[int, list[str]]:
    """This process's child processes and their argv, from /proc."""
    found = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[1]) != os.getpid():
                continue
            argv = (stat.parent / "cmdline").read_bytes().split(b"\0")[:-1]
        except (OSError, IndexError, ValueError):
            continue  # it ended meanwhile
        found[int(stat.parent.name)] = [a.decode() for a in argv]
    return found


@pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="reads /proc")
def test_an_mcp_server_runs_exactly_its_command_without_a_shell_or_our_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-swarmkit-CANARY-mcp-7f3a9c2e")
    marker = tmp_path / "PWNED"
    command = [sys.executable, str(MCP_SERVER), "--die-after", "0"]
    before = set(_children())
    server = MCPServer("literal", command)
    try:
        names = {t.name for t in server.start_sync()}
        assert "literal__lookup" in names
        spawned = {pid: argv for pid, argv in _children().items() if pid not in before}
        assert list(spawned.values()) == [command]  # that command, nothing wrapped around it
        [pid] = spawned
        environ = Path(f"/proc/{pid}/environ").read_bytes()
        assert b"CANARY" not in environ  # the model key is not handed to tool servers
    finally:
        server.stop_sync()
    # Shell syntax in a command string is split into words, never run by a shell.
    evil = MCPServer("evil", [sys.executable, str(MCP_SERVER), ";", "touch", str(marker),
                              f"$(touch {marker})", f"`touch {marker}`"], start_timeout=20)
    with pytest.raises(MCPError, match="evil"):
        evil.start_sync()
    evil.stop_sync()
    assert not marker.exists()


def test_mcp_command_strings_are_split_not_run_by_a_shell(
    tmp_path: Path, options: Callable[..., dict[str, Any]]
) -> None:
    marker = tmp_path / "PWNED"
    command = f"{sys.executable} {MCP_SERVER} ; touch {marker} && touch {marker}2"
    with FakeServer(calls_tool("lookup", {"order_id": "A-1"})) as server:
        run = swarmkit.run_sync("task", **options(server, mcp_servers={"shelly": command},
                                                   workers=WORKERS))
    assert not marker.exists() and not Path(f"{marker}2").exists()
    # The server could not start with those words as its arguments; the run went on.
    assert run.status in ("completed", "partial") and run_problems(run) == []
    assert all(t.error and "unknown tool 'lookup'" in t.error for t in run.tool_calls)
