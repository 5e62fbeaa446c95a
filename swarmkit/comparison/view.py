"""Variants of one task side by side: what each answered, spent and planned.

``ComparisonView`` is the static output of ``--compare``: per variant its figures, its
plan and its answer, in columns side by side, with what differs from the first variant
(the baseline) marked: plan items added or removed, and the answer's words
(``swarmkit.display.worddiff``). Identical plans are shown once. A variant without an
answer says why instead (the run's error, or its workers' failures). Everything is a pure
function of the runs, escaped, and cut to a bound with a note naming where the whole is.

The figures (one row per variant, the latencies, ``ComparisonTable``) live in
``comparison.figures``; its names are imported here too, since
``swarmkit.display.compared`` (an old path: ``swarmkit._imports.MOVED``) is this module.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..config.wording import counted
from ..credentials.scrub import one_line
from ..display.drilldown import cut
from ..display.failures import failure_of, failure_statuses
from ..display.rendered import Rendered
from ..display.rowcut import displayed_rows, rows_with_gaps
from ..display.tablefmt import render_table
from ..display.tables import NO_REDUCER_NOTE
from ..display.theme import COLOURS, STYLE
from ..display.worddiff import list_diff, marked_html, marked_text, word_diff
from ..errors import ConfigError
from .figures import (
    FIGURE_HEADERS,
    LATENCY_NOTE,
    ComparisonTable,
    check_labels,
    comparison_rows,
    figure_cells,
    live_latencies,
    percentile,
    workers_by_status,
)
from .repeatview import RepeatSpend, RepeatsView, repeat_spend
from .scores import ScoreSummary, score_rows, summaries
from .scoreview import ScoresView

if TYPE_CHECKING:
    from ..record.runrecord import RunRecord

__all__ = ["LATENCY_NOTE", "ComparisonTable", "ComparisonView", "comparison_rows",
           "live_latencies", "percentile", "workers_by_status"]

# Each answer is shown (and diffed) up to this many characters; the rest is named.
MAX_ANSWER_CHARS = 6_000
_TASK_WIDTH = 160
_FAILURE_WIDTH = 220
_FAILURES_SHOWN = 3
_COLUMN_MIN = "14em"

_CSS = (
    "<style>"
    ".swarmkit .sk-cmp{display:grid;gap:4px 12px;font-size:12px;min-width:0}"
    ".swarmkit .sk-cmp>div{min-width:0;overflow-wrap:anywhere}"
    f".swarmkit .sk-cmp-head{{border-bottom:2px solid {COLOURS['rule'].css};"
    "padding-bottom:2px}"
    ".swarmkit .sk-cmp-span{grid-column:1/-1}"
    ".swarmkit .sk-cmp ol{margin:2px 0;padding-left:2.2em}"
    ".swarmkit .sk-cmp li.sk-gone{list-style:none}"
    f".swarmkit .sk-cmp-answer{{white-space:pre-wrap;max-height:24em;overflow:auto;"
    f"border-left:3px solid {COLOURS['rule'].css};padding-left:6px}}"
    # Marks keep the page's text colour over a translucent tint, so they read on the
    # light and the dark theme alike; underline and strike-through say it without colour.
    ".swarmkit ins.sk-ins{background:rgba(76,175,80,.28);text-decoration:underline;"
    f"text-decoration-color:{COLOURS['ok'].css}}}"
    ".swarmkit del.sk-del{background:rgba(244,67,54,.24);text-decoration:line-through;"
    f"text-decoration-color:{COLOURS['failed'].css}}}"
    "</style>"
)


def _esc(text: object) -> str:
    return html.escape(str(text), quote=True)


class ComparisonView(Rendered):
    """The variants side by side; differences from the first (the baseline) marked."""

    def __init__(self, labels: Sequence[str], runs: Sequence[RunRecord],
                 scores: Sequence[ScoreSummary] = (),
                 repeats: Sequence[RepeatSpend] = ()) -> None:
        check_labels(labels, runs)
        if not runs:
            raise ConfigError("a comparison needs at least one run")
        self.labels = list(labels)
        self.runs = list(runs)
        self.rows = comparison_rows(labels, runs)
        # No score at all: no block, so an unscored view reads as it always did; the
        # same for the repeats block without repeats.
        self.scores = ScoresView(scores) if scores else None
        self.repeats = (RepeatsView(repeats) if any(row.repeats > 1 for row in repeats)
                        else None)

    @classmethod
    def of_repeats(cls, labels: Sequence[str], repeats: Sequence[Sequence[RunRecord]]
                   ) -> ComparisonView:
        """The view of each variant's repeats (repeat 0 first): repeat 0 side by side,
        and the scores block summarising every repeat."""
        runs = [group[0] for group in repeats]
        return cls(labels, runs, summaries(score_rows(labels, repeats), labels),
                   repeat_spend(labels, repeats))

    # -- what is compared --------------------------------------------------------------

    @property
    def same_plan(self) -> bool:
        """Every variant planned the same sub-tasks (given tasks included)."""
        first = self.runs[0].plan
        return all(run.plan == first for run in self.runs[1:])

    def plan_rows(self, i: int) -> list[tuple[str, str, str]]:
        """Variant ``i``'s plan as (mark, number, sub-task): kept " ", added "+" and the
        baseline's items it lacks "-" (numbered by its own plan; removed ones are not)."""
        plan = self.runs[i].plan
        if not plan:  # it never planned (its planner failed): nothing to compare
            return []
        marked = [("=", t) for t in plan] if i == 0 else list_diff(self.runs[0].plan, plan)
        rows, number = [], 0
        for mark, item in marked:
            if mark != "-":
                number += 1
            rows.append((" " if mark == "=" else mark, "" if mark == "-" else str(number),
                         item))
        return rows

    def _shown_plan(self, i: int) -> tuple[list[tuple[Any, ...]], str]:
        """The plan rows a display shows (long plans cut, changes kept) and the cut note."""
        rows = self.plan_rows(i)
        shown = displayed_rows(len(rows), [n for n, r in enumerate(rows) if r[0] != " "])
        note = "" if shown is None else (
            f"{len(shown)} of {len(rows):,} items shown (the first, the last and the "
            f"changed ones); runs[{i}].plan has them all")
        return rows_with_gaps(len(rows), shown, lambda n: rows[n], 3), note

    def answer_segments(self, i: int) -> list[tuple[str, str]] | None:
        """Variant ``i``'s answer (cut) marked against the baseline's; None without one.

        The baseline, and any variant when the baseline has no answer, is all kept text.
        """
        answer = self.runs[i].answer
        if answer is None:
            return None
        shown = answer[:MAX_ANSWER_CHARS]
        # The note of a cut answer is not part of what is compared.
        note = cut(answer, MAX_ANSWER_CHARS, f"runs[{i}].answer")[len(shown):]
        base = self.runs[0].answer
        if i == 0 or base is None:
            return [("=", shown + note)]
        return [*word_diff(base[:MAX_ANSWER_CHARS], shown), *([("=", note)] if note else [])]

    def why_no_answer(self, i: int) -> list[str]:
        """Why variant ``i`` has no answer: the run's error, then its workers' failures."""
        run = self.runs[i]
        if run.config.get("reduce") is False:
            return [NO_REDUCER_NOTE]
        lines = [f"no answer: {run.status}" + (f": {run.error}" if run.error else "")]
        statuses = failure_statuses(run.calls)
        failures = [f for w in run.workers
                    if (f := failure_of(w, statuses.get(w.id))) is not None]
        for failure in failures[:_FAILURES_SHOWN]:
            lines.append(f"worker {failure.worker} · {failure.label}"
                         + (f": {failure.line}" if failure.line else ""))
        if len(failures) > _FAILURES_SHOWN:
            lines.append(f"… {len(failures) - _FAILURES_SHOWN} more; runs[{i}].tables() "
                         "has them all")
        return [one_line(line, _FAILURE_WIDTH) for line in lines]

    def _title(self) -> str:
        return (f"{len(self.runs)} variants · task: "
                f"{one_line(self.runs[0].task, _TASK_WIDTH)}")

    def _name(self, i: int) -> str:
        return self.labels[i] + (" (baseline)" if i == 0 and len(self.runs) > 1 else "")

    # -- text ----------------------------------------------------------------------------

    def text(self) -> str:
        parts = [self._title(), ""]
        table = [(label, *figure_cells(row)) for label, row in zip(self.labels, self.rows,
                                                                 strict=True)]
        parts += [render_table(table, ("variant", *FIGURE_HEADERS), "simple"),
                  LATENCY_NOTE, ""]
        if self.repeats is not None:
            parts += [self.repeats.text(), ""]
        if self.scores is not None:
            parts += [self.scores.text(), ""]
        if self.same_plan:
            parts += self._plan_text(0, f"same plan for every variant "
                                        f"({counted(len(self.runs[0].plan), 'sub-task')})"
                                     if self.runs[0].plan else "plan")
        else:
            for i in range(len(self.runs)):
                parts += self._plan_text(i, f"plan of {self._name(i)}{self._plan_change(i)}")
        for i in range(len(self.runs)):
            segments = self.answer_segments(i)
            if segments is None:
                parts += [f"answer of {self._name(i)}", *self.why_no_answer(i), ""]
                continue
            changed = any(mark != "=" for mark, _ in segments)
            note = " ({+added+} [-removed-] vs the baseline)" if changed else ""
            if i and not changed and self.runs[0].answer is not None:
                note = " (same as the baseline)"
            parts += [f"answer of {self._name(i)}{note}", marked_text(segments), ""]
        return "\n".join(parts).rstrip() + "\n"

    def _plan_change(self, i: int) -> str:
        if i == 0 or not self.runs[i].plan:
            return ""
        rows = self.plan_rows(i)
        added = sum(1 for r in rows if r[0] == "+")
        removed = sum(1 for r in rows if r[0] == "-")
        if not added and not removed:
            return ": same as the baseline"
        return f": {added} added, {removed} removed vs the baseline"

    def _plan_text(self, i: int, heading: str) -> list[str]:
        rows, note = self._shown_plan(i)
        lines = [heading, *([note] if note else [])]
        for mark, number, item in rows:
            if mark == "…":
                lines.append(f"  … {number}")
                continue
            lines.append(f"{mark} {number + '.' if number else '  '} {item}".rstrip())
        return [*lines, ""] if rows else [heading + ": none", ""]

    # -- HTML ----------------------------------------------------------------------------

    def html(self) -> str:
        n = len(self.runs)
        columns = f"repeat({n},minmax(min({_COLUMN_MIN},100%),1fr))"
        cells = [self._head_html(i) for i in range(n)]
        if self.same_plan:
            plan = self.runs[0].plan
            cells.append('<div class="sk-cmp-span">'
                         + self._plan_html(0, f"same plan for every variant: {len(plan)} "
                                              "sub-tasks", opened=False) + "</div>")
        else:
            cells += [self._plan_html(i, f"plan: {counted(len(self.runs[i].plan), 'sub-task')}"
                                         f"{self._plan_change(i)}", opened=True)
                      for i in range(n)]
        cells += [self._answer_html(i) for i in range(n)]
        body = "".join(cells)
        return (f'<div class="swarmkit swarmkit-compare">{STYLE}{_CSS}'
                f"<p><b>{_esc(self._title())}</b><br>"
                f'<span class="sk-note">{_esc(LATENCY_NOTE)}</span></p>'
                f"{'' if self.repeats is None else self.repeats.html()}"
                f"{'' if self.scores is None else self.scores.html()}"
                f'<div class="sk-scroll"><div class="sk-cmp" '
                f'style="grid-template-columns:{columns}">{body}</div></div></div>')

    def _head_html(self, i: int) -> str:
        row = self.rows[i]
        status, workers, tokens_in, tokens_out, cost, wall, p50, p95 = figure_cells(row)
        live = row["live_calls"]
        latency = (f"latency p50 {p50} / p95 {p95} ({live} live call{'s' if live != 1 else ''})"
                   if live else "latency — (no live call)")
        return (f'<div class="sk-cmp-head"><b>{_esc(self._name(i))}</b><br>'
                f'<span class="sk-st-{_esc(status)}">{_esc(status)}</span> · '
                f"workers {_esc(workers)}<br>tokens {tokens_in} in / {tokens_out} out · "
                f"cost {cost}<br>wall time {wall} · {latency}</div>")

    def _plan_html(self, i: int, summary: str, *, opened: bool) -> str:
        rows, note = self._shown_plan(i)
        if not rows:
            return f"<div>{_esc(summary)}</div>"
        items = []
        for mark, number, item in rows:
            if mark == "…":
                items.append(f'<li class="sk-gone sk-note">… {_esc(number)}</li>')
            elif mark == "+":
                items.append(f'<li value="{number}"><ins class="sk-ins">{_esc(item)}</ins>'
                             "</li>")
            elif mark == "-":
                items.append(f'<li class="sk-gone">− <del class="sk-del">{_esc(item)}'
                             "</del></li>")
            else:
                items.append(f'<li value="{number}">{_esc(item)}</li>')
        note_html = f'<div class="sk-note">{_esc(note)}</div>' if note else ""
        return (f"<div><details{' open' if opened else ''}><summary>{_esc(summary)}"
                f"</summary>{note_html}<ol>{''.join(items)}</ol></details></div>")

    def _answer_html(self, i: int) -> str:
        segments = self.answer_segments(i)
        if segments is None:
            lines = self.why_no_answer(i)
            css = "sk-note" if lines == [NO_REDUCER_NOTE] else "sk-error"
            return (f'<div class="{css}"><b>answer</b><br>'
                    + "<br>".join(_esc(line) for line in lines) + "</div>")
        changed = any(mark != "=" for mark, _ in segments)
        note = ""
        if i and self.runs[0].answer is not None:
            note = " (marked vs the baseline)" if changed else " (same as the baseline)"
        return (f'<div><b>answer</b><span class="sk-note">{_esc(note)}</span>'
                f'<div class="sk-cmp-answer">{marked_html(segments)}</div></div>')
