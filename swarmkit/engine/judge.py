"""The judge: a model that scores an answer against the rubric, pointwise, 0 to 10.

Its calls are a role of their own (role ``judge``, steps ``judge-<i>`` for the i-th text
judged) and go through the run's model calls like any step: under the run's budget,
cached, recorded in the cassette and replayed offline. It asks for JSON
``{"score": 0-10, "reason": "..."}`` down the planner's ``response_format`` ladder
(``engine.ladder``, remembered apart as purpose ``judge``) and records score / 10.
Its CallRecord keeps the prompt and the reply, so the drill-down shows both.

A judge never fails the run: a reply with no score, a refused or failed call (no key for
it included), or a call the budget cannot fit is a judge ScoreRecord with its error and
no score (unknown is not 0), and the run keeps its answer. Only a replay miss stops the
run, as for any step.
"""

from __future__ import annotations

import json
import logging
import math
import re
from typing import Any

from ..config.outputschema import json_candidates
from ..credentials.scrub import one_line
from ..errors import BudgetExceeded, ConfigError, ProviderError, ResponseFormatUnsupported
from ..record.modelcall import ChatRequest
from ..record.rows import ScoreRecord
from .context import StepContext
from .ladder import Rung, output_rungs, remember_rung, remembered_rung

__all__ = ["DEFAULT_RUBRIC", "JUDGE_NAME", "JUDGE_SCHEMA", "judge_messages", "judge_text",
           "parse_verdict"]

log = logging.getLogger("swarmkit")

JUDGE_NAME = "judge"  # the name of the judge's scores (Comparison.scores()'s check column)
DEFAULT_RUBRIC = "The answer is correct, complete and clear for the task."
JUDGE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"score": {"type": "integer", "minimum": 0, "maximum": 10},
                   "reason": {"type": "string"}},
    "required": ["score", "reason"],
    "additionalProperties": False,
}
_SYSTEM = (
    "You are a strict, fair judge. Score the answer to the task against the rubric, from "
    "0 (it fails the rubric) to 10 (it meets the rubric fully). Reply with JSON only: an "
    'object with "score" (a whole number from 0 to 10) and "reason" (one sentence).'
)
_SCORE_WORDS = re.compile(r"\bscore\W{0,5}(\d{1,2}(?:\.\d+)?)\b", re.IGNORECASE)
_MAX_CHARS = 300


def judge_messages(task: str, rubric: str | None, answer: str) -> list[dict[str, Any]]:
    """What the judge is asked about ``answer`` (the default rubric when none is set)."""
    rubric = rubric if rubric and rubric.strip() else DEFAULT_RUBRIC
    return [
        {"role": "system", "content": _SYSTEM},
        {"role": "user", "content": f"Task:\n{task}\n\nRubric:\n{rubric}\n\nAnswer:\n{answer}"},
    ]


def _line(text: str) -> str:
    return one_line(text, _MAX_CHARS)


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            return None
    if isinstance(value, int | float) and math.isfinite(value) and 0 <= value <= 10:
        return float(value)
    return None


def parse_verdict(raw: str | None) -> tuple[float, str | None]:
    """``(score out of 10, reason)`` from a judge's reply: its JSON object (fences and
    prose around it allowed), else "score: 7" in its words. A ValueError (one line)
    says why a reply holds no score."""
    text = raw or ""
    for candidate in json_candidates(text):
        try:
            value = json.loads(candidate, strict=False)
        except ValueError:
            continue
        if isinstance(value, dict) and "score" in value:
            score = _number(value["score"])
            if score is None:
                raise ValueError(f"the judge's score {_line(repr(value['score']))} is not "
                                 "a number from 0 to 10")
            reason = value.get("reason")
            return score, None if reason is None else _line(str(reason))
    found = _SCORE_WORDS.search(text)
    if found is not None and (score := _number(found.group(1))) is not None:
        return score, _line(text)
    preview = _line(text)[:80]
    raise ValueError(f"the judge's reply held no score (got {preview!r})" if preview
                     else "the judge's reply was empty")


async def _judge_one(context: StepContext, step: str, messages: list[dict[str, Any]]
                     ) -> ScoreRecord:
    cfg = context.config
    role = cfg.role("judge")
    # A replay asks what the recording asked: the rungs whose request the cassette holds.
    start = None if cfg.replay else remembered_rung(role, "judge")
    ladder: list[tuple[Rung, ChatRequest]] = [
        (rung, context.request("judge", messages, response_format=rung.response_format))
        for rung in output_rungs(JUDGE_SCHEMA, local=role.is_local, start=start,
                                 name="judge_score")]
    recorded = context.recorded if cfg.replay else None
    if recorded is not None:
        ladder = [item for item in ladder if recorded(item[1])] or ladder[:1]
    refused = False
    error = "no response_format was accepted by the judge's server"
    for rung, request in ladder:
        if recorded is None and rung.after_refusal and not refused:
            continue
        try:
            outcome = await context.calls.call("judge", step, request, keep=True)
        except ResponseFormatUnsupported as exc:
            refused, error = True, f"ResponseFormatUnsupported: {exc}"
            continue
        except (BudgetExceeded, ConfigError, ProviderError) as exc:  # e.g. no key for it
            return ScoreRecord(JUDGE_NAME, None, None, "judge",
                               error=_line(f"{type(exc).__name__}: {exc}"), step=step)
        try:
            score, reason = parse_verdict(outcome.response.content)
        except ValueError as exc:
            return ScoreRecord(JUDGE_NAME, None, None, "judge", error=str(exc), step=step)
        if not cfg.replay:
            remember_rung(role, rung.name, "judge")
        return ScoreRecord(JUDGE_NAME, round(score / 10, 6), reason, "judge", step=step)
    log.info("swarmkit judge: %s", error)
    return ScoreRecord(JUDGE_NAME, None, None, "judge", error=_line(error), step=step)


async def judge_text(context: StepContext, task: str, text: str, index: int = 0
                     ) -> ScoreRecord:
    """The judge's score of ``text`` (the answer, or a worker's output without a reducer),
    the ``index``-th text judged in the run: its step is ``judge-<index>``."""
    messages = judge_messages(task, context.config.rubric, text)
    return await _judge_one(context, f"judge-{index}", messages)
