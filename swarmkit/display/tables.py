"""Static output of a RunRecord: spend by role, per-worker rows, tool calls, answer and timeline.

``RunTables.mime_bundle()`` is the one display a finished ``%%swarm`` cell leaves: HTML
(answer as Markdown, tables, totals, timeline SVG, each worker row expanding to what it
did) and a tabulate ``text/plain`` that terminal IPython and nbval's text comparison see,
plus provenance metadata. Everything here is a pure function of the RunRecord, so a replayed
run renders byte-identical output.

A tree (depth > 1): a row per worker, children under parents (``display.treelayout``),
dotted ids and a ``depth`` column; a flat run's output is as it always was.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from functools import cached_property
from typing import TYPE_CHECKING, Any

from .._version import __version__
from ..config.automodel import auto_notice, judge_notice
from ..config.outputschema import schema_fields
from ..config.wording import counted
from ..credentials.scrub import one_line
from .byrole import ROLE_HEADERS, role_spend
from .drilldown import judge_details, planner_details, reducer_details, worker_details
from .failures import Failure, failure_of, failure_statuses
from .markdown import markdown_html
from .planned import planned_html, planned_lines
from .rendered import Bundle, Rendered
from .rowcut import DISPLAY_ROWS, Cut, displayed_rows, rows_with_gaps
from .tablefmt import Markup, clipped, format_cost, format_tokens, html_table, render_table
from .tablerows import SCORE_HEADERS, TASK_WIDTH, data_cell, score_row, tool_row, worker_row
from .theme import STYLE, row_class
from .timeline import timeline_svg
from .treelayout import flat_tree, indented, parent_positions, tree_note, worker_retries
from .truncation import (
    CUT_MARK,
    answer_warning,
    cut_count,
    cut_line,
    cut_note,
    cut_workers,
    max_tokens_of,
)

if TYPE_CHECKING:
    from ..record.rows import ToolCallRecord, WorkerRecord
    from ..record.runrecord import RunRecord
    from ..record.usage import Usage

__all__ = [
    "DISPLAY_ROWS", "NO_REDUCER_NOTE", "RunTables", "displayed_rows", "render_table",
]

NO_REDUCER_NOTE = ("no answer: the reducer was skipped (--no-reduce); the workers' "
                   "outputs are the result (run.workers[i].output)")
_WHY_WIDTH = 60
_FAILURE_WIDTH = 220
_TASK_HEADER_WIDTH = 200
# Past this many rows a table scrolls inside the output instead of growing the page.
_SCROLL_ROWS = 30


def _batch_note(run: RunRecord) -> str:
    """`` · by Batch API batch_...``: where a --batch run's workers went (their prices
    are the batch prices), the batch id being what a provider's console lists."""
    if not run.batches:
        return ""
    ids = [batch.batch_id for batch in run.batches]
    return " · by Batch API " + (ids[0] if len(ids) == 1 else f"({len(ids)} batches)")


