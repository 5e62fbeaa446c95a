"""The scores block of a comparison's static view: per score, each variant's mean, spread,
range and repeats, and the winner when the rule marks one (``scores.winner``).

Text for terminals and nbval, HTML for notebooks, in the theme's classes (light and dark
alike: the winner is marked by a word and a bar in the success colour, never by colour
alone). The HTML is narrow enough for a notebook column: a heading row per score, then
a row per variant with the mark beside its label. With one repeat there is no spread
and no winner mark, only the scores.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

from ..config.wording import counted
from ..display.rendered import Rendered
from ..display.tablefmt import render_table
from ..display.theme import COLOURS, STYLE
from .scores import MIN_REPEATS_FOR_A_WINNER, ScoreSummary, winner

__all__ = ["WINNER_MARK", "WINNER_RULE", "ScoresView"]

WINNER_MARK = "winner"
WINNER_RULE = ("winner: the highest mean, marked only when its mean ± spread lies wholly "
               "above every other variant's (at least 2 repeats)")
_ONE_REPEAT = "one run per variant: no spread, so no winner (--repeat K for K runs each)"
_HEADERS = ("score", "variant", "mean", "spread", "range", "repeats", "not scored", "")
# The mark is a word in the text's own colour on a badge edged in the success colour
# (readable in light and dark alike), beside a bar of that colour on its row.
_CSS = (
    "<style>"
    f".swarmkit tr.sk-winner td:first-child{{box-shadow:inset 3px 0 0 {COLOURS['ok'].css}}}"
    f".swarmkit .sk-winner-mark{{font-weight:600;border:1px solid {COLOURS['ok'].css};"
    "border-radius:3px;padding:0 4px;white-space:nowrap}"
    ".swarmkit table.sk-scores td.sk-score-variant{white-space:normal;"
    "overflow-wrap:anywhere;min-width:8em}"
    ".swarmkit table.sk-scores tr.sk-score-name th{padding-top:6px}"
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
        """Narrow by design (a notebook column can be 350 px): one heading row per score
        (its name, and the repeats when every variant has as many), then a row per
        variant: its label with the winner mark, mean ± spread, range."""
        if not self.summaries:
            return ('<div class="swarmkit"><p class="sk-note">scores: none (no check and '
                    "no judge)</p></div>")
        heads = ["variant", "mean ± spread" if self.repeated else "mean", "range"]
        lines = ['<div class="sk-scroll"><table class="sk-table sk-scores"><thead><tr>',
                 f"<th>{heads[0]}</th>"
                 + "".join(f'<th class="sk-num">{html.escape(h)}</th>' for h in heads[1:]),
                 "</tr></thead><tbody>"]
        for name, group in self.by_name.items():
            counts = {s.repeats for s in group}
            each = f" · {counted(counts.pop(), 'repeat')}" if len(counts) == 1 else ""
            lines.append(f'<tr class="sk-score-name"><th colspan="3">{html.escape(name)}'
                         f'<span class="sk-note">{each}</span></th></tr>')
            for summary in group:
                won = self.winners[name] == summary.variant
                mark = f' <span class="sk-winner-mark">{WINNER_MARK}</span>' if won else ""
                own = "" if each else f" ({counted(summary.repeats, 'repeat')})"
                missed = (f' <span class="sk-note">({summary.errors} not scored)</span>'
                          if summary.errors else "")
                mean = _figure(summary.mean) + (
                    f" ± {_figure(summary.spread)}" if self.repeated else "")
                row = '<tr class="sk-winner">' if won else "<tr>"
                lines.append(
                    f'{row}<td class="sk-score-variant">{html.escape(summary.variant + own)}'
                    f'{mark}</td><td class="sk-num">{mean}{missed}</td>'
                    f'<td class="sk-num">{_figure(summary.low)}–{_figure(summary.high)}'
                    "</td></tr>")
        lines.append("</tbody></table></div>")
        return (f'<div class="swarmkit">{STYLE}{_CSS}<h4>scores</h4>{"".join(lines)}'
                f'<p class="sk-note">{html.escape(self.note())}</p></div>')
