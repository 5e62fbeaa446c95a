"""HTML for each section of the live dashboard, rendered from a ``LiveState``.

The worker table never grows with the run: with more than ``MAX_ROWS`` workers it shows
the running ones first (oldest first), then the most recently finished, plus a summary
line counting every worker by status. A row that did not complete says why; each task
cell opens (``<details>``) on the worker's sub-task, messages, tool calls, output and
error. Everything is escaped.

Every section is a ``div.swarmkit``; the header carries ``swarmkit.display.theme.STYLE``, the CSS
that the classes used here (and in the static tables) refer to, and colours that must
show without it are inline theme variables with fallbacks.
"""

from __future__ import annotations

import html
from decimal import Decimal

from ..config.wording import counted
from ..credentials.scrub import one_line
from ..engine.reducer import reducer_text
from ..engine.worker import worker_messages
from .drilldown import cut, details, reducer_input, worker_body, worker_where
from .failures import Failure, failure_of
from .livestate import MAX_ROWS, SECTIONS, LiveState, WorkerLive
from .tablefmt import Markup, clipped, format_cost, format_tokens, html_table
from .theme import COLOURS, STYLE, row_class
from .treelayout import ancestors, indented, tree_key
from .truncation import CUT_MARK, cut_note, raise_hint, with_cut_mark

__all__ = ["render_changed", "render_section"]

MAX_PLAN_ITEMS = 50
MAX_REDUCER_CHARS = 20_000
_WAITING = "waiting (rate limit)"
_BOX = "font-family:var(--jp-ui-font-family,sans-serif);font-size:12px"
# The live drill-down is re-sent with its section on every push (up to 10 a second): it
# is cut shorter than the static one, which the cell keeps once the run ends.
_LIVE_OUTPUT_CHARS = 1_000
_LIVE_MESSAGE_CHARS = 300
_OPEN = f'<div class="swarmkit" style="{_BOX}">'
_WORKER_HEAD = ("worker", "status", "task", "why", "attempts", "retries", "tokens in",
                "tokens out", "cost", "latency", "tools")


def _esc(text: object) -> str:
    return html.escape(str(text), quote=True)


def render_changed(state: LiveState) -> dict[str, str]:
    """HTML of every section changed since the last call; clears the marks."""
    rendered = {name: render_section(state, name) for name in SECTIONS if name in state.dirty}
    state.dirty.clear()
    return rendered


def render_section(state: LiveState, name: str) -> str:
    return _RENDERERS[name](state)


def _table(title: str, head: tuple[str, ...], rows: list[tuple[object, ...]],
           classes: list[str] | None = None) -> str:
    return f"{_OPEN}{title}{html_table(rows, head, classes)}</div>"


def _header(state: LiveState) -> str:
    models = state.models
    if len(set(models.values())) == 1:
        model_text = f"model {_esc(models['worker'])}"
    else:
        model_text = " · ".join(f"{role} {_esc(m)}" for role, m in models.items())
    if state.concurrency:
        many = len(state.concurrency) > 1
        limits = "; ".join(
            f"{_esc(endpoint) + ' ' if many else ''}{limit} ({_esc(reason)})"
            for endpoint, (limit, reason) in state.concurrency.items()
        )
    else:
        limits = str(state.default_concurrency)
    cost = format_cost(state.cost)
    colour = {"done": "ok", "failed": "failed", "cancelled": "failed"}.get(
        state.phase, "running")
    cut = f" · {state.cut_calls:,} {CUT_MARK}" if state.cut_calls else ""
    lines = [
        f'{STYLE}{_OPEN}<b>swarm</b> · <b style="color:{COLOURS[colour].css}">'
        f"{_esc(state.status)}</b> · {state.now:.1f}s",
        f"<br>task: {_esc(one_line(state.task, 160))}",
        f"<br>{model_text} · concurrency {limits}",
        *(f'<br><span class="sk-note">{_esc(notice)}</span>'
          for notice in (state.auto_notice, state.judge_notice) if notice),
        f"<br>{counted(state.calls, 'call')}{cut} · tokens "
        f"{format_tokens(state.prompt_tokens)} in / "
        f"{format_tokens(state.completion_tokens)} out · cost {cost}",
    ]
    if state.resumed_from:
        lines.append(f"<br>resumed: {state.cached_calls:,} from history "
                     f"(run {_esc(state.resumed_from)})")
    for batch in state.batches.values():
        lines.append(f"<br>batch {_esc(batch.batch_id)}: {_esc(batch.status)} · "
                     f"{batch.completed:,}/{batch.total:,} done · {batch.failed:,} failed")
    if state.error:
        lines.append(f'<br><span style="color:{COLOURS["failed"].css}">error: '
                     f"{_esc(state.error)}</span>")
    lines.append("</div>")
    return "".join(lines)


