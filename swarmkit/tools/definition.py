"""``@tool``: a typed Python function (sync or async) becomes a ``Tool`` the model can call.

The JSON schema comes from the signature and type hints (through pydantic), the
descriptions from the docstring (its first part, and a Google-style ``Args:`` section or
Sphinx ``:param x:`` lines). Arguments are validated with the same pydantic model before
the function runs, so a bad call never reaches user code. Sync functions run in a thread
so they cannot block the engine's loop.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import json
import re
import sys
import typing
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, overload

import pydantic
import pydantic_core

from ..config.validation import check_number
from ..credentials.scrub import scrub
from ..errors import ConfigError, ToolError

__all__ = [
    "TOOL_NAME_PATTERN",
    "Tool",
    "ToolArgumentsError",
    "check_tool_name",
    "parse_arguments",
    "parse_docstring",
    "render_result",
    "tool",
]

# OpenAI's rule for function names.
TOOL_NAME_PATTERN = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")

Validator = Callable[[dict[str, Any]], dict[str, Any]]
# Runs a validated call; the second argument is the call's stable id (MCP uses it).
Invoker = Callable[[dict[str, Any], str], Awaitable[Any]]


class ToolArgumentsError(ToolError):
    """The model's arguments are not valid JSON or do not match the tool's schema."""


@dataclass(frozen=True, slots=True)
class Tool:
    """A function the workers' model may call. Build one with ``@tool`` or from an MCP server.

    ``validate`` turns parsed JSON arguments into the function's arguments (raising
    :class:`ToolArgumentsError`); ``invoke`` runs them. ``timeout`` overrides the run's
    ``tool_timeout``. Calling the Tool calls the original function.
    """

    name: str
    description: str
    parameters: Mapping[str, Any]
    function: Callable[..., Any] = field(repr=False)
    validate: Validator = field(repr=False, compare=False)
    timeout: float | None = None
    invoke: Invoker | None = field(repr=False, compare=False, default=None)

    def __post_init__(self) -> None:
        check_tool_name(self.name)
        if self.timeout is not None:
            check_number(f"tool {self.name!r}: timeout", self.timeout,
                         "a positive number of seconds", 0, above=True)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.function(*args, **kwargs)

    def spec(self) -> dict[str, Any]:
        """The entry for the request's ``tools`` list (OpenAI function calling)."""
        function: dict[str, Any] = {"name": self.name, "parameters": dict(self.parameters)}
        if self.description:
            function["description"] = self.description
        return {"type": "function", "function": function}

    async def run(self, arguments: dict[str, Any], call_id: str = "") -> Any:
        """Run the tool on already-validated arguments."""
        if self.invoke is None:
            return await _call_function(self.function, arguments)
        return await self.invoke(arguments, call_id)


def check_tool_name(name: str) -> str:
    if not isinstance(name, str) or not TOOL_NAME_PATTERN.match(name):
        raise ConfigError(
            f"tool name {name!r} is not allowed: use 1-64 letters, digits, '_' or '-' "
            "(pass name=... to @tool)"
        )
    return name


@overload
def tool(function: Callable[..., Any], /) -> Tool: ...


