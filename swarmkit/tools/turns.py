"""The worker tool loop: OpenAI function calling, bounded, validated and recorded.

Each worker gets at most ``max_tool_hops`` model turns that may call tools, then one
more turn with ``tool_choice="none"`` asking for its final answer, so it always ends.
The calls of one turn run concurrently (at most ``tool_concurrency`` at a time); only
the first ``max_tool_calls_per_turn`` of them run, the rest are refused (the model is
told so, and they do not count as tool errors).
Every call, executed or rejected, becomes a ``ToolCallFinished`` event. Only the tools
handed to :class:`ToolLoop` can ever run: any other name is answered with an error.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError, MCPError, ProviderError, ToolError
from ..record.events import ToolCallFinished
from ..record.modelcall import (
    CallSource,
    ChatResponse,
    ToolCallRequest,
    ToolKey,
    ToolOutcome,
    canonical_json,
)
from ..record.rows import ToolCallRecord
from .definition import Tool, ToolArgumentsError, parse_arguments, render_result, tool
from .mcp import MCPServer, mcp_server_spec
from .registry import choose_tools, mcp_registry, tool_names
from .split import SPLIT_TOOL, split_spec, split_subtasks

if TYPE_CHECKING:
    from ..engine.engine import WorkerContext

__all__ = [
    "FINAL_ANSWER_PROMPT",
    "ToolLoop",
    "build_worker_loop",
    "collect_tools",
    "describe_error",
    "tree_loop",
]

log = logging.getLogger("swarmkit")

FINAL_ANSWER_PROMPT = (
    "You have used all your tool turns. Give your final answer now, without calling tools."
)
# How much of the last tool error a failed worker's message repeats.
_LAST_ERROR_CHARS = 200


def collect_tools(tools: Iterable[Tool | Callable[..., Any]]) -> dict[str, Tool]:
    """Tools by name; plain functions are wrapped with ``@tool``. Duplicate names are an error."""
    by_name: dict[str, Tool] = {}
    for item in tools:
        if not isinstance(item, Tool):
            if not callable(item):
                raise ConfigError(f"tools must be Tool objects or functions, got {item!r}")
            item = tool(item)
        if item.name in by_name and by_name[item.name] is not item:
            raise ConfigError(f"two tools are named {item.name!r}; give one of them name=...")
        by_name[item.name] = item
    return by_name


async def build_worker_loop(
    tools: Iterable[Tool | Callable[..., Any]] | None = None,
    mcp_servers: Mapping[str, Sequence[str] | str | Mapping[str, Any]] | None = None,
    mcp_tools: Sequence[str] | str | None = None,
    mcp_exclude_tools: Sequence[str] | str = (),
) -> ToolLoop | None:
    """The worker loop for ``swarmkit.run(tools=..., mcp_servers=...)``; None if no tools.

    MCP servers join the session's registry (kept up, reused by name); each is a command
    or a dict with ``command`` and the tools to offer (``swarmkit.tools.mcp_server_spec``).
    One that cannot start is logged with its error and left out: the run goes on without
    its tools. ``mcp_tools`` / ``mcp_exclude_tools`` narrow them further, by ``NAME__tool``
    (``swarmkit.tools.registry.choose_tools``). A tool list naming a tool a server lacks
    is a ConfigError.
    """
    chosen: list[Tool | Callable[..., Any]] = list(tools or ())
    started: list[MCPServer] = []
    failed: set[str] = set()
    if mcp_servers:
        registry = mcp_registry()
        for name, value in mcp_servers.items():
            spec = mcp_server_spec(name, value)
            try:
                started.append(await registry.add_spec(spec))
            except MCPError as exc:
                log.warning("%s; the run goes on without its tools", exc)
                failed.add(name)
    if started or mcp_tools or mcp_exclude_tools:
        # The names of a server that did not start go with it: the run goes on without.
        def alive(names: Sequence[str] | str) -> list[str]:
            return [n for n in tool_names(names) if n.partition("__")[0] not in failed]
        chosen += choose_tools(started, None if mcp_tools is None else alive(mcp_tools),
                               alive(mcp_exclude_tools))
    return ToolLoop(chosen) if chosen else None


def tree_loop(loop: ToolLoop | None, depth: int) -> ToolLoop | None:
    """The worker loop of a run of ``depth``: ``loop``, or, at depth > 1 and without
    tools, a loop of none (it offers ``split_task`` above the depth, and a leaf's one
    request is a plain worker's). At depth 1 nothing changes. A tool of the user's named
    ``split_task`` is refused above depth 1: the model could not tell the two apart."""
    if loop is None and depth > 1:
        return ToolLoop(())
    if loop is not None and depth > 1 and SPLIT_TOOL in loop.tools:
        raise ConfigError(f"a tool is named {SPLIT_TOOL!r}, the name of swarmkit's own tool "
                          f"at depth > 1; rename yours with @tool(name=...), or give "
                          f"depth=1")
    return loop


def describe_error(exc: BaseException) -> str:
    """What the model reads when a tool fails: ``ToolError: <type>: <message>``."""
    if isinstance(exc, ToolError):
        return f"ToolError: {exc}"
    return f"ToolError: {type(exc).__name__}: {exc}"


@dataclass(frozen=True, slots=True)
class _Prepared:
    """One requested call after parsing: ready to run, or rejected with an error."""

    call: ToolCallRequest
    position: int
    tool: Tool | None = None
    arguments: dict[str, Any] | None = None
    key: ToolKey | None = None
    rejection: str | None = None
    refused: bool = False  # past max_tool_calls_per_turn: not run, not a tool error
    subtasks: tuple[str, ...] | None = None  # a split_task call that runs (subtree)


class ToolLoop:
    """The ``worker_loop`` for an Engine whose workers may call ``tools``; in a tree
    (depth > 1) also the built-in ``split_task`` (``tools.split``), offered after them
    where the worker is below the run's depth. With neither, a worker's one request is
    exactly a plain worker's."""

    def __init__(self, tools: Iterable[Tool | Callable[..., Any]]) -> None:
        self.tools = collect_tools(tools)
        self.specs = tuple(t.spec() for t in self.tools.values())

    def offered(self, context: WorkerContext) -> tuple[dict[str, Any], ...]:
        """The ``tools`` of the worker's requests."""
        if not context.offers_split:
            return self.specs
        return (*self.specs, split_spec(context.config.max_children))

    async def __call__(self, context: WorkerContext, messages: list[dict[str, Any]]) -> str:
        config = context.config
        conversation = list(messages)
        seen: Counter[tuple[int, str, str]] = Counter()
        errors: list[str] = []
        specs = self.offered(context)
        if not specs or config.max_tool_hops == 0:
            return await self._final_answer(context, conversation, specs)
        for hop in range(1, config.max_tool_hops + 1):
            request = context.request(conversation, tools=specs)
            try:
                response = (await context.call(request)).response
            except ProviderError as exc:
                if hop > 1 or self.specs or not _refuses_tools(exc):
                    raise
                # A server without tool calling, offered only split_task: no split, the
                # worker answers as a leaf does (the refused call stays in its calls).
                return await self._final_answer(context, conversation, ())
            if not response.tool_calls:
                return response.content or ""
            conversation.append(response.assistant_message())
            conversation += await self._turn(context, hop, response.tool_calls, seen, errors)
            if len(errors) >= config.max_tool_errors:
                last = " ".join(errors[-1].split())[:_LAST_ERROR_CHARS]
                raise _tools_failure(
                    f"worker {context.index} stopped after {len(errors)} tool errors "
                    f"(max_tool_errors={config.max_tool_errors}); last: {last}"
                )
        conversation = [*conversation, {"role": "user", "content": FINAL_ANSWER_PROMPT}]
        return await self._final_answer(context, conversation, specs)

    async def _final_answer(
        self, context: WorkerContext, conversation: list[dict[str, Any]],
        specs: tuple[dict[str, Any], ...],
    ) -> str:
        """The last turn: with ``tool_choice="none"`` after the tool turns; a plain
        request when no tool is offered (no tools, or max_tool_hops 0)."""
        if context.config.max_tool_hops == 0 or not specs:
            request = context.request(conversation)
        else:
            request = context.request(conversation, tools=specs, tool_choice="none")
        response: ChatResponse = (await context.call(request)).response
        if response.tool_calls and not response.content:
            raise _tools_failure(
                f"worker {context.index} still asked for tools after "
                f"max_tool_hops={context.config.max_tool_hops} turns and gave no answer; "
                "raise max_tool_hops"
            )
        return response.content or ""

    async def _turn(
        self,
        context: WorkerContext,
        hop: int,
        calls: Sequence[ToolCallRequest],
        seen: Counter[tuple[int, str, str]],
        errors: list[str],
    ) -> list[dict[str, Any]]:
        config = context.config
        cap = config.max_tool_calls_per_turn
        over = (
            f"ToolError: refused: this turn asked for {len(calls)} tool calls and at most "
            f"{cap} run per turn (max_tool_calls_per_turn={cap}); this one was not run. "
            f"Ask for at most {cap} at a time."
        )
        prepared = [self._prepare(context, hop, i, call, seen, over if i >= cap else None)
                    for i, call in enumerate(calls)]
        slots = asyncio.Semaphore(config.tool_concurrency)

        async def bounded(item: _Prepared) -> dict[str, Any]:
            async with slots:
                return await self._run(context, hop, item, errors)

        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(bounded(item)) for item in prepared]
        return [task.result() for task in tasks]

    def _prepare(
        self,
        context: WorkerContext,
        hop: int,
        position: int,
        call: ToolCallRequest,
        seen: Counter[tuple[int, str, str]],
        refusal: str | None = None,
    ) -> _Prepared:
        found = self.tools.get(call.name)
        arguments: dict[str, Any] | None = None
        rejection: str | None = None
        subtasks: tuple[str, ...] | None = None
        try:
            parsed = parse_arguments(call.arguments)
            canonical = canonical_json(parsed)
        except ToolArgumentsError as exc:
            parsed, canonical, rejection = None, call.arguments, f"ToolError: {exc}"
        if call.name == SPLIT_TOOL and context.offers_split:
            if parsed is not None:
                try:
                    subtasks = split_subtasks(parsed)
                except ToolArgumentsError as exc:
                    rejection = f"ToolError: {exc}"
            if subtasks is not None and not context.claim_split():
                subtasks, rejection = None, (
                    f"ToolError: refused: worker {context.id} has split its sub-task once "
                    "already; write your answer from what you have.")
        elif found is None:
            names = ", ".join(self.tools) or "none"
            rejection = f"ToolError: unknown tool {call.name!r}; available tools: {names}"
        elif parsed is not None:
            try:
                arguments = found.validate(parsed)
            except ToolArgumentsError as exc:
                rejection = f"ToolError: {exc}"
        # Rejected calls are keyed and recorded too, so a replay shows them as they were.
        occurrence = seen[(hop, call.name, canonical)]
        seen[(hop, call.name, canonical)] += 1
        key = ToolKey(context.step, hop, call.name, canonical, occurrence)
        if refusal is not None:
            if subtasks is not None:
                context.has_split = False  # not run: a later turn may still split
            return _Prepared(call, position, key=key, rejection=refusal, refused=True)
        if rejection is not None:
            return _Prepared(call, position, key=key, rejection=rejection)
        if subtasks is not None:
            return _Prepared(call, position, key=key, subtasks=subtasks)
        return _Prepared(call, position, found, arguments, key)

    async def _run(
        self, context: WorkerContext, hop: int, item: _Prepared, errors: list[str]
    ) -> dict[str, Any]:
        assert item.key is not None
        if item.subtasks is not None:
            outcome = await _split(context, item.subtasks)
        else:
            outcome = await context.tool(item.key, self._executor(context, hop, item))
        record = ToolCallRecord(
            worker=context.index,
            hop=hop,
            call_id=item.call.id,
            tool=item.call.name,
            arguments=item.call.arguments,
            result=outcome.result,
            error=outcome.error,
            started=context.now() if outcome.started is None else outcome.started,
            duration=outcome.duration,
            source=outcome.source,
            parent=context.parent,
        )
        context.tally.tool_calls += 1
        context.emit(ToolCallFinished(record, t=record.started + record.duration))
        if outcome.error is not None and not item.refused:
            errors.append(outcome.error)
        content = outcome.error if outcome.error is not None else outcome.result
        return {"role": "tool", "tool_call_id": item.call.id, "content": content or ""}

    def _executor(
        self, context: WorkerContext, hop: int, item: _Prepared
    ) -> Callable[[], Awaitable[ToolOutcome]]:
        """What runs the call when the caller decides it runs (never in replay)."""
        config = context.config
        limit = config.max_tool_result_chars
        rejection = item.rejection
        if rejection is not None:

            async def reject() -> ToolOutcome:
                return ToolOutcome(None, render_result(rejection, limit), 0.0, "live",
                                   context.now())

            return reject
        assert item.tool is not None and item.arguments is not None
        found, arguments = item.tool, item.arguments
        request_id = f"swarmkit-{context.run_id}-{context.step}-h{hop}-{item.position}"
        timeout = found.timeout if found.timeout is not None else config.tool_timeout

        async def execute() -> ToolOutcome:
            started = context.now()
            result = error = None
            deadline = asyncio.timeout(timeout)
            try:
                async with deadline:
                    value = await found.run(arguments, request_id)
                result = render_result(value, limit)
            except TimeoutError as exc:
                error = (f"ToolError: {found.name} timed out after {timeout:g}s"
                         if deadline.expired() else describe_error(exc))
            except Exception as exc:
                error = describe_error(exc)
            if error is not None:
                error = render_result(error, limit)
            return ToolOutcome(result, error, context.now() - started, "live", started)

        return execute