def _budget(state: LiveState) -> str:
    if state.cap is None:
        return f"{_OPEN}spent {format_cost(state.cost)} (no budget cap)</div>"
    cap = state.cap if state.cap > 0 else Decimal(1)
    spent_pct = min(100.0, float(state.spent / cap * 100))
    reserved_pct = min(100.0 - spent_pct, float(state.reserved / cap * 100))
    # The track is an outline in the muted text colour (>= 3:1 on either theme's
    # background); spent and reserved fill it in the success and warning colours.
    return (
        f"{_OPEN}budget: spent {format_cost(state.spent)} · reserved "
        f"{format_cost(state.reserved)} · cap {format_cost(state.cap)}"
        '<div class="sk-track" style="width:360px;max-width:100%;height:10px;'
        f"border:1px solid {COLOURS['muted'].css};border-radius:3px;"
        'display:flex;overflow:hidden;box-sizing:border-box">'
        f'<div class="sk-spent" style="width:{spent_pct:.1f}%;'
        f'background:{COLOURS["ok"].css}"></div>'
        f'<div class="sk-reserved" style="width:{reserved_pct:.1f}%;'
        f'background:{COLOURS["warn"].css}"></div></div></div>'
    )


def _plan(state: LiveState) -> str:
    if not state.plan:
        return f"{_OPEN}plan: waiting for the planner…</div>"
    cut_note = f", cut from {state.plan_cut_from}" if state.plan_cut_from else ""
    items = "".join(f"<li>{_esc(one_line(t, 140))}</li>" for t in state.plan[:MAX_PLAN_ITEMS])
    more = len(state.plan) - MAX_PLAN_ITEMS
    more_note = f"<li>… {more} more</li>" if more > 0 else ""
    raw = ""
    if state.plan_raw:
        where = "_swarm.plan_raw"
        raw = details(f"planner's raw reply ({len(state.plan_raw):,} characters)",
                      f"<pre>{_esc(cut(state.plan_raw, _LIVE_OUTPUT_CHARS, where))}</pre>",
                      css="sk-planner")
    planned = counted(len(state.plan), "sub-task")
    return (f'{_OPEN}<details><summary>plan: {planned}{cut_note}'
            f'</summary><ol style="margin:2px 0">{items}{more_note}</ol></details>{raw}</div>')


def _visible_workers(state: LiveState) -> list[WorkerLive]:
    if state.nodes:
        return _visible_tree(state)
    total = max(len(state.plan), len(state.workers))
    if total <= MAX_ROWS:
        plan = state.plan
        return [state.workers.get(i) or WorkerLive(i, plan[i - 1] if i <= len(plan) else "")
                for i in range(1, total + 1)]
    rows = [state.workers[i] for i in list(state.running)[:MAX_ROWS]]
    for index in reversed(state.recent):
        if len(rows) >= MAX_ROWS:
            break
        rows.append(state.workers[index])
    return rows


def _visible_tree(state: LiveState) -> list[WorkerLive]:
    """A tree's rows, each child under its parent (depth first, in index order). Past
    ``MAX_ROWS``: the running workers (oldest first), then the latest finished, each
    with its ancestors, so no row is shown without the rows above it."""
    plan = state.plan
    total = max(len(plan), len(state.workers))
    if state.tree_size <= MAX_ROWS:
        ids = [str(i) for i in range(1, total + 1)] + list(state.nodes)
    else:
        wanted = [*map(str, state.running), *state.nodes_running,
                  *reversed([str(i) for i in state.recent]), *reversed(state.nodes_recent)]
        chosen: set[str] = set()
        for worker_id in wanted:
            line = [worker_id, *ancestors(worker_id)]
            if len(chosen | set(line)) > MAX_ROWS:
                break
            chosen.update(line)
        ids = list(chosen)
    rows = []
    for worker_id in sorted(ids, key=tree_key):
        if "." in worker_id:
            rows.append(state.nodes[worker_id])
            continue
        i = int(worker_id)
        rows.append(state.workers.get(i) or WorkerLive(i, plan[i - 1] if i <= len(plan) else ""))
    return rows


