"""A comparison's scores: one row per (variant, repeat, score name), their summary per
variant, and the rule that marks a winner.

The rows come from the scored runs (each check's and the judge's ``ScoreRecord``), one
run per variant and repeat. A summary holds the mean, the spread (the sample standard
deviation over the repeats) and the range; a score that could not be taken (a check that
raised, a judge reply that was no score) counts as 0 in the mean, as a failed check does,
and is counted apart in ``errors`` so the view can say so.

The winner rule (the README states it the same way): for each score name, the variant
with the highest mean is marked the winner only when every variant has at least two
repeats and its interval ``mean ± spread`` lies wholly above every other variant's
interval. Overlapping intervals, a tie, or a single repeat: no winner, only the scores.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import ConfigError

if TYPE_CHECKING:
    import pandas

    from ..record.runrecord import RunRecord

__all__ = ["MIN_REPEATS_FOR_A_WINNER", "ScoreRow", "ScoreSummary", "sample_spread",
           "score_rows", "scores_frame", "summaries", "winner"]

MIN_REPEATS_FOR_A_WINNER = 2
FRAME_COLUMNS = ("variant", "repeat", "check", "score", "reason")


@dataclass(frozen=True, slots=True)
class ScoreRow:
    """One score of one run: ``variant`` is the variant's label, ``repeat`` counts from
    0, ``name`` is the check's name (``judge`` for the judge). ``score`` is in [0, 1], or
    None when it could not be taken (``reason`` then says why)."""

    variant: str
    repeat: int
    name: str
    score: float | None
    reason: str | None = None

    def __post_init__(self) -> None:
        if self.score is not None and not (0.0 <= self.score <= 1.0):
            raise ConfigError(f"score {self.name!r} of {self.variant} must be in [0, 1], "
                              f"got {self.score!r}")


@dataclass(frozen=True, slots=True)
class ScoreSummary:
    """One score name for one variant, over its repeats."""

    variant: str
    name: str
    mean: float
    spread: float  # sample standard deviation; 0.0 with one repeat
    low: float
    high: float
    repeats: int
    errors: int  # repeats whose score could not be taken (counted as 0)

    @property
    def interval(self) -> tuple[float, float]:
        return self.mean - self.spread, self.mean + self.spread


def score_rows(labels: Sequence[str],
               repeats: Sequence[Sequence[RunRecord]]) -> list[ScoreRow]:
    """Every run's scores, variant by variant (``labels``, one per group of ``repeats``)
    and repeat by repeat: a check's named as it is (its function's ``__name__`` or the
    name given), the judge's ``judge``. The reason is the score's error when there is one
    (a check that raised, a judge reply that held no score), so a 0 or a missing score
    says why."""
    if len(labels) != len(repeats):
        raise ConfigError(f"score rows need one label per variant: got {len(labels)} "
                          f"labels for {len(repeats)} variants")
    return [ScoreRow(label, repeat, "judge" if score.kind == "judge" else score.name,
                     None if score.score is None else float(score.score),
                     score.error or score.reason)
            for label, group in zip(labels, repeats, strict=True)
            for repeat, run in enumerate(group) for score in run.scores]


def sample_spread(values: Sequence[float], mean: float) -> float:
    """The sample standard deviation of ``values`` about their ``mean``; 0.0 for one."""
    if len(values) < 2:
        return 0.0
    return math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (len(values) - 1))


def _summary(variant: str, name: str, rows: Sequence[ScoreRow]) -> ScoreSummary:
    values = [0.0 if row.score is None else row.score for row in rows]
    mean = math.fsum(values) / len(values)
    return ScoreSummary(variant, name, mean, sample_spread(values, mean), min(values),
                        max(values), len(values), sum(1 for row in rows if row.score is None))


def summaries(rows: Iterable[ScoreRow], variants: Sequence[str]) -> list[ScoreSummary]:
    """Per score name (in the order names first appear) and variant (in ``variants``'
    order), the summary over the repeats. A variant with no row for a name has none."""
    grouped: dict[str, dict[str, list[ScoreRow]]] = {}
    for row in rows:
        if row.variant not in variants:
            raise ConfigError(f"score row for {row.variant!r}, which is not a variant "
                              f"({', '.join(variants)})")
        grouped.setdefault(row.name, {}).setdefault(row.variant, []).append(row)
    return [_summary(variant, name, by_variant[variant])
            for name, by_variant in grouped.items()
            for variant in variants if variant in by_variant]


def winner(of_one_name: Sequence[ScoreSummary]) -> str | None:
    """The variant marked the winner of one score name (the rule in the module's
    docstring), or None."""
    if len(of_one_name) < 2 or len({s.name for s in of_one_name}) != 1:
        return None
    if any(s.repeats < MIN_REPEATS_FOR_A_WINNER for s in of_one_name):
        return None
    best = max(of_one_name, key=lambda s: s.mean)
    others = [s for s in of_one_name if s is not best]
    if all(best.interval[0] > other.interval[1] for other in others):
        return best.variant
    return None


def scores_frame(rows: Iterable[ScoreRow]) -> pandas.DataFrame:
    """The rows as a DataFrame with columns variant, repeat, check, score, reason (needs
    pandas, imported here: swarmkit does not depend on it)."""
    try:
        import pandas
    except ImportError:
        raise ConfigError("scores() needs pandas: pip install pandas") from None
    return pandas.DataFrame(
        [(row.variant, row.repeat, row.name, row.score, row.reason) for row in rows],
        columns=list(FRAME_COLUMNS))
