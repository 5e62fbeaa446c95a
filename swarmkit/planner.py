"""The planner's contract: ask for ``{"tasks": [...]}`` and turn whatever comes back into a list.

Servers differ in what ``response_format`` they take, so requests go down a ladder:
``json_schema`` (named ``swarm_plan``) → ``json_object`` (with the schema, which
llama.cpp turns into a grammar) → plain text. The answer is parsed leniently (fences,
prose around the JSON, a bare list) and, if still unusable, repaired once.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .errors import PlanError, ResponseFormatUnsupported
from .events import PlanReady

if TYPE_CHECKING:
    from .engine import Engine

__all__ = [
    "ParsedPlan",
    "make_plan",
    "parse_plan",
    "plan_formats",
    "plan_schema",
    "repair_message",
]

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)
_RAW_PREVIEW = 120
_MARKUP = re.compile(r"<[^>]*>")
# One line of 3-160 characters without quotes or backslashes (a grammar-friendly regex).
_ONE_LINE_TASK = r'^[^\n\r\t"\\]{3,160}$'


@dataclass(frozen=True, slots=True)
class ParsedPlan:
    tasks: tuple[str, ...]
    truncated_from: int | None


def plan_schema(max_workers: int | None = None, *, exact: bool = False) -> dict[str, Any]:
    """The plan's JSON schema. ``exact`` asks for exactly ``max_workers`` one-line tasks:
    small grammar-constrained models under-plan and put raw newlines in strings."""
    tasks: dict[str, Any] = {"type": "array", "items": {"type": "string"}}
    if max_workers is not None:
        tasks.update(minItems=max_workers if exact else 1, maxItems=max_workers)
    if exact:
        tasks["items"] = {"type": "string", "pattern": _ONE_LINE_TASK}
    return {
        "type": "object",
        "properties": {"tasks": tasks},
        "required": ["tasks"],
        "additionalProperties": False,
    }


def plan_formats(max_workers: int, *, local: bool) -> list[dict[str, Any] | None]:
    """The response_format ladder, best first. ``None`` means plain text."""
    grammar = {"type": "json_object", "schema": plan_schema(max_workers, exact=local)}
    if local:
        # llama.cpp rejects json_schema with a 500; go straight to its grammar form.
        return [grammar, None]
    strict = {
        "type": "json_schema",
        "json_schema": {"name": "swarm_plan", "schema": plan_schema(), "strict": True},
    }
    return [strict, {"type": "json_object"}, None]


def repair_message(max_workers: int) -> dict[str, str]:
    return {
        "role": "user",
        "content": (
            "That reply could not be used. Answer again with JSON only, exactly of the form "
            f'{{"tasks": ["...", "..."]}}, with between 1 and {max_workers} short sub-tasks.'
        ),
    }


def _candidates(text: str) -> list[str]:
    found = [m.group(1) for m in _FENCE.finditer(text)]
    found.append(text)
    # A bare list counts only when there is no object: a list inside {"steps": [...]}
    # is the wrong shape, not a plan.
    brackets = ("{", "}") if "{" in text else ("[", "]")
    start, end = text.find(brackets[0]), text.rfind(brackets[1])
    if 0 <= start < end:
        found.append(text[start : end + 1])
    return found


def _tasks_from(value: Any) -> list[str] | None:
    if isinstance(value, dict):
        value = value.get("tasks")
    if not isinstance(value, list):
        return None
    tasks: list[str] = []
    for item in value:
        if isinstance(item, dict):
            item = item.get("task") or item.get("description") or item.get("title")
        if not isinstance(item, str):
            return None
        if item.strip():
            tasks.append(item.strip())
    return tasks


def parse_plan(text: str | None, max_workers: int) -> ParsedPlan:
    """Parse a planner reply. Raises PlanError (keeping the raw text) when unusable."""
    raw = text or ""
    for candidate in _candidates(raw):
        try:
            # strict=False: grammar-constrained servers let raw newlines into strings.
            value = json.loads(candidate, strict=False)
        except ValueError:
            continue
        tasks = _tasks_from(value)
        if tasks is None:
            continue
        if not tasks:
            raise PlanError("the planner returned an empty task list; rephrase the task", raw=raw)
        cut = len(tasks) if len(tasks) > max_workers else None
        return ParsedPlan(tuple(tasks[:max_workers]), cut)
    # Markup is dropped from the preview only: an error is one plain line, the raw reply
    # stays whole in the Run's plan_raw.
    preview = " ".join(_MARKUP.sub(" ", raw).split())[:_RAW_PREVIEW]
    got = f"got: {preview!r}" if preview else "got an empty reply"
    raise PlanError(
        f'the planner did not return {{"tasks": [...]}} JSON ({got}); '
        "try a stronger planner model with --planner-model",
        raw=raw,
    )


async def make_plan(engine: Engine, task: str) -> tuple[str, ...]:
    """Ask the planner down the response_format ladder; repair a junk reply once."""
    cfg = engine.config
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": cfg.planner_prompt.format(max_workers=cfg.max_workers)},
        {"role": "user", "content": task},
    ]
    last_error: ResponseFormatUnsupported | None = None
    for response_format in plan_formats(cfg.max_workers, local=cfg.planner.is_local):
        request = engine.request("planner", messages, response_format=response_format)
        try:
            outcome = await engine.call("planner", "planner", request)
        except ResponseFormatUnsupported as exc:
            last_error = exc
            continue
        raw = outcome.response.content or ""
        try:
            parsed = parse_plan(raw, cfg.max_workers)
        except PlanError:
            repair = [*messages, {"role": "assistant", "content": raw}]
            repair.append(repair_message(cfg.max_workers))
            request = engine.request("planner", repair, response_format=response_format)
            outcome = await engine.call("planner", "planner", request)
            raw = outcome.response.content or ""
            parsed = parse_plan(raw, cfg.max_workers)
        engine.emit(PlanReady(parsed.tasks, raw, engine.now(), parsed.truncated_from))
        return parsed.tasks
    raise PlanError(f"no response_format was accepted by the planner's server: {last_error}")

