"""The planner's contract: ask for ``{"tasks": [...]}`` and turn whatever comes back into a list.

Requests go down the response_format ladder (swarmkit.engine.ladder). Each rung's answer is
parsed leniently (fences, prose around the JSON, a bare list; on the plain-text rung a
numbered or bulleted list too) and, if unusable, repaired once on the same rung. A plan
is only what is left after placeholders (``"..."``, ``"sub-task 1"``), fragments of a
sentence (``", but also"``: :func:`is_fragment`), identifiers
(``hammer.saw.drill.EASY_TIP_1``, ``sub-task 1, 2``: :func:`is_identifier_like`), echoes
of the prompt and of the worked examples, and repeats are dropped: if nothing is left,
the next rung is tried, so a run never completes on the prompt's own example parroted
back.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from typing import Any

from ..config.prompts import LOCAL_PLANNER_PROMPT
from ..errors import PlanError, ResponseFormatUnsupported, SwarmError
from ..record.events import PlanReady
from ..record.modelcall import ChatRequest
from .context import StepContext
from .ladder import Rung, plan_rungs, remember_rung, remembered_rung
from .nameditems import named_count, named_items

__all__ = [
    "PLAN_EXAMPLES",
    "ParsedPlan",
    "is_fragment",
    "is_identifier_like",
    "is_placeholder",
    "make_plan",
    "parse_plan",
    "plan_messages",
    "repair_message",
]

log = logging.getLogger("swarmkit")

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)
_RAW_PREVIEW = 120
_MARKUP = re.compile(r"<[^>]*>")
# "1. x", "2) x", "(3) x", "- x", "* x", "• x": one list item per line.
_LIST_ITEM = re.compile(r"^\s*(?:\(?\d{1,2}[.):]|[-*•+])\s+(.*\S)\s*$")
_MARKER = re.compile(r"^(?:\(?\d{1,2}[.):]|[-*•+])\s+")
# "sub-task 1: Write ..." : the prompt's example shape copied as a label before the task.
_TASK_LABEL = re.compile(r"^(?:sub[- ]?task|task|step)\s*#?\d{1,2}\s*(?:[:.)]|-|–|—)\s+", re.I)
_EDGES = "\"'`*_[](){}<>.,;:!?-–—… \t\r\n"
_COUNT = r"\d+|one|two|three|four|five|six|seven|eight|nine|ten|n|x|[ivx]+"
_ORDINAL = r"first|second|third|fourth|fifth|next|last|another|other|some|a|an"
_PLACEHOLDER = re.compile(
    rf"(?:(?:{_ORDINAL})\s+)?(?:sub[- ]?)?(?:task|step|item|part|point|topic|goal|thing)s?"
    rf"(?:\s*(?:#|no\.?|number)?\s*(?:{_COUNT}))?(?:\s+(?:here|description|name|text))?"
    r"|todo|tbd|tba|placeholder|example|string|text|description|n/?a|none|null|etc"
    r"|your (?:task|answer|sub-?task)s?(?: here)?"
)


# A fragment is a piece of a sentence, not a sub-task (small models split prose at the
# commas): it does not start with a letter or digit (after quotes and brackets), it has
# no letter at all, or its first word is a joining word. ", but also", "and .", ". 2.",
# "[1, 2, 3]", "of the sun" are fragments.
_JOINING = frozenset(
    ["and", "but", "or", "nor", "so", "yet", "also", "then", "with", "of", "to", "for", "as"]
)
# Sub-tasks are words, not identifiers (the README's rule, and the local schema's pattern
# in engine.ladder): one needs a word of letters besides swarmkit's own words, and it may
# neither start with an identifier (a word with an underscore, or of three parts joined
# by dots, colons or slashes) nor be identifiers for the most part of its characters.
# "hammer.saw.drill.EASY_TIP_1.1.3.1", "send_email_to_team", "sub-task 1, 2" are refused;
# a sentence that mentions "terraform-dev-2.0.0" or "__init__.py" along the way is not.
_LETTER_WORD = re.compile(r"[^\W\d_]+(?:['-][^\W\d_]+)*")
_OWN_WORDS = frozenset(["sub-task", "subtask", "sub-tasks", "subtasks", "task", "tasks",
                        "step", "steps", "item", "items", "part", "parts", "sub"])
_IDENTIFIER = re.compile(r"\w_|_\w|\w[./:]\w+[./:]\w")


def is_identifier_like(task: str) -> bool:
    """Whether ``task`` reads as an identifier or a label rather than words (see above)."""
    tokens = task.split()
    identifiers = [token for token in tokens if _IDENTIFIER.search(token)]
    if identifiers and (identifiers[0] is tokens[0]
                        or 2 * sum(map(len, identifiers)) > sum(map(len, tokens))):
        return True
    words = [word for token in task.split() for word in _LETTER_WORD.findall(token)
             if word.casefold() not in _OWN_WORDS and not _is_own_label(token)]
    return not words


def _is_own_label(token: str) -> bool:
    return token.casefold().strip(_EDGES) in _OWN_WORDS


def is_fragment(task: str) -> bool:
    """Whether ``task`` is a piece of a sentence or an identifier rather than a sub-task
    (see _JOINING and is_identifier_like)."""
    text = task.strip().lstrip("\"'`*_([")
    if not text or not text[0].isalnum() or not any(c.isalpha() for c in text):
        return True
    first = text.split(None, 1)[0].casefold().strip(_EDGES)
    return first in _JOINING or is_identifier_like(text)


@dataclass(frozen=True, slots=True)
class ParsedPlan:
    tasks: tuple[str, ...]
    truncated_from: int | None
    dropped: tuple[str, ...] = ()  # placeholders, fragments, echoes and repeats left out


def repair_message(max_workers: int, *, lists: bool = False) -> dict[str, str]:
    """The one follow-up on a rung. It gives no example values: small models copy them."""
    if lists:
        form = "a numbered list, one sub-task per line"
    else:
        form = 'JSON only: an object whose one key "tasks" holds a list of strings'
    return {
        "role": "user",
        "content": (
            f"That reply could not be used. Answer again with {form}: between 1 and "
            f"{max_workers} sub-tasks of the task above, each written out in full words."
        ),
    }


def _normal(text: str) -> str:
    return " ".join(text.casefold().strip(_EDGES).split())


def is_placeholder(task: str) -> bool:
    """Whether ``task`` is a stand-in rather than work: ``...``, ``sub-task 1``, ``TODO``."""
    normal = _normal(task)
    return not any(c.isalnum() for c in normal) or _PLACEHOLDER.fullmatch(normal) is not None


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
        tasks.append(item)
    return tasks


def _json_tasks(raw: str) -> list[str] | None:
    for candidate in _candidates(raw):
        try:
            # strict=False: grammar-constrained servers let raw newlines into strings.
            value = json.loads(candidate, strict=False)
        except ValueError:
            continue
        tasks = _tasks_from(value)
        if tasks is not None:
            return tasks
    return None


def _list_tasks(raw: str) -> list[str] | None:
    items = [m.group(1) for line in raw.splitlines() if (m := _LIST_ITEM.match(line))]
    return items or None


def _clean(tasks: list[str], echoes: tuple[str, ...]) -> tuple[list[str], list[str]]:
    """(kept, dropped): markers stripped; blanks, placeholders, echoes and repeats out."""
    echoed = {_normal(text) for text in echoes}
    kept: list[str] = []
    dropped: list[str] = []
    seen: set[str] = set()
    for task in tasks:
        text = _MARKER.sub("", task.strip()).strip()
        text = _TASK_LABEL.sub("", text).strip() or text
        if not text:
            continue
        normal = _normal(text)
        if is_placeholder(text) or is_fragment(text) or normal in echoed or normal in seen:
            dropped.append(text)
        else:
            seen.add(normal)
            kept.append(text)
    return kept, dropped


def _preview(raw: str) -> str:
    # Markup is dropped from the preview only: an error is one plain line, the raw reply
    # stays whole in the Run's plan_raw.
    preview = " ".join(_MARKUP.sub(" ", raw).split())[:_RAW_PREVIEW]
    return f"got: {preview!r}" if preview else "got an empty reply"


def parse_plan(
    text: str | None, max_workers: int, *, lists: bool = False, echoes: tuple[str, ...] = ()
) -> ParsedPlan:
    """Parse a planner reply. Raises PlanError (keeping the raw text) when unusable.

    ``lists`` also reads a numbered or bulleted list; tasks equal to one of ``echoes``
    (the prompt, the system prompt) are dropped like placeholders.
    """
    raw = text or ""
    tasks = _json_tasks(raw)
    if tasks is None and lists:
        tasks = _list_tasks(raw)
    if tasks is None:
        shape = '{"tasks": [...]} JSON or a numbered list' if lists else '{"tasks": [...]} JSON'
        raise PlanError(
            f"the planner did not return {shape} ({_preview(raw)}); "
            "try a stronger planner model with --planner-model",
            raw=raw,
        )
    kept, dropped = _clean(tasks, echoes)
    if not kept and not dropped:
        raise PlanError("the planner returned an empty task list; rephrase the task", raw=raw)
    if not kept:
        raise PlanError(
            f"the planner returned only placeholders or the prompt itself ({_preview(raw)}); "
            "try a stronger planner model with --planner-model",
            raw=raw,
        )
    cut = len(kept) if len(kept) > max_workers else None
    return ParsedPlan(tuple(kept[:max_workers]), cut, tuple(dropped))


async def _ask(
    context: StepContext, rung: Rung, request: ChatRequest, echoes: tuple[str, ...]
) -> tuple[ParsedPlan, str]:
    """One rung: the answer, and one repair if it is unusable. Raises PlanError."""
    cfg = context.config
    lists = rung.response_format is None
    messages = list(request.messages)
    raw = (await context.calls.call("planner", "planner", request)).response.content or ""
    try:
        return parse_plan(raw, cfg.max_workers, lists=lists, echoes=echoes), raw
    except PlanError:
        repair = [*messages, {"role": "assistant", "content": raw},
                  repair_message(cfg.max_workers, lists=lists)]
        request = context.request("planner", repair, response_format=rung.response_format)
        raw = (await context.calls.call("planner", "planner", request)).response.content or ""
        return parse_plan(raw, cfg.max_workers, lists=lists, echoes=echoes), raw


# Worked examples a small local planner is shown before the task (as earlier turns of the
# conversation), with LOCAL_PLANNER_PROMPT only: one task that names items, one that does
# not. Their topics are far from any benchmark task's; a sub-task equal to one of theirs
# is an echo, dropped like the prompt's.
PLAN_EXAMPLES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Compare Paris, Rome and Berlin for a weekend trip.",
     ("Paris for a weekend trip: its sights, food and costs",
      "Rome for a weekend trip: its sights, food and costs",
      "Berlin for a weekend trip: its sights, food and costs")),
    ("Write a short guide to baking bread at home.",
     ("Choose the flour, yeast and salt for a simple loaf",
      "Mix and knead the dough until it is smooth",
      "Let the dough rise, then shape the loaf",
      "Bake the loaf and tell when it is done")),
)


def plan_messages(prompt: str, max_workers: int, task: str) -> list[dict[str, Any]]:
    """The planner's conversation: the system prompt, the worked examples when the prompt
    is the small local model's (``LOCAL_PLANNER_PROMPT``), then the task."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": prompt.format(max_workers=max_workers)}]
    if prompt == LOCAL_PLANNER_PROMPT:
        for example, answer in PLAN_EXAMPLES:
            messages += [{"role": "user", "content": example},
                         {"role": "assistant",
                          "content": json.dumps({"tasks": list(answer[:max_workers])})}]
    messages.append({"role": "user", "content": task})
    return messages


