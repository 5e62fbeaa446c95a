"""``PlanReview``: how a plan was looked at and approved before the fan-out.

A reviewed run (``swarmkit.plan(...)`` then ``Plan.run``, ``--confirm-over`` answered,
the notebook's review) keeps the planner's plan (``proposed``), the sub-tasks that ran
(``approved``) and how they differ. The counts are a pure function of the two lists, so
a record read back, a replay and the tables always agree on them.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any, Literal

from ..config.wording import counted

__all__ = ["APPROVERS", "ApprovedBy", "PlanReview", "review_of"]

# "review": the notebook's review widget; "python": Plan.run from code; "yes": the
# terminal's confirmation (answered y, or --yes).
ApprovedBy = Literal["review", "python", "yes"]
APPROVERS: tuple[str, ...] = ("review", "python", "yes")


@dataclass(frozen=True, slots=True)
class PlanReview:
    """The planner's plan, the approved one, and the edits between them."""

    proposed: tuple[str, ...]
    approved: tuple[str, ...]
    edited: int
    dropped: int
    added: int
    approved_by: ApprovedBy

    @property
    def changed(self) -> bool:
        return bool(self.edited or self.dropped or self.added)

    def line(self) -> str:
        """The one line every view states it in:
        ``plan reviewed: 8 proposed · 1 edited · 1 dropped · 1 added``."""
        parts = [f"{len(self.proposed)} proposed"]
        parts += [f"{count} {name}" for name, count in
                  (("edited", self.edited), ("dropped", self.dropped), ("added", self.added))
                  if count]
        if not self.changed:
            parts.append("approved as proposed")
        how = {"review": "in the review", "python": "from Python",
               "yes": "at the prompt"}[self.approved_by]
        return (f"plan reviewed: {' · '.join(parts)} "
                f"({counted(len(self.approved), 'sub-task')} run, approved {how})")

    def to_dict(self) -> dict[str, Any]:
        return {"proposed": list(self.proposed), "approved": list(self.approved),
                "edited": self.edited, "dropped": self.dropped, "added": self.added,
                "approved_by": self.approved_by}


def review_of(proposed: tuple[str, ...] | list[str], approved: tuple[str, ...] | list[str],
              approved_by: ApprovedBy) -> PlanReview:
    """The review of ``approved`` against ``proposed``.

    The two lists are aligned as a diff (order kept): a proposed sub-task replaced by
    another in the same place counts as edited, one with no counterpart as dropped, an
    approved one with none as added. So editing one box, unticking one and adding one
    reads ``1 edited · 1 dropped · 1 added``."""
    before, after = tuple(proposed), tuple(approved)
    edited = dropped = added = 0
    matcher = difflib.SequenceMatcher(a=before, b=after, autojunk=False)
    for op, a0, a1, b0, b1 in matcher.get_opcodes():
        if op == "replace":
            paired = min(a1 - a0, b1 - b0)
            edited += paired
            dropped += (a1 - a0) - paired
            added += (b1 - b0) - paired
        elif op == "delete":
            dropped += a1 - a0
        elif op == "insert":
            added += b1 - b0
    return PlanReview(before, after, edited, dropped, added, approved_by)
