"""The scores block of a comparison's static view: per score, each variant's mean, spread,
range and repeats, and the winner when the rule marks one (``scores.winner``).

Text for terminals and nbval, HTML for notebooks, in the theme's classes (light and dark
alike: the winner is marked by a word and a bar in the success colour, never by colour
alone). With one repeat there is no spread and no winner column, only the scores.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

from ..display.rendered import Rendered
from ..display.tablefmt import Markup, html_table, render_table
from ..display.theme import COLOURS, STYLE
from .scores import MIN_REPEATS_FOR_A_WINNER, ScoreSummary, winner

__all__ = ["WINNER_MARK", "WINNER_RULE", "ScoresView"]

WINNER_MARK = "winner"
WINNER_RULE = ("winner: the highest mean, marked only when its mean ± spread lies wholly "
               "above every other variant's (at least 2 repeats)")
_ONE_REPEAT = "one run per variant: no spread, so no winner (--repeat K for K runs each)"
_HEADERS = ("score", "variant", "mean", "spread", "range", "repeats", "not scored", "")
_CSS = (
    "<style>"
    f".swarmkit tr.sk-winner td:first-child{{box-shadow:inset 3px 0 0 {COLOURS['ok'].css}}}"
    f".swarmkit .sk-winner-mark{{color:{COLOURS['ok'].css};font-weight:600}}"
    "</style>"
)


def _figure(value: float) -> str:
    return f"{value:.2f}"


class ScoresView(Rendered):
    """The scores block, from the summaries of one comparison (``scores.summaries``)."""

    def __init__(self, found: Sequence[ScoreSummary]) -> None:
        self.summaries = tuple(found)
        names = list(dict.fromkeys(s.name for s in self.summaries))
        self.by_name = {name: [s for s in self.summaries if s.name == name] for name in names}
        self.winners = {name: winner(group) for name, group in self.by_name.items()}
        self.repeated = bool(self.summaries) and all(
            s.repeats >= MIN_REPEATS_FOR_A_WINNER for s in self.summaries)

    def rows(self) -> list[tuple[str, ...]]:
        """One row per (score, variant); the score's name only on its first row."""
        out = []
        for name, group in self.by_name.items():
            for position, summary in enumerate(group):
                mark = WINNER_MARK if self.winners[name] == summary.variant else ""
                out.append((
                    name if position == 0 else "", summary.variant, _figure(summary.mean),
                    _figure(summary.spread) if self.repeated else "",
                    f"{_figure(summary.low)}-{_figure(summary.high)}",
                    str(summary.repeats), str(summary.errors) if summary.errors else "",
                    mark))
        return out

    def _headers_and_rows(self) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
        rows = self.rows()
        keep = [i for i, header in enumerate(_HEADERS)
                if header not in ("spread", "") or self.repeated]
        if not any(row[6] for row in rows):
            keep.remove(6)
        if 7 in keep and not any(row[7] for row in rows):
            keep.remove(7)  # repeated, but no winner: no empty mark column
        return tuple(_HEADERS[i] for i in keep), [tuple(row[i] for i in keep) for row in rows]

    def note(self) -> str:
        return WINNER_RULE if self.repeated else _ONE_REPEAT

    def text(self) -> str:
        if not self.summaries:
            return "scores: none (no check and no judge)"
        headers, rows = self._headers_and_rows()
        return "\n".join(["scores", render_table(rows, headers, "simple"), self.note()])

    def html(self) -> str:
        if not self.summaries:
            return ('<div class="swarmkit"><p class="sk-note">scores: none (no check and '
                    "no judge)</p></div>")
        headers, rows = self._headers_and_rows()
        classes = ["sk-winner" if row[-1] == WINNER_MARK and self.repeated else ""
                   for row in rows]
        cells = [tuple(Markup(f'<span class="sk-winner-mark">{WINNER_MARK}</span>', cell)
                       if cell == WINNER_MARK else cell for cell in row) for row in rows]
        table = html_table(cells, headers, row_classes=classes)
        return (f'<div class="swarmkit">{STYLE}{_CSS}<h4>scores</h4>{table}'
                f'<p class="sk-note">{html.escape(self.note())}</p></div>')