async def _split(context: WorkerContext, subtasks: tuple[str, ...]) -> ToolOutcome:
    """Run a split (the engine's child swarm) as a tool call's outcome. Its times come
    from the calls' records, which a replay reads from the cassette, so a replayed tree
    shows the recorded split; its source is its reducer call's."""
    before = len(context.tally.calls)
    started = _last_end(context.tally.calls, context.now())
    text = await context.split(subtasks)
    ended = max([_last_end(context.tally.calls, started), *(
        w.started + w.latency for child in context.tally.children.values()
        for w in child.walk() if w.started is not None)])
    merged = context.tally.calls[before:]
    source: CallSource = merged[-1].source if merged else "live"
    text = render_result(text, context.config.max_tool_result_chars)
    if text.startswith("ToolError:"):
        return ToolOutcome(None, text, ended - started, source, started)
    return ToolOutcome(text, None, ended - started, source, started)


def _last_end(calls: Sequence[Any], default: float) -> float:
    return max((c.started + c.latency for c in calls), default=default)


# What a server without tool calling says when offered tools (llama.cpp without
# --jinja, vLLM without --enable-auto-tool-choice, Ollama for a model without tools).
_NO_TOOLS_STATUS = frozenset({400, 404, 422, 500, 501})


def _refuses_tools(exc: ProviderError) -> bool:
    return exc.status in _NO_TOOLS_STATUS and "tool" in str(exc).lower()


def _tools_failure(message: str) -> ToolError:
    error = ToolError(message)
    error.reason = "tools"  # type: ignore[attr-defined]  # the engine shows "failed (tools)"
    return error
