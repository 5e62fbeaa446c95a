"""The ``response_format`` ladder of the planner and of typed workers (``--schema``), and
the rung each endpoint took this session.

OpenAI-compatible servers differ in what structured output they take, and say so
differently (swarmkit.provider.openaiprovider maps each refusal to ResponseFormatUnsupported):

- OpenAI, vLLM, Ollama ≥ 0.5, LM Studio and current llama.cpp ``llama-server`` take
  ``json_schema``. vLLM refuses a schema its grammar backend cannot compile (HTTP 400,
  "The provided JSON schema contains features not supported by xgrammar.").
- llama-cpp-python refuses ``json_schema`` with HTTP 500 ("Input should be 'text' or
  'json_object'"), older ``llama-server`` builds with HTTP 500 ("response_format type must
  be one of "text" or "json_object""). Both take ``json_object`` and llama-cpp-python
  turns its ``schema`` field into a grammar.
- LM Studio refuses ``json_object`` with HTTP 400 ("'response_format.type' must be
  'json_schema' or 'text'"); LiteLLM in front of a model without JSON mode refuses any
  ``response_format`` with HTTP 400 ("UnsupportedParamsError: ... does not support
  parameters: ['response_format']"); older Ollama ignores ``json_schema`` silently.

So the planner goes down every rung before giving up: ``json_schema`` → ``json_object``
with the schema → bare ``json_object`` (only when the rung above was refused: it is the
same request without the field a strict server objects to) → plain text. The rung that
gave a usable plan is remembered per endpoint and model for the process, so later runs
start there instead of paying for refusals again.

Workers with an output schema (``output_rungs``) go down the same rungs with the user's
schema, and the judge with its score's schema; each rung is remembered apart from the
planner's (``purpose``), since a server may take one schema and refuse the other.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from typing import Any, Literal

from ..config.swarmconfig import RoleConfig

__all__ = [
    "Rung",
    "RungName",
    "forget_rungs",
    "item_task_pattern",
    "output_rungs",
    "plan_rungs",
    "plan_schema",
    "remember_rung",
    "remembered_rung",
]

RungName = Literal["json_schema", "json_object+schema", "json_object", "text"]

# A sub-task is words, not identifiers (the README's rule; ``engine.planner`` checks the
# same in Python): one line of three to 24 words, the first two of letters (so "sub-task
# 1, 2" cannot match), no word holding an underscore, a dot, a slash or a quote (so
# "hammer.saw.drill.EASY_TIP_1.1.3.1" and "pre-implementation_2" cannot), a full stop
# only at its end, at most one hyphen a word (so no "breakfast-drinks-cocoa-and-tea").
# A grammar-friendly regex: llama.cpp turns it into a grammar.
_LETTERS = r"[A-Za-z][A-Za-z']{0,19}(-[A-Za-z']{1,20})?[,:]?"
_PIECE = r'[^ \n\r\t"\\_./=<>{}|-]{1,20}'
_WORD = rf"{_PIECE}(-{_PIECE})?"
_ONE_LINE_TASK = rf"^{_LETTERS} {_LETTERS}( {_WORD}){{1,22}}\.?$"
# The pattern before issue 32, kept so that a recording made with it still replays.
_LEGACY_ONE_LINE_TASK = r'^[A-Za-z][^ \n\r\t"\\]{0,39}( [^ \n\r\t"\\]{1,40}){2,23}$'


def item_task_pattern(item: str) -> str:
    """The pattern of the sub-task for ``item`` (a word or three the task names): it
    starts with the item, its first letter a capital, then two to 22 words as above."""
    head = re.sub(r"([\\^$.|?*+()\[\]{}])", r"\\\1", item[:1].upper() + item[1:])
    return rf"^{head}[,:]?( {_WORD}){{2,22}}\.?$"


@dataclass(frozen=True, slots=True)
class Rung:
    """One way of asking for the plan. ``response_format`` None means plain text;
    ``after_refusal`` rungs are tried only when the rung above was refused."""

    name: RungName
    response_format: dict[str, Any] | None
    after_refusal: bool = False


def plan_schema(
    max_workers: int | None = None, *, exact: bool = False, items: tuple[str, ...] = (),
    legacy: bool = False,
) -> dict[str, Any]:
    """The plan's JSON schema. ``exact`` asks for exactly ``max_workers`` one-line tasks:
    small grammar-constrained models under-plan and put raw newlines in strings. With
    ``items`` (the task's named items, ``engine.nameditems``) it asks for one sub-task per
    item, in order, each starting with its item. ``legacy``: the exact schema as it was
    before issue 32 (a replay of an older recording asks what that recording asked)."""
    tasks: dict[str, Any] = {"type": "array", "items": {"type": "string"}}
    if items:
        tasks = {"type": "array", "minItems": len(items), "maxItems": len(items),
                 "prefixItems": [{"type": "string", "pattern": item_task_pattern(item)}
                                 for item in items],
                 }
    else:
        if max_workers is not None:
            tasks.update(minItems=max_workers if exact else 1, maxItems=max_workers)
        if exact:
            pattern = _LEGACY_ONE_LINE_TASK if legacy else _ONE_LINE_TASK
            tasks["items"] = {"type": "string", "pattern": pattern}
    return {
        "type": "object",
        "properties": {"tasks": tasks},
        "required": ["tasks"],
        "additionalProperties": False,
    }


def _local_rungs(max_workers: int, items: tuple[str, ...], legacy: bool) -> list[Rung]:
    schema = plan_schema(max_workers, exact=True, items=items, legacy=legacy)
    exact = {"name": "swarm_plan", "schema": schema, "strict": True}
    return [Rung("json_schema", {"type": "json_schema", "json_schema": exact}),
            Rung("json_object+schema", {"type": "json_object", "schema": schema})]


def plan_rungs(
    max_workers: int, *, local: bool, start: RungName | None = None,
    items: tuple[str, ...] = (), count: int | None = None, replay: bool = False,
) -> list[Rung]:
    """The ladder, best first, from ``start`` (a remembered rung) when given.

    ``items``: what the task names (``engine.nameditems``); a local planner is held to
    one sub-task per item when there are 1 to ``max_workers`` of them, else to ``count``
    sub-tasks (what the task counts, ``engine.nameditems``) if 2 to ``max_workers``, else
    to ``max_workers``. ``replay`` adds
    the local rungs as recorded before issue 32, after the current ones (only a
    recording's requests are asked in a replay)."""
    if local:
        # The embedded llama.cpp server takes json_schema as a grammar: a 135M model then
        # writes exactly max_workers one-line tasks that start with a letter, or one
        # sub-task per named item.
        held = items if 0 < len(items) <= max_workers else ()
        exact = count if count is not None and 2 <= count <= max_workers else max_workers
        rungs = _local_rungs(exact, held, legacy=False)
        if replay:
            rungs += _local_rungs(max_workers, (), legacy=True)
    else:
        strict = {"name": "swarm_plan", "schema": plan_schema(), "strict": True}
        rungs = [
            Rung("json_schema", {"type": "json_schema", "json_schema": strict}),
            Rung("json_object+schema",
                 {"type": "json_object", "schema": plan_schema(max_workers)}),
            Rung("json_object", {"type": "json_object"}, after_refusal=True),
        ]
    return _from(rungs, start)


def output_rungs(
    schema: dict[str, Any], *, local: bool, start: RungName | None = None,
    name: str = "worker_output",
) -> list[Rung]:
    """A typed worker's ladder for the user's ``schema``, best first, from ``start``
    (the judge's too, for its score's schema, under another ``name``)."""
    strict = {"name": name, "schema": schema, "strict": True}
    rungs = [Rung("json_schema", {"type": "json_schema", "json_schema": strict})]
    rungs.append(Rung("json_object+schema", {"type": "json_object", "schema": schema}))
    if not local:
        rungs.append(Rung("json_object", {"type": "json_object"}, after_refusal=True))
    return _from(rungs, start)


def _from(rungs: list[Rung], start: RungName | None) -> list[Rung]:
    rungs.append(Rung("text", None))
    names = [rung.name for rung in rungs]
    if start in names:
        rungs = rungs[names.index(start):]
        # The remembered rung is tried first, whatever the rung above it would have said.
        rungs[0] = Rung(rungs[0].name, rungs[0].response_format)
    return rungs


# Process-wide: a kernel's runs against one server share what was learnt about it.
_taken: dict[tuple[str, str, str], RungName] = {}
_lock = threading.Lock()


def _key(role: RoleConfig, purpose: str) -> tuple[str, str, str]:
    return (role.base_url or "", role.model, purpose)


def remembered_rung(role: RoleConfig, purpose: str = "plan") -> RungName | None:
    """The rung that last gave ``role``'s endpoint and model a usable answer for
    ``purpose`` (``plan``, or ``output`` for typed workers), if any."""
    with _lock:
        return _taken.get(_key(role, purpose))


def remember_rung(role: RoleConfig, name: RungName, purpose: str = "plan") -> None:
    with _lock:
        _taken[_key(role, purpose)] = name


def forget_rungs() -> None:
    """Forget every remembered rung (the next runs start at the top of the ladder)."""
    with _lock:
        _taken.clear()