async def make_plan(context: StepContext, task: str) -> tuple[str, ...]:
    """Ask the planner down the response_format ladder, from the rung its endpoint took
    last; every rung is tried before a PlanError ends the run."""
    cfg = context.config
    messages = plan_messages(cfg.planner_prompt, cfg.max_workers, task)
    echoes = tuple(str(message["content"]) for message in messages
                   if message["role"] != "assistant")
    echoes += tuple(example for _, answer in PLAN_EXAMPLES for example in answer)
    # A replay asks what the recording asked, whatever this session learnt: the rungs
    # whose request the cassette holds (the recording may have started at a remembered one).
    start = None if cfg.replay else remembered_rung(cfg.planner)
    recorded = context.recorded if cfg.replay else None
    last_error: SwarmError | None = None
    refused = False
    ladder = [(rung, context.request("planner", messages, response_format=rung.response_format))
              for rung in plan_rungs(cfg.max_workers, local=cfg.planner.is_local, start=start,
                                     items=named_items(task), count=named_count(task),
                                     replay=bool(cfg.replay))]
    if recorded is not None:
        # Nothing recorded: the first rung's ReplayMiss says what the cassette holds.
        ladder = [step for step in ladder if recorded(step[1])] or ladder[:1]
    for rung, request in ladder:
        if recorded is None and rung.after_refusal and not refused:
            continue
        try:
            parsed, raw = await _ask(context, rung, request, echoes)
        except ResponseFormatUnsupported as exc:
            last_error, refused = exc, True
            continue
        except PlanError as exc:
            last_error, refused = exc, False
            log.info("swarmkit planner: no usable plan with %s (%s)", rung.name, exc)
            continue
        if parsed.dropped:
            log.info("swarmkit planner: left out %d placeholder, echoed or repeated tasks",
                     len(parsed.dropped))
        if not cfg.replay:
            remember_rung(cfg.planner, rung.name)
        context.emit(PlanReady(parsed.tasks, raw, context.now(), parsed.truncated_from))
        return parsed.tasks
    if isinstance(last_error, PlanError):
        raise last_error
    raise PlanError(f"no response_format was accepted by the planner's server: {last_error}")
