"""Answers cut at max tokens: which calls and workers, and the lines that say so.

A call whose ``finish_reason`` is ``length`` (``CallRecord.cut``) stopped at its max
tokens, maybe mid-sentence, yet it succeeded: its worker stays ``completed`` and the run
``completed``. So every view marks it: the totals line counts the cut calls, the spend
by role has a ``cut`` column, a cut worker's status cell and drill-down say so, and a cut
final answer (or a reduction that merged cut parts) gets a warning above it that names
the option to raise. Everything here reads a run's calls, so a replay marks the same.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from ..record.steps import reducer_part_of_step, worker_id_of_step

if TYPE_CHECKING:
    from ..record.rows import CallRecord
    from ..record.runrecord import RunRecord

__all__ = ["CUT_MARK", "answer_warning", "cut_count", "cut_line", "cut_note", "cut_workers",
           "max_tokens_of", "raise_hint", "with_cut_mark"]

CUT_MARK = "cut at max tokens"
_LISTED_STEPS = 12  # steps a cut line names before "and N more"


def cut_count(calls: Iterable[CallRecord]) -> int:
    """How many of ``calls`` stopped at their max tokens."""
    return sum(1 for call in calls if call.cut)


def cut_line(calls: Iterable[CallRecord]) -> str | None:
    """``calls cut at max tokens: planner, worker-2, reducer-1.3, reducer``: every cut
    call's step (a tree reduction's parts by their ``reducer-<level>.<i>``), under the
    spend by role; None when no call was cut."""
    steps = list(dict.fromkeys(call.step for call in calls if call.cut))
    if not steps:
        return None
    listed = ", ".join(steps[:_LISTED_STEPS])
    more = len(steps) - _LISTED_STEPS
    return f"calls {CUT_MARK}: {listed}" + (f" and {more:,} more" if more > 0 else "")


def cut_workers(calls: Iterable[CallRecord]) -> set[str]:
    """The workers whose output was cut, by dotted id (``"7"``, ``"2.1"``): their last
    answered call (``calls`` in start order, as ``RunRecord.calls`` are) stopped at its
    max tokens. A cut call that a later one replaced (a typed worker's repair, a tool
    loop's next turn) does not count."""
    last: dict[str, bool] = {}
    for call in calls:
        index = worker_id_of_step(call.step)
        if index is not None and call.error is None:
            last[index] = call.cut
    return {index for index, cut in last.items() if cut}


def with_cut_mark(status: str, cut: bool) -> str:
    """A worker's status cell: ``completed · cut at max tokens`` when its output was cut
    (the status itself stays; its first word still classes the row)."""
    return f"{status} · {CUT_MARK}" if cut else status


def max_tokens_of(config: Mapping[str, Any], role: str) -> int | None:
    """``role``'s max tokens in a run's recorded config; None when it has none."""
    role_config = config.get(role)
    value = role_config.get("max_tokens") if isinstance(role_config, Mapping) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def raise_hint(role: str, max_tokens: int | None) -> str:
    """``raise reducer_max_tokens (e.g. %swarm config reducer_max_tokens=4096) or
    --max-tokens``: the per-role option, and the flag that sets every role's."""
    option = f"{role}_max_tokens"
    example = f"{option}={max_tokens * 2}" if max_tokens else f"{option}=N"
    return f"raise {option} (e.g. %swarm config {example}) or --max-tokens"


def cut_note(role: str, max_tokens: int | None) -> str:
    """``cut at max tokens (256); raise worker_max_tokens ...``: a cut worker's line."""
    limit = f" ({max_tokens})" if max_tokens else ""
    return f"{CUT_MARK}{limit}; {raise_hint(role, max_tokens)}"


def answer_warning(run: RunRecord) -> str | None:
    """The line above a cut answer: the final reducer call stopped at its max tokens, or
    parts of a tree reduction did (so the answer merged cut partial answers); None when
    neither did."""
    if run.answer is None:
        return None
    limit = max_tokens_of(run.config, "reducer")
    shown = f" ({limit})" if limit else ""
    final = [call for call in run.calls if call.step == "reducer" and call.error is None]
    if final and final[-1].cut:
        return f"⚠ the answer was {CUT_MARK}{shown}; {raise_hint('reducer', limit)}"
    parts = [call for call in run.calls
             if reducer_part_of_step(call.step) is not None and call.error is None]
    cut = cut_count(parts)
    if cut:
        return (f"⚠ {cut} of the reducer's {len(parts)} partial answers were {CUT_MARK}"
                f"{shown}, so the answer merges cut text; {raise_hint('reducer', limit)}")
    return None