def _order(label: str) -> tuple[int, str]:
    """Summary order: running, waiting, then final statuses, pending last."""
    rank = {"running": 0, _WAITING: 1, "pending": 3}.get(label, 2)
    return rank, label


def _status_of(worker: WorkerLive) -> str:
    if worker.waiting:
        return _WAITING
    if worker.status == "running" and worker.attempt > 1:
        return f"running (attempt {worker.attempt})"
    return with_cut_mark(worker.status, worker.cut)


def _tree_status(state: LiveState, worker: WorkerLive) -> str:
    """A parent's status while its children run: ``running (split: 1/3 done)``."""
    if worker.split and worker.record is None and worker.status == "running":
        return f"running (split: {state.children_done(worker)}/{worker.split} done)"
    return _status_of(worker)


def _workers(state: LiveState) -> str:
    total = max(len(state.plan), len(state.workers))
    if not total:
        return ""
    counts = {k: v for k, v in state.counts.items() if v}
    if state.waiting:
        counts["running"] = max(0, counts.get("running", 0) - state.waiting)
        counts[_WAITING] = state.waiting
    pending = total - sum(counts.values())
    if pending > 0:
        counts["pending"] = pending
    summary = " · ".join(f"{counts[label]} {label}" for label in sorted(counts, key=_order))
    rows = _visible_workers(state)
    tree = ""
    if state.nodes:
        leaves = state.tree_size - state.splits
        tree = (f" · tree: {counted(len(state.nodes), 'child', 'children')} in "
                f"{counted(state.splits, 'split')}, {state.leaves_done}/{leaves} leaves done")
    shown = ("" if len(rows) == state.tree_size else
             f" · showing {len(rows)} (running first, then the latest finished)")
    cells = []
    for w in rows:
        if w.latency is not None:
            latency = f"{w.latency:.2f}s"
        elif w.started is not None:
            latency = f"{max(0.0, state.now - w.started):.1f}s…"
        else:
            latency = ""
        failure = _failure(w)
        why = clipped(failure.line, 60) if failure is not None else ""
        cells.append((_id_cell(w), _tree_status(state, w), _task_cell(state, w, failure), why,
                      w.attempts, w.shown_retries, format_tokens(w.prompt_tokens),
                      format_tokens(w.completion_tokens), format_cost(w.cost), latency,
                      w.tools))
    title = f"<b>{counted(total, 'worker')}</b>: {_esc(summary)}{_esc(tree)}{shown}"
    return _table(title, _WORKER_HEAD, cells, [row_class(w.status) for w in rows])


def _id_cell(worker: WorkerLive) -> object:
    """The worker column: its index, or in a tree its dotted id (a child's marked ↳)."""
    if worker.parent is None:
        return worker.index
    return Markup(f'<span title="child of worker {worker.parent}">↳ {worker.id}</span>',
                  worker.id)


def _failure(worker: WorkerLive) -> Failure | None:
    return None if worker.record is None else failure_of(worker.record, worker.fail_status)


def _task_cell(state: LiveState, worker: WorkerLive, failure: Failure | None) -> Markup:
    """The task, one line; it opens on the worker's drill-down once it has started."""
    if isinstance(worker.finished_cell, Markup):
        return worker.finished_cell
    summary = one_line(worker.task, 48)
    if worker.started is None and worker.record is None:
        return indented(worker.depth, clipped(worker.task, 48))
    task, total = state.task, max(len(state.plan), worker.index)
    if worker.parent is not None:  # a child is sent its parent's sub-task as the task
        task, total = state.parent_task(worker), len(state.kids.get(worker.parent, ()))
    messages = worker_messages(state.system_prompt, task, worker.index, worker.task, total,
                               state.output_schema)
    record = worker.record
    note = cut_note("worker", state.max_tokens.get("worker")) if worker.cut else None
    body = worker_body(
        index=worker.index, task=worker.task, messages=messages,
        output=None if record is None else record.output, tool_calls=worker.tool_records,
        tool_total=worker.tools, failure=failure, where=worker_where("_swarm", worker.id),
        output_limit=_LIVE_OUTPUT_CHARS, message_limit=_LIVE_MESSAGE_CHARS, cut_note=note,
        worker_id=worker.id, children=state.child_answers(worker),
    )
    cell = indented(worker.depth, Markup(details(summary, body, title=worker.task), summary))
    if record is not None:
        worker.finished_cell = cell
    return cell