class RunTables(Rendered):
    """Renders one RunRecord. ``text()`` is what terminals and nbval's text/plain see."""

    WORKER_HEADERS = (
        "worker", "task", "status", "calls", "attempts", "retries", "tokens in",
        "tokens out", "cost", "latency", "tools",
    )
    # The HTML table also says why a worker did not complete, on its row; the status
    # comes first, so a narrow window shows it before the table scrolls sideways.
    HTML_WORKER_HEADERS = ("worker", "status", "task", "why", *WORKER_HEADERS[3:])
    TOOL_HEADERS = ("worker", "hop", "tool", "arguments", "result", "error", "duration")
    ROLE_HEADERS = ROLE_HEADERS

    def __init__(self, run: RunRecord) -> None:
        self.run = run

    @cached_property
    def rows(self) -> list[WorkerRecord]:
        """The workers, one per row: in a tree each is followed by its descendants."""
        return flat_tree(self.run.workers)

    @cached_property
    def tree(self) -> bool:  # a worker split: dotted ids and a depth column
        return len(self.rows) > len(self.run.workers)

    @cached_property
    def fields(self) -> tuple[str, ...]:
        """The output schema's top-level fields (``--schema``): one column each."""
        schema = self.run.config.get("output_schema")
        return schema_fields(schema if isinstance(schema, str) else None)

    @property
    def worker_headers(self) -> tuple[str, ...]:
        if self.tree:
            return ("worker", "depth", *self.WORKER_HEADERS[1:], *self.fields)
        return (*self.WORKER_HEADERS, *self.fields)

    def _worker_cells(self, worker: WorkerRecord) -> tuple[Any, ...]:
        row = worker_row(worker, self._worker_retries.get(worker.id, 0),
                         worker.id in self.cut_workers)
        if self.tree:
            row = (worker.id, worker.depth, *row[1:])
        return (*row, *(data_cell(worker.data, name) for name in self.fields))

    @cached_property
    def cut_workers(self) -> set[str]:
        """The workers whose output was cut at max tokens (their status cell says so), by
        dotted id."""
        return cut_workers(self.run.calls)

    @cached_property
    def cut_calls(self) -> int:
        """How many calls stopped at their max tokens: the totals line counts them."""
        return cut_count(self.run.calls)

    @cached_property
    def _worker_retries(self) -> dict[str, int]:
        return worker_retries(self.run.calls)

    @cached_property
    def usage(self) -> Usage:
        """The run's usage, summed once per render (``run.usage`` is a sum over every call)."""
        return self.run.usage

    def worker_rows(self, shown: Sequence[int] | None = None) -> list[tuple[Any, ...]]:
        """One row per worker; with ``shown``, those workers' rows and a row for each gap."""
        workers = self.rows
        return rows_with_gaps(len(workers), shown, lambda i: self._worker_cells(workers[i]),
                              len(self.worker_headers))

    def tool_rows(self, shown: Sequence[int] | None = None) -> list[tuple[Any, ...]]:
        """One row per tool call; with ``shown``, those calls' rows and a row per gap."""
        calls = self.run.tool_calls
        return rows_with_gaps(len(calls), shown, lambda i: tool_row(calls[i]),
                              len(self.TOOL_HEADERS))

    @property
    def role_headers(self) -> tuple[str, ...]:
        """The spend-by-role columns: a ``cut`` column before ``model`` when calls were cut."""
        if not self.cut_calls:
            return self.ROLE_HEADERS
        return (*self.ROLE_HEADERS[:-1], "cut", self.ROLE_HEADERS[-1])

    def role_rows(self) -> list[tuple[Any, ...]]:
        """Planner, workers, reducer and total: the last row is the totals line's sums;
        each role's row ends with the model(s) it asked for."""
        cut = bool(self.cut_calls)
        return [(r.role, r.calls, r.attempts, r.retries, format_tokens(r.usage.prompt_tokens),
                 format_tokens(r.usage.completion_tokens), format_cost(r.cost_usd),
                 *((r.cut,) if cut else ()), r.model)
                for r in role_spend(self.run.calls, by_depth=self.tree)]

    def totals(self) -> str:
        """The one-line summary; both the text and the HTML open with it."""
        return self._totals

    @cached_property
    def _totals(self) -> str:
        run = self.run
        usage = self.usage
        counts = ", ".join(f"{n} {label}" for label, n in sorted(run.status_counts().items()))
        cached = sum(1 for c in run.calls if c.source == "cache")
        cached_note = f" ({cached} cached)" if cached else ""
        if run.config.get("resume"):
            cached_note = f" (resumed: {cached:,} from history, run {run.config['resume']})"
        cut = f" · {self.cut_calls:,} {CUT_MARK}" if self.cut_calls else ""
        return (
            f"run {run.run_id} · {run.status} · {counted(len(run.workers), 'worker')} "
            f"({counts or 'none'}){tree_note(self.rows)}"
            f"{_batch_note(run)} · {counted(len(run.calls), 'call')}{cached_note}{cut} · tokens "
            f"{format_tokens(usage.prompt_tokens)} in / {format_tokens(usage.completion_tokens)}"
            f" out · cost {format_cost(usage.cost)} · {run.duration:.2f}s"
        )

    def worker_table(self, fmt: str = "simple", shown: Sequence[int] | None = None) -> str:
        """Every worker's row (``shown``: only those, as the display does)."""
        return render_table(self.worker_rows(shown), self.worker_headers, fmt)

    def tool_table(self, fmt: str = "simple", shown: Sequence[int] | None = None) -> str:
        """Every tool call's row (``shown``: only those, as the display does)."""
        return render_table(self.tool_rows(shown), self.TOOL_HEADERS, fmt)

    def role_table(self, fmt: str = "simple") -> str:
        """Spend by role, with the run's total as the last row."""
        return render_table(self.role_rows(), self.role_headers, fmt)

    def notices(self) -> list[str]:
        """Lines under the totals: the plan was reviewed (its edits), ``auto`` fell back
        to the embedded model (why, which), the judge is the embedded model (weak)."""
        review = None if self.run.review is None else self.run.review.line()
        found = (review, auto_notice(self.run.config), judge_notice(self.run.config))
        return [notice for notice in found if notice is not None]

    def answer_warning(self) -> str | None:
        """The line above an answer cut at max tokens (or merged from cut parts)."""
        return answer_warning(self.run)

    @cached_property
    def _worker_cut(self) -> Cut:
        workers = self.rows
        cut = self.cut_workers
        verb = f"did not complete or were {CUT_MARK}" if cut else "did not complete"
        return Cut.of("workers", len(workers), verb, "worker_table",
                      [i for i, w in enumerate(workers)
                       if w.status != "completed" or w.id in cut],
                      parent_positions(workers) if self.tree else None)

    @cached_property
    def _tool_cut(self) -> Cut:
        calls = self.run.tool_calls
        return Cut.of("tool calls", len(calls), "failed", "tool_table",
                      [i for i, t in enumerate(calls) if t.error])

    @cached_property
    def _failures(self) -> dict[int, Failure]:
        """Why each worker the display shows did not complete, by its position."""
        statuses = failure_statuses(self.run.calls)
        workers = self.rows
        positions = self._worker_cut.shown or range(len(workers))
        found = {}
        for position in positions:
            failure = failure_of(workers[position], statuses.get(workers[position].id))
            if failure is not None:
                found[position] = failure
        return found

    def failure_lines(self) -> list[str]:
        """One line per shown worker that did not complete: status, error and hint."""
        return [one_line(f"worker {f.worker} · {f.label}" + (f": {f.line}" if f.line else ""),
                     _FAILURE_WIDTH) for f in self._failures.values()]

    def cut_lines(self) -> list[str]:
        """One line per shown worker whose output was cut, with the option to raise."""
        workers = self.rows
        positions = self._worker_cut.shown or range(len(workers))
        note = cut_note("worker", max_tokens_of(self.run.config, "worker"))
        return [f"worker {workers[p].id} · {note}" for p in positions
                if workers[p].id in self.cut_workers]

    def text(self) -> str:
        """Totals, spend by role, tables (long ones cut), failures and the answer."""
        run = self.run
        parts = [self.totals(), *self.notices(), ""]
        if run.error:
            parts += [f"error: {run.error}", ""]
        if run.calls:
            line = cut_line(run.calls)
            parts += ["by role", self.role_table(), *([line] if line else []), ""]
        parts += planned_lines(run)  # a dry run: its plan and how to make its calls
        if run.workers:
            cut = self._worker_cut
            parts += [*([cut.note] if cut.note else []),
                      self.worker_table(shown=cut.shown), ""]
            failures = self.failure_lines()
            if failures:
                parts += ["why workers did not complete", *failures, ""]
            cut_lines = self.cut_lines()
            if cut_lines:
                parts += [f"workers {CUT_MARK}", *cut_lines, ""]
        if run.tool_calls:
            cut = self._tool_cut
            parts += [cut.note or "tool calls", self.tool_table(shown=cut.shown), ""]
        if run.scores:
            parts += ["scores", render_table([score_row(score) for score in run.scores],
                                             SCORE_HEADERS, "simple"), ""]
        if run.answer is not None:
            warning = self.answer_warning()
            parts += ["answer", *([warning] if warning else []), run.answer]
        elif self.mapped_only:
            parts += [NO_REDUCER_NOTE]
        return "\n".join(parts).rstrip() + "\n"

    @property
    def mapped_only(self) -> bool:
        """The run skipped the reducer (``--no-reduce``): it has no answer by design."""
        return self.run.config.get("reduce") is False

    def html(self) -> str:
        """Totals, answer (Markdown), spend by role, workers, tool calls and timeline."""
        run = self.run
        parts = [
            f'<div class="swarmkit swarmkit-run">{STYLE}',
            f"<p><b>{html.escape(self.totals())}</b></p>",
            *(f'<p class="sk-note">{html.escape(line)}</p>' for line in self.notices()),
            f"<p>task: {html.escape(one_line(run.task, _TASK_HEADER_WIDTH))}</p>",
        ]
        if run.error:
            parts.append(f'<p class="sk-error">error: {html.escape(run.error)}</p>')
        if run.answer is not None:
            warning = self.answer_warning()
            parts += [
                "<p><b>answer</b></p>",
                *([f'<p class="sk-warn">{html.escape(warning)}</p>'] if warning else []),
                f'<div class="swarmkit-answer">{markdown_html(run.answer)}</div>',
            ]
        elif self.mapped_only:
            parts.append(f"<p>{html.escape(NO_REDUCER_NOTE)}</p>")
        if run.scores:
            parts += ["<p><b>scores</b></p>", html_table(
                [score_row(score) for score in run.scores], SCORE_HEADERS, css="sk-scores")]
        if run.calls:
            parts += ["<p><b>by role</b></p>",
                      html_table(self.role_rows(), self.role_headers, css="sk-roles")]
            line = cut_line(run.calls)
            if line:
                parts.append(f'<p class="sk-warn">{html.escape(line)}</p>')
        if planned := planned_html(run):
            parts.append(planned)
        if run.workers:
            cut = self._worker_cut
            under = " · each child under its parent" if self.tree else ""
            parts += [f"<p><b>{html.escape(cut.title)}{under}</b></p>", self._worker_html()]
        drill = [d for d in (planner_details(run), reducer_details(run), judge_details(run))
                 if d]
        if drill:
            parts.append(f'<div class="sk-drill">{"".join(drill)}</div>')
        if run.tool_calls:
            cut = self._tool_cut
            rows = self.tool_rows(cut.shown)
            parts += [f"<p><b>{html.escape(cut.title)}</b></p>",
                      html_table(rows, self.TOOL_HEADERS, tall=len(rows) > _SCROLL_ROWS)]
        if run.calls:
            parts += ["<p><b>timeline</b></p>",
                      f'<div class="sk-scroll">{timeline_svg(run)}</div>']
        parts.append("</div>")
        return "\n".join(parts)

    def _worker_html(self) -> str:
        """The worker table: a reason on each row that did not complete, and each task
        cell a ``<details>`` that opens on what the worker did (in a tree, a child's task
        indented under its parent's, a parent's opening on its split and children)."""
        run = self.run
        workers = self.rows
        shown = self._worker_cut.shown
        wanted = {workers[p].id for p in (shown or range(len(workers)))}
        tools: dict[str, list[ToolCallRecord]] = {}
        for call in run.tool_calls:
            if (worker_id := call.worker_id) in wanted:
                tools.setdefault(worker_id, []).append(call)
        by_id = {worker.id: worker for worker in workers} if self.tree else {}
        failures = self._failures
        cut = self.cut_workers
        note = cut_note("worker", max_tokens_of(run.config, "worker"))
        k = 2 if self.tree else 1  # the columns before the status: worker (and depth)

        def row(position: int) -> tuple[Any, ...]:
            worker = workers[position]
            failure = failures.get(position)
            cells = self._worker_cells(worker)
            summary = one_line(worker.task, TASK_WIDTH)
            parent = by_id.get(worker.parent) if worker.parent is not None else None
            task = indented(worker.depth, Markup(worker_details(
                run, worker, tools.get(worker.id, []), failure, summary,
                note if worker.id in cut else None, parent), summary))
            why = clipped(failure.line, _WHY_WIDTH) if failure is not None else ""
            return (*cells[:k], cells[k + 1], task, why, *cells[k + 2:])

        width = len(self.HTML_WORKER_HEADERS) + k - 1 + len(self.fields)
        rows = [(r[0], *("",) * k, r[1], *r[k + 2:]) if r[0] == "…" else r  # "(n more)"
                for r in rows_with_gaps(len(workers), shown, row, width)]
        classes = [row_class(str(r[k])) if r[0] != "…" else "sk-gap" for r in rows]
        headers = (*self.HTML_WORKER_HEADERS[:1], *(("depth",) if self.tree else ()),
                   *self.HTML_WORKER_HEADERS[1:], *self.fields)
        if not failures:  # an empty "why" column would only take width from the task
            rows = [(*r[:k + 2], *r[k + 3:]) for r in rows]
            headers = (*headers[:k + 2], *headers[k + 3:])
        return html_table(rows, headers, classes, css="sk-workers",
                          tall=len(rows) > _SCROLL_ROWS)

    def metadata(self) -> dict[str, Any]:
        """Provenance for the display's metadata: no secrets, only key variable names."""
        run = self.run
        return {
            "version": __version__,
            "run_id": run.run_id,
            "status": run.status,
            "models": run.models,
            "parameters": run.config,
            "usage": {k: ("unknown" if v is None else str(v))
                      for k, v in self.usage.to_dict().items()},
            "cost_usd": "unknown" if self.usage.cost is None else str(self.usage.cost),
        }

    def mime_bundle(self) -> Bundle:
        """The run's display, with its provenance as the output's metadata."""
        data, _ = super().mime_bundle()
        return data, {"swarmkit": self.metadata()}
