"""MCP servers over stdio, their tools exposed to workers as ``NAME__tool``.

Needs the ``mcp`` extra (``pip install "jupyter-swarmkit[mcp]"``); the SDK is imported only when
a server starts. anyio binds an MCP session to the task that opened it, so each
:class:`MCPServer` keeps one long-lived task on the swarmkit background loop that holds
the ``stdio_client`` and ``ClientSession`` contexts; calls from any other loop or thread
are bridged onto that loop. Servers live for the session (a Jupyter kernel) in the
registry (``swarmkit.tools.registry``) and are stopped at interpreter exit.

JSON-RPC ids: each ``tools/call`` is sent under an id derived from the run, the worker
step, the hop and the call's position in the turn (``swarmkit-<run>-worker-2-h1-0``),
through the SDK's ``CallOptions["request_id"]``, so a repeated send of the same step's
call carries the same id and a server or relay can deduplicate it.

Least privilege: a server offers every tool it lists unless its spec says otherwise
(``tools=``: only these; ``exclude_tools=``: all but these), by the server's own tool
names (``get-env``) or swarmkit's (``everything__get-env``). A name the server does not
list is a ConfigError naming the tools it does list. A tool's error (a ``CallToolResult``
with ``isError``) reaches the model and the tables as the server sent it, scrubbed of
credentials; when the server withheld the text (the MCP SDK does for an exception a tool
did not raise as its ``ToolError``), the message says so.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import functools
import logging
import re
import tempfile
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import IO, Any, Literal, TypeVar

from ..credentials.scrub import scrub
from ..engine.background import BackgroundLoop, background_loop
from ..errors import ConfigError, MCPError, ToolError
from .definition import Tool
from .mcpanswers import error_text, exception_text, list_all_tools, result_text, schema_validator
from .mcpspec import (
    SERVER_NAME,
    MCPServerSpec,
    mcp_server_spec,
    parse_mcp_add,
    parse_mcp_command,
)

__all__ = [
    "MCPServer",
    "MCPServerSpec",
    "MCPServerState",
    "mcp_server_spec",
    "parse_mcp_add",
    "parse_mcp_command",
]

log = logging.getLogger("swarmkit")

T = TypeVar("T")
MCPServerState = Literal["new", "starting", "running", "stopped", "failed"]

START_TIMEOUT = 30.0
STOP_TIMEOUT = 10.0
_TOOL_NAME_BAD_CHARS = re.compile(r"[^a-zA-Z0-9_-]")
_STDERR_TAIL_CHARS = 300

# The JSON-RPC id for the tools/call being sent in this task (read by the dispatcher).
_REQUEST_ID: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "swarmkit_mcp_request_id", default=None
)


def _import_sdk() -> Any:
    try:
        import mcp
    except ImportError:
        raise ConfigError('MCP servers need the mcp extra: pip install "jupyter-swarmkit[mcp]"'
                          ) from None
    return mcp


def _stable_id_dispatcher(read: Any, write: Any) -> Any:
    """A JSON-RPC dispatcher that sends tools/call under the id in ``_REQUEST_ID``."""
    from mcp.shared.jsonrpc_dispatcher import JSONRPCDispatcher

    class StableIdDispatcher(JSONRPCDispatcher):  # type: ignore[misc]
        async def send_raw_request(
            self, method: str, params: Any, opts: Any = None, **kwargs: Any
        ) -> dict[str, Any]:
            request_id = _REQUEST_ID.get()
            if request_id is not None and method == "tools/call":
                opts = {**(opts or {}), "request_id": request_id}
            return await super().send_raw_request(method, params, opts, **kwargs)  # type: ignore[no-any-return]

    return StableIdDispatcher(read, write)


class MCPServer:
    """One MCP server process over stdio and its client session.

    ``await start()`` (or ``start_sync()``) launches it, performs the handshake and lists
    its tools; :attr:`tools` then holds them as swarmkit Tools named ``NAME__tool``.
    """

    def __init__(
        self,
        name: str,
        command: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        start_timeout: float = START_TIMEOUT,
        bridge: BackgroundLoop | None = None,
        tools: Sequence[str] | None = None,
        exclude_tools: Sequence[str] = (),
    ) -> None:
        if not isinstance(name, str) or not SERVER_NAME.match(name) or "__" in name:
            raise ConfigError(
                f"MCP server name {name!r} is not allowed: use 1-30 letters, digits, '_' or '-' "
                "(no '__')"
            )
        if not command or not all(isinstance(w, str) and w for w in command):
            raise ConfigError(f"MCP server {name!r} needs a command, e.g. ['python', 'server.py']")
        self.name = name
        self.command = tuple(command)
        self.env = dict(env) if env is not None else None
        self.cwd = cwd
        self.start_timeout = start_timeout
        self.state: MCPServerState = "new"
        self.error: str | None = None
        # Every tool the server lists, and the ones offered to the workers (see offer()).
        self.listed: tuple[Tool, ...] = ()
        self.tools: tuple[Tool, ...] = ()
        self.allowed: tuple[str, ...] | None = None if tools is None else tuple(tools)
        self.excluded: tuple[str, ...] = tuple(exclude_tools)
        self._mcp_names: dict[str, str] = {}  # NAME__tool -> the server's own tool name
        self._bridge = bridge or background_loop()
        self._session: Any = None
        self._stopping: asyncio.Event | None = None
        self._owner: asyncio.Task[None] | None = None
        self._errlog: IO[str] | None = None

    def __repr__(self) -> str:
        return f"<MCPServer {self.name} {self.state}: {' '.join(self.command)}>"

    # -- lifecycle ---------------------------------------------------------------------

    async def start(self) -> tuple[Tool, ...]:
        """Start the process, handshake, list tools. Raises MCPError naming the server."""
        return await self._on_owner_loop(self._start)

    def start_sync(self) -> tuple[Tool, ...]:
        return self._wait(self._start())

    async def stop(self) -> None:
        await self._on_owner_loop(self._stop)

    def stop_sync(self, timeout: float = STOP_TIMEOUT) -> None:
        if self._bridge.loop.is_running():
            future = self._bridge.submit(self._stop())
            try:
                future.result(timeout=timeout)
            except (concurrent.futures.TimeoutError, RuntimeError):
                log.warning("MCP server %r did not stop within %ss", self.name, timeout)

    @property
    def running(self) -> bool:
        return self.state == "running" and self._session is not None

    async def _start(self) -> tuple[Tool, ...]:
        if self.state in ("starting", "running"):
            raise MCPError(f"MCP server {self.name!r} is already {self.state}; remove it first")
        _import_sdk()
        self.state, self.error = "starting", None
        self._errlog = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")  # noqa: SIM115
        self._stopping = asyncio.Event()
        ready: asyncio.Future[list[Any]] = asyncio.get_running_loop().create_future()
        self._owner = asyncio.create_task(self._serve(ready), name=f"swarmkit-mcp-{self.name}")
        try:
            listed = await ready
        except BaseException as exc:
            error = self._failure_text("could not start", exc)
            await self._stop()
            self.state, self.error = "failed", error
            raise MCPError(error) from None
        self.listed = self._as_tools(listed)
        try:
            self.offer(self.allowed, self.excluded)
        except ConfigError:
            await self._stop()
            raise
        self.state = "running"
        return self.tools

    def offer(
        self, tools: Sequence[str] | None = None, exclude_tools: Sequence[str] = ()
    ) -> tuple[Tool, ...]:
        """Offer only ``tools`` (None: every listed tool) minus ``exclude_tools``; either
        by the server's names or as ``NAME__tool``. A ConfigError, changing nothing, when
        a name is not one the server lists."""
        by_name = {t.name: t for t in self.listed}
        by_name.update({self._mcp_names[t.name]: t for t in self.listed})

        def pick(names: Sequence[str], what: str) -> set[str]:
            missing = [n for n in names if n not in by_name]
            if missing:
                listed = ", ".join(self._mcp_names[t.name] for t in self.listed) or "none"
                raise ConfigError(
                    f"MCP server {self.name!r} has no tool {missing[0]!r} to {what}; "
                    f"it offers: {listed}")
            return {by_name[n].name for n in names}

        allowed = None if tools is None else pick(tools, "offer")
        excluded = pick(exclude_tools, "exclude")
        self.tools = tuple(t for t in self.listed
                           if (allowed is None or t.name in allowed) and t.name not in excluded)
        self.allowed = None if tools is None else tuple(tools)
        self.excluded = tuple(exclude_tools)
        return self.tools

    async def _serve(self, ready: asyncio.Future[list[Any]]) -> None:
        """The owner task: holds the transport and session contexts until stopped."""
        import anyio
        from mcp.client.session import ClientSession
        from mcp.client.stdio import StdioServerParameters, stdio_client

        params = StdioServerParameters(
            command=self.command[0], args=list(self.command[1:]), env=self.env, cwd=self.cwd
        )
        assert self._stopping is not None
        try:
            async with (
                stdio_client(params, errlog=self._errlog) as (read, write),  # type: ignore[arg-type]
                ClientSession(dispatcher=_stable_id_dispatcher(read, write)) as session,
            ):
                with anyio.fail_after(self.start_timeout):
                    await session.initialize()
                    listed = await list_all_tools(session)
                self._session = session
                ready.set_result(listed)
                await self._stopping.wait()
        except Exception as exc:
            if not ready.done():
                ready.set_exception(exc)
            else:
                log.warning("MCP server %r ended: %s", self.name, exc)
        finally:
            self._session = None
            if not ready.done():
                ready.set_exception(MCPError(f"MCP server {self.name!r} stopped while starting"))

    async def _stop(self) -> None:
        if self._stopping is not None:
            self._stopping.set()
        owner, self._owner = self._owner, None
        if owner is not None and not owner.done():
            try:
                await asyncio.wait_for(asyncio.shield(owner), STOP_TIMEOUT)
            except TimeoutError:
                owner.cancel()
        if self.state != "failed":
            self.state = "stopped"
        if self._errlog is not None:
            self._errlog.close()
            self._errlog = None

    # -- calls -------------------------------------------------------------------------

    async def call_tool(
        self, tool: str, arguments: Mapping[str, Any], *, request_id: str | None = None
    ) -> str:
        """Call one of the server's tools by its MCP name; the text of its result.

        Raises ToolError with the server's message when the tool reports an error, and
        MCPError when the server is gone.
        """
        return await self._on_owner_loop(
            functools.partial(self._call, tool, dict(arguments), request_id)
        )

    async def _call(self, tool: str, arguments: dict[str, Any], request_id: str | None) -> str:
        from mcp.shared.exceptions import MCPError as SDKError
        from mcp_types import CONNECTION_CLOSED

        session = self._session
        if session is None:
            raise MCPError(self.error or f"MCP server {self.name!r} is not running; "
                           f"add it again with %swarm mcp add {self.name} -- ...")
        token = _REQUEST_ID.set(request_id)
        try:
            result = await session.call_tool(tool, arguments)
        except SDKError as exc:
            if exc.code == CONNECTION_CLOSED:
                self.state = "failed"
                self.error = self._failure_text("died", exc)
                log.warning("%s", self.error)
                self._session = None
                raise MCPError(self.error) from None
            raise MCPError(f"MCP server {self.name!r} refused {tool}: {exc.message}") from None
        finally:
            _REQUEST_ID.reset(token)
        text = result_text(result)
        if result.is_error:
            raise ToolError(f"{self.name}__{tool} failed: {error_text(tool, scrub(text))}")
        return text

    # -- helpers -----------------------------------------------------------------------

    async def _on_owner_loop(self, make: Callable[[], Awaitable[T]]) -> T:
        loop = self._bridge.loop
        if asyncio.get_running_loop() is loop:
            return await make()
        future = asyncio.run_coroutine_threadsafe(make(), loop)  # type: ignore[arg-type]
        return await asyncio.wrap_future(future)

    def _wait(self, coro: Any) -> Any:
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self._bridge.loop:
            coro.close()
            raise RuntimeError("MCPServer sync methods cannot run on the swarmkit loop thread")
        return self._bridge.wait(self._bridge.submit(coro))

    def _failure_text(self, what: str, exc: BaseException) -> str:
        detail = exception_text(exc)
        tail = self._stderr_tail()
        stderr = f"; its stderr ends: {tail}" if tail else ""
        return (f"MCP server {self.name!r} {what} ({detail}){stderr}; "
                f"check the command: {' '.join(self.command)}")

    def _stderr_tail(self) -> str:
        if self._errlog is None or self._errlog.closed:
            return ""
        try:
            self._errlog.flush()
            self._errlog.seek(0)
            text = self._errlog.read()
        except (OSError, ValueError):
            return ""
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        return " | ".join(lines[-3:])[-_STDERR_TAIL_CHARS:]

    def _as_tools(self, listed: list[Any]) -> tuple[Tool, ...]:
        tools: dict[str, Tool] = {}
        for item in listed:
            name = _TOOL_NAME_BAD_CHARS.sub("_", f"{self.name}__{item.name}")[:64]
            if name in tools:
                log.warning("MCP server %r: tool %r clashes with another as %r; skipped",
                            self.name, item.name, name)
                continue
            schema = dict(item.input_schema or {"type": "object", "properties": {}})
            self._mcp_names[name] = item.name
            tools[name] = Tool(
                name=name,
                description=item.description or "",
                parameters=schema,
                function=functools.partial(self._call_sync, item.name),
                validate=schema_validator(name, schema),
                invoke=functools.partial(self._invoke, item.name),
            )
        return tuple(tools.values())

    async def _invoke(self, tool: str, arguments: dict[str, Any], call_id: str) -> str:
        return await self.call_tool(tool, arguments, request_id=call_id or None)

    def _call_sync(self, tool: str, /, **arguments: Any) -> str:
        return self._wait(self._call(tool, arguments, None))  # type: ignore[no-any-return]