@overload
def tool(
    *, name: str | None = None, description: str | None = None, timeout: float | None = None
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    function: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = None,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Turn a typed function into a :class:`Tool`: ``@tool`` or ``@tool(name=..., timeout=...)``.

    Every parameter needs a type annotation that JSON schema can express; anything else
    raises ConfigError naming the parameter.
    """

    def build(fn: Callable[..., Any], depth: int = 1) -> Tool:
        # The defining scope's locals, so string hints naming local classes resolve.
        scope = sys._getframe(depth).f_locals
        return _from_function(fn, name=name, description=description, timeout=timeout,
                              scope=scope)

    return build if function is None else build(function, depth=2)


def _from_function(
    fn: Callable[..., Any],
    *,
    name: str | None,
    description: str | None,
    timeout: float | None,
    scope: Mapping[str, Any],
) -> Tool:
    if isinstance(fn, Tool):
        fn = fn.function
    if not callable(fn):
        raise ConfigError(f"@tool needs a function, got {type(fn).__name__}")
    tool_name = check_tool_name(name if name is not None else getattr(fn, "__name__", ""))
    summary, param_docs = parse_docstring(inspect.getdoc(fn) or "")
    model = _arguments_model(fn, tool_name, param_docs, scope)
    schema = model.model_json_schema()
    schema.pop("title", None)
    return Tool(
        name=tool_name,
        description=summary if description is None else description,
        parameters=schema,
        function=fn,
        timeout=timeout,
        validate=functools.partial(_validate_with, model, tool_name),
    )


def _arguments_model(
    fn: Callable[..., Any], tool_name: str, param_docs: Mapping[str, str],
    scope: Mapping[str, Any],
) -> type[pydantic.BaseModel]:
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"tool {tool_name!r}: cannot read the signature: {exc}") from None
    try:
        hints = typing.get_type_hints(fn, localns=dict(scope), include_extras=True)
    except Exception as exc:
        raise ConfigError(
            f"tool {tool_name!r}: a type hint cannot be resolved ({exc}); "
            "define the types before the function"
        ) from None
    fields: dict[str, Any] = {}
    for position, param in enumerate(signature.parameters.values()):
        where = f"parameter {param.name!r} of tool {tool_name!r}"
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise ConfigError(f"{where}: *args/**kwargs cannot be described to a model; "
                              "list the parameters explicitly")
        if param.name not in hints:
            raise ConfigError(
                f"{where} has no type annotation; annotate it (e.g. {param.name}: str)"
            )
        annotation = hints[param.name]
        _check_expressible(annotation, where)
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[f"p{position}"] = (
            annotation,
            pydantic.Field(default, alias=param.name, description=param_docs.get(param.name)),
        )
    config = pydantic.ConfigDict(extra="forbid", populate_by_name=False)
    return pydantic.create_model(f"{tool_name}_arguments", __config__=config, **fields)


def _check_expressible(annotation: Any, where: str) -> None:
    try:
        pydantic.TypeAdapter(annotation).json_schema()
    except (pydantic.PydanticSchemaGenerationError, pydantic.PydanticInvalidForJsonSchema,
            pydantic.PydanticUserError, TypeError):
        name = annotation.__qualname__ if isinstance(annotation, type) else repr(annotation)
        raise ConfigError(
            f"{where}: type {name} cannot be described as JSON schema; use JSON-friendly "
            "types (str, int, float, bool, list, dict, Literal, pydantic models, dataclasses)"
        ) from None


def _validate_with(
    model: type[pydantic.BaseModel], tool_name: str, arguments: dict[str, Any]
) -> dict[str, Any]:
    try:
        parsed = model.model_validate(arguments)
    except pydantic.ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '(arguments)'}: {err['msg']}"
            for err in exc.errors(include_url=False)
        )
        raise ToolArgumentsError(f"invalid arguments for {tool_name}: {problems}") from None
    values = {}
    for key, info in type(parsed).model_fields.items():
        # Omitted optional arguments are left out so the function's own default applies.
        if key in parsed.model_fields_set:
            values[info.alias or key] = getattr(parsed, key)
    return values


async def _call_function(fn: Callable[..., Any], arguments: dict[str, Any]) -> Any:
    args, kwargs = _bind(fn, arguments)
    if inspect.iscoroutinefunction(fn):
        return await fn(*args, **kwargs)
    # A sync tool runs in a thread; on timeout the thread is abandoned, not killed.
    result = await asyncio.to_thread(fn, *args, **kwargs)
    if inspect.isawaitable(result):
        return await result
    return result


def _bind(fn: Callable[..., Any], arguments: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
    args: list[Any] = []
    kwargs = dict(arguments)
    for param in inspect.signature(fn).parameters.values():
        if param.kind is param.POSITIONAL_ONLY and param.name in kwargs:
            args.append(kwargs.pop(param.name))
    return args, kwargs


def parse_arguments(raw: str) -> dict[str, Any]:
    """The model's argument string as a dict; ToolArgumentsError if it is not a JSON object."""
    if raw is None or not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ToolArgumentsError(f"arguments are not valid JSON ({exc}); send a JSON object") \
            from None
    if not isinstance(value, dict):
        raise ToolArgumentsError(
            f"arguments must be a JSON object, got {type(value).__name__}"
        )
    return value


def render_result(value: Any, limit: int) -> str:
    """A tool's return value as text for the model: str as is, anything else as JSON,
    scrubbed of credentials (``swarmkit.credentials.scrub``; before the cut, so that no
    fragment of a
    key survives it), then cut to ``limit`` characters with a visible marker."""
    text = value if isinstance(value, str) else pydantic_core.to_json(value, fallback=repr).decode()
    text = scrub(text)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}…[truncated {len(text) - limit} chars]"


_SECTION = re.compile(r"^(Args|Arguments|Parameters|Params|Returns?|Raises|Yields|Examples?|"
                      r"Notes?|See Also)\s*:?\s*$")
_ARG_LINE = re.compile(r"^\s*\*{0,2}(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
_SPHINX_PARAM = re.compile(r"^:param\s+(?:[^:]*\s)?(\w+)\s*:\s*(.*)$")
_ARG_SECTIONS = ("args", "arguments", "parameters", "params", "sphinx")


def parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """(description, {parameter: description}) from a Google- or Sphinx-style docstring."""
    summary: list[str] = []
    params: dict[str, str] = {}
    section: str | None = None
    current: str | None = None
    entry_indent: int | None = None  # indentation of the entries under "Args:"
    numpy = False  # numpydoc: "name : type" lines, the description on the lines below
    for line in doc.splitlines():
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        sphinx = _SPHINX_PARAM.match(stripped)
        if sphinx or stripped.startswith(":"):
            section = "sphinx"
            current = sphinx.group(1) if sphinx else None
            if sphinx:
                params[sphinx.group(1)] = sphinx.group(2).strip()
            continue
        heading = _SECTION.match(stripped) if indent == 0 else None
        if heading:
            section, current, entry_indent = heading.group(1).lower(), None, None
            numpy = False
            continue
        if section is not None and re.fullmatch(r"-{3,}", stripped):
            numpy = True
            continue
        if section is None:
            summary.append(line)
            continue
        if not stripped or section not in _ARG_SECTIONS:
            continue
        match = _ARG_LINE.match(line)
        if match and (entry_indent is None or indent <= entry_indent):
            entry_indent = indent if entry_indent is None else entry_indent
            current = match.group(1)
            params[current] = "" if numpy else match.group(2).strip()
        elif current:
            params[current] = f"{params[current]} {stripped}".strip()
    description = "\n".join(summary).strip()
    return description, {k: v for k, v in params.items() if v}
