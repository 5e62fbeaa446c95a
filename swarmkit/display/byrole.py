"""Spend by role: planner, workers, reducer, judge and their total, from a Run's calls.

The totals line counts every call, the worker table only the workers' calls; this
summary is what makes the two add up on screen. Its last row is the run's own total,
summed from the same calls. Each role's row names the model(s) its calls asked for, and
counts its calls cut at max tokens.

A tree (``by_depth``): the workers' calls get one row per depth (``workers · depth 2``:
the calls of the workers at that depth, ``worker-2.1`` ...), and the child swarms'
reducer calls (``reducer-of-<id>``, role ``reducer``) a row of their own, ``reducer
(splits)`` (as ``--dry-run`` names their bound), apart from the run's final reducer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING

from ..record.steps import split_owner_of_step
from ..record.usage import Usage

if TYPE_CHECKING:
    from ..record.rows import CallRecord

__all__ = ["ROLE_HEADERS", "RoleSpend", "role_spend"]

# A "cut" column (calls cut at max tokens) goes before "model" when a run has any.
ROLE_HEADERS = ("role", "calls", "attempts", "retries", "tokens in", "tokens out", "cost",
                "model")
_LABELS = {"planner": "planner", "worker": "workers", "reducer": "reducer", "judge": "judge"}


@dataclass(frozen=True, slots=True)
class RoleSpend:
    """What the calls of one role (or of all: ``total``) added up to."""

    role: str
    calls: int = 0
    attempts: int = 0
    usage: Usage = field(default_factory=Usage)
    cost_usd: Decimal | None = Decimal(0)
    retries: int = 0  # the calls' CallRecord.retries
    models: tuple[str, ...] = ()  # the models its calls asked for, first seen first
    cut: int = 0  # its calls cut at max tokens (CallRecord.cut)

    @property
    def model(self) -> str:
        """The model cell: its one model, or its models comma-separated."""
        return ", ".join(self.models)


_SPLIT_REDUCERS = "reducer (splits)"


def _label(call: CallRecord, by_depth: bool) -> str:
    if by_depth and call.role == "worker" and call.step.startswith("worker-"):
        return f"workers · depth {call.step.count('.') + 1}"
    if by_depth and split_owner_of_step(call.step) is not None:
        return _SPLIT_REDUCERS
    return _LABELS.get(call.role, call.role)


def _order(label: str) -> tuple[int, str]:
    """planner, the workers (by depth), the child reducers, reducer, judge, the rest."""
    if label.startswith("workers · depth "):
        return 1, f"{int(label.rsplit(' ', 1)[1]):04d}"
    known = {"planner": 0, "workers": 1, _SPLIT_REDUCERS: 2, "reducer": 3, "judge": 4}
    return known.get(label, 5), label


def role_spend(calls: list[CallRecord], by_depth: bool = False) -> list[RoleSpend]:
    """One row per role that made calls (planner, workers, reducer, others), then total;
    ``by_depth``: the workers' row split by depth, the child reducers apart (a tree)."""
    groups: dict[str, list[CallRecord]] = {}
    for call in calls:
        groups.setdefault(_label(call, by_depth), []).append(call)
    order = sorted(groups, key=_order)
    rows = [_spend(label, groups[label]) for label in order]
    return [*rows, _spend("total", calls, named=False)]


def _spend(role: str, calls: list[CallRecord], named: bool = True) -> RoleSpend:
    usage = Usage.total(call.usage for call in calls)
    models = tuple(dict.fromkeys(c.model for c in calls)) if named else ()
    return RoleSpend(role, len(calls), sum(c.attempts for c in calls), usage, usage.cost,
                     sum(c.retries for c in calls), models, sum(1 for c in calls if c.cut))