def _tools(state: LiveState) -> str:
    if not state.tool_count:
        return ""
    errors = f" ({state.tool_errors} failed)" if state.tool_errors else ""
    cells = []
    for t in reversed(state.tools):
        result = f"error: {t.error}" if t.error else (t.result or "")
        cells.append((t.worker if t.parent is None else t.worker_id, t.tool,
                      one_line(t.arguments, 60), one_line(result, 60), f"{t.duration:.3f}s"))
    title = f"<b>tool calls: {state.tool_count}</b>{errors} · latest {len(state.tools)}"
    return _table(title, ("worker", "tool", "arguments", "result", "duration"), cells)


def _reducer(state: LiveState) -> str:
    if state.reducer_inputs is None and not state.reducer_text:
        return ""
    text = "".join(state.reducer_text)
    if len(text) > MAX_REDUCER_CHARS:
        text = "…" + text[-MAX_REDUCER_CHARS:]
    inputs = f" (merging {counted(state.reducer_inputs, 'worker')})" if state.reducer_inputs else ""
    if state.reducer_parts:
        inputs = f" (merging {counted(state.reducer_inputs, 'worker')} in {_parts(state)})"
    return (f'{_OPEN}<b>reducer</b>{inputs}{_reducer_input(state)}{_reducer_cut(state)}'
            '<div style="white-space:pre-wrap;'
            f"max-height:320px;overflow:auto;border-left:3px solid {COLOURS['rule'].css};"
            f'padding-left:6px">{_esc(text)}</div></div>')


_RENDERERS = {
    "header": _header,
    "budget": _budget,
    "plan": _plan,
    "workers": _workers,
    "tools": _tools,
    "reducer": _reducer,
}


def _reducer_cut(state: LiveState) -> str:
    """The warning above a cut answer (or one merged from cut parts), as the static
    output words it."""
    limit = state.max_tokens.get("reducer")
    shown = f" ({limit})" if limit else ""
    if state.reducer_cut:
        text = f"⚠ the answer was {CUT_MARK}{shown}; {raise_hint('reducer', limit)}"
    elif state.parts_cut:
        text = (f"⚠ {state.parts_cut} of the reducer's partial answers were {CUT_MARK}"
                f"{shown}; {raise_hint('reducer', limit)}")
    else:
        return ""
    return f'<div style="color:{COLOURS["warn"].css};font-weight:600">{_esc(text)}</div>'


def _parts(state: LiveState) -> str:
    """``10 parts: 4/10 merged, 2 running``, and each further level's merges."""
    merged = state.parts_merged
    text = f"{state.reducer_parts} parts: {merged.get(1, 0)}/{state.reducer_parts} merged"
    for level in sorted(merged):
        if level > 1:
            text += f", level {level}: {merged[level]} merged"
    if state.parts_running:
        text += f", {len(state.parts_running)} running"
    if state.parts_cut:
        text += f", {state.parts_cut} {CUT_MARK}"
    return text


def _reducer_input(state: LiveState) -> str:
    """The messages the reducer was sent, expandable, each cut short; rendered once.
    A tree reduction's final call is sent partial answers, not these: none is shown."""
    if not state.reduced or state.reducer_input_html or state.reducer_parts:
        return state.reducer_input_html
    inputs = []
    for index in state.reduced:
        worker = state.workers.get(index)
        if worker is not None and worker.record is not None:
            inputs.append((index, worker.task, reducer_text(worker.record)))
    state.reducer_input_html = reducer_input(
        state.reducer_prompt, state.task, inputs, _LIVE_OUTPUT_CHARS * 2,
        "_swarm.reduced and _swarm.workers")
    return state.reducer_input_html
