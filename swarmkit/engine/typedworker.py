"""A typed worker's answer (``--schema``): asked down the ladder, checked, repaired once.

Without tools, the worker's request goes down the ``response_format`` ladder with the
user's schema (swarmkit.engine.ladder), from the rung its endpoint took last; a refusal
moves one rung down. With tools, the tool loop's final answer is the one checked. Every
typed worker's conversation says the reply must be JSON matching the schema, so the
plain-text rung (and OpenAI's ``json_object``, which wants the word) can be followed.
A reply that does not match gets one repair (its reply and the one-line validation
error are sent back); a second miss fails the worker with reason ``schema``.
"""

from __future__ import annotations

import json
from typing import Any, Protocol

from ..config.outputschema import SchemaMismatch, check_reply
from ..config.swarmconfig import SwarmConfig
from ..errors import OutputSchemaError, ResponseFormatUnsupported, SwarmError
from ..record.modelcall import CallOutcome, ChatRequest
from .context import StepContext
from .ladder import Rung, output_rungs, remember_rung, remembered_rung

__all__ = ["TypedWorker", "checked_answer", "schema_instruction", "typed_answer"]


class TypedWorker(Protocol):
    """What asking for a typed answer needs of a worker (``engine.worker.WorkerContext``)."""

    @property
    def run(self) -> StepContext: ...

    @property
    def config(self) -> SwarmConfig: ...

    def request(self, messages: list[dict[str, Any]], **extra: Any) -> ChatRequest: ...

    async def call(self, request: ChatRequest) -> CallOutcome: ...


def schema_instruction(messages: list[dict[str, Any]], schema_text: str) -> list[dict[str, Any]]:
    """``messages`` with the schema asked for at the end of the worker's user turn."""
    *head, user = messages
    content = (f"{user['content']}\n\nAnswer with JSON only: one value matching this "
               f"JSON schema:\n{schema_text}")
    return [*head, {**user, "content": content}]


def _repair(error: SchemaMismatch) -> dict[str, str]:
    return {"role": "user", "content": (
        f"That reply does not match the JSON schema ({error}). Answer again with JSON "
        "only, matching the schema.")}


async def checked_answer(
    worker: TypedWorker, messages: list[dict[str, Any]], raw: str,
    response_format: dict[str, Any] | None,
) -> tuple[str, Any]:
    schema_text = worker.config.output_schema or ""
    try:
        return raw, check_reply(schema_text, raw)
    except SchemaMismatch as exc:  # one repair, on the same rung
        repair = [*messages, {"role": "assistant", "content": raw}, _repair(exc)]
    request = worker.request(repair, response_format=response_format)
    raw = (await worker.call(request)).response.content or ""
    try:
        return raw, check_reply(schema_text, raw)
    except SchemaMismatch as exc:
        raise OutputSchemaError(f"the reply does not match the schema: {exc}") from None


async def typed_answer(
    worker: TypedWorker, messages: list[dict[str, Any]]
) -> tuple[str, Any]:
    """The worker's raw reply and its parsed, checked value, asked down the ladder.
    Raises OutputSchemaError when the repaired reply still does not match, and the
    ProviderError of the last refusal if every rung is refused."""
    cfg = worker.config
    schema_text = cfg.output_schema or ""
    # A replay asks what the recording asked (see the planner): the recorded rungs only.
    start = None if cfg.replay else remembered_rung(cfg.worker, "output")
    recorded = worker.run.recorded if cfg.replay else None
    ladder: list[tuple[Rung, ChatRequest]] = [
        (rung, worker.request(messages, response_format=rung.response_format))
        for rung in output_rungs(json.loads(schema_text), local=cfg.worker.is_local,
                                 start=start)]
    if recorded is not None:
        ladder = [step for step in ladder if recorded(step[1])] or ladder[:1]
    last_error: SwarmError | None = None
    refused = False
    for rung, request in ladder:
        if recorded is None and rung.after_refusal and not refused:
            continue
        try:
            raw = (await worker.call(request)).response.content or ""
        except ResponseFormatUnsupported as exc:
            last_error, refused = exc, True
            continue
        if not cfg.replay:
            remember_rung(cfg.worker, rung.name, "output")
        return await checked_answer(worker, messages, raw, rung.response_format)
    assert last_error is not None  # the text rung sends no response_format to refuse
    raise last_error
