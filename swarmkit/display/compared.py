"""Placeholder for the side-by-side comparison view (replaced by the real view)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..runrecord import RunRecord
from .rendered import Rendered

__all__ = ["ComparisonTable", "ComparisonView", "comparison_rows"]


def comparison_rows(labels: Sequence[str], runs: Sequence[RunRecord]) -> list[dict[str, Any]]:
    return [{"variant": label, "status": run.status, "answer": run.answer}
            for label, run in zip(labels, runs, strict=True)]


class ComparisonView(Rendered):
    def __init__(self, labels: Sequence[str], runs: Sequence[RunRecord]) -> None:
        self.rows = comparison_rows(labels, runs)

    def text(self) -> str:
        return "\n".join(f"{row['variant']}: {row['status']} {row['answer']}" for row in self.rows)

    def html(self) -> str:
        return "<pre>" + self.text() + "</pre>"


ComparisonTable = ComparisonView
