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

    def edits(self) -> list[tuple[str, str, str]]:
        """``(proposed, approved, what)`` per sub-task, in order: what is ``kept``,
        ``edited``, ``dropped`` (approved empty) or ``added`` (proposed empty)."""
        rows: list[tuple[str, str, str]] = []
        for op, before, after in _aligned(self.proposed, self.approved):
            if op == "equal":
                rows += [(t, t, "kept") for t in before]
                continue
            paired = min(len(before), len(after))
            rows += [(b, a, "edited") for b, a in zip(before[:paired], after[:paired],
                                                      strict=True)]
            rows += [(b, "", "dropped") for b in before[paired:]]
            rows += [("", a, "added") for a in after[paired:]]
        return rows

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
    kinds = [what for _, _, what in PlanReview(tuple(proposed), tuple(approved), 0, 0, 0,
                                               approved_by).edits()]
    return PlanReview(tuple(proposed), tuple(approved), kinds.count("edited"),
                      kinds.count("dropped"), kinds.count("added"), approved_by)


def _aligned(before: tuple[str, ...], after: tuple[str, ...]
             ) -> list[tuple[str, tuple[str, ...], tuple[str, ...]]]:
    """The two lists as a diff: ``(op, proposed part, approved part)``, in order."""
    matcher = difflib.SequenceMatcher(a=before, b=after, autojunk=False)
    return [(op, before[a0:a1], after[b0:b1])
            for op, a0, a1, b0, b1 in matcher.get_opcodes()]
