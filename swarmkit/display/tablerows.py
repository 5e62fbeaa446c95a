"""The rows of a run's static tables: one per worker, one per tool call and one per
score, each cell clipped to one line (the drill-down holds the whole text).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from ..credentials.scrub import one_line
from .tablefmt import format_cost, format_tokens
from .truncation import with_cut_mark

if TYPE_CHECKING:
    from ..record.rows import ScoreRecord, ToolCallRecord, WorkerRecord

__all__ = ["CELL_WIDTH", "SCORE_HEADERS", "TASK_WIDTH", "data_cell", "score_figure",
           "score_row", "tool_row", "worker_row"]

TASK_WIDTH = 48
CELL_WIDTH = 60


def worker_row(w: WorkerRecord, retries: int, cut: bool) -> tuple[Any, ...]:
    calls = f"{w.calls} ({w.cached_calls} cached)" if w.cached_calls else str(w.calls)
    return (
        w.index,
        one_line(w.task, TASK_WIDTH),
        with_cut_mark(w.status_label, cut),
        calls,
        w.attempts,
        retries,
        format_tokens(w.usage.prompt_tokens),
        format_tokens(w.usage.completion_tokens),
        format_cost(w.cost_usd),
        f"{w.latency:.2f}s",
        w.tool_calls,
    )


def data_cell(data: Any, name: str) -> str:
    """A worker's value of one schema field, on one line ("" when it has none)."""
    if not isinstance(data, dict) or name not in data:
        return ""
    value = data[name]
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return one_line(text, CELL_WIDTH)


def tool_row(t: ToolCallRecord) -> tuple[Any, ...]:
    return (
        t.worker if t.parent is None else t.worker_id,  # a child's dotted id (depth > 1)
        t.hop,
        t.tool,
        one_line(t.arguments, CELL_WIDTH),
        one_line(t.result, CELL_WIDTH),
        one_line(t.error, CELL_WIDTH) or "",
        f"{t.duration:.3f}s",
    )


SCORE_HEADERS = ("score", "value", "reason")


def score_figure(score: ScoreRecord) -> str:
    """``0.80``; ``error`` when no score could be taken (unknown, not 0)."""
    return "error" if score.score is None else f"{float(score.score):.2f}"


def score_row(score: ScoreRecord) -> tuple[str, str, str]:
    """A check's or the judge's score: its name, value and reason (or error)."""
    why = score.error if score.error else score.reason
    return (one_line(score.name, CELL_WIDTH), score_figure(score),
            one_line(why or "", CELL_WIDTH))
