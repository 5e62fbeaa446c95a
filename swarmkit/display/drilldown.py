"""What a row expands to: a worker's sub-task, messages, output, tool calls and error.

HTML ``<details>`` blocks that open without JavaScript, for the static tables and the
live view alike, and the planner's raw reply and the reducer's input the same way. Every
piece of text is escaped (outputs go through ``markdown_html``, which escapes first) and
cut to a bound with a marker that says where the whole text is, so 60 expanded rows stay
a few hundred KB at most.

The messages a worker sent are not stored: they are a pure function of the run's config,
its task and the plan (``worker_messages``, ``reducer_messages``), rebuilt here; what the
tool loop added to them is the worker's tool calls, shown below them. The judge's calls
do keep what they sent and what came back, so its drill-down shows both and the score
parsed from the reply.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..config.wording import counted
from ..credentials.scrub import one_line
from ..engine.reducer import reducer_messages, reducer_text
from ..engine.worker import worker_messages
from ..record.steps import reducer_part_of_step
from .markdown import markdown_html

if TYPE_CHECKING:
    from ..record.rows import ToolCallRecord, WorkerRecord
    from ..record.runrecord import RunRecord
    from .failures import Failure

__all__ = [
    "MAX_MESSAGE_CHARS", "MAX_OUTPUT_CHARS", "MAX_TOOL_CALLS", "ChildAnswer", "cut",
    "details", "judge_details", "planner_details", "reducer_details", "reducer_input",
    "run_worker_messages", "worker_body", "worker_details", "worker_where",
]

MAX_OUTPUT_CHARS = 4_000
MAX_MESSAGE_CHARS = 1_500
MAX_TOOL_CHARS = 400
MAX_TOOL_CALLS = 10
MAX_REDUCER_INPUT_CHARS = 8_000
MAX_CHILD_CHARS = 600  # each child's answer in its parent's drill-down (its own row has it all)


@dataclass(frozen=True, slots=True)
class ChildAnswer:
    """One child of a split as its parent's drill-down lists it (None: no answer yet)."""

    worker_id: str
    task: str
    status: str
    output: str | None


def worker_where(prefix: str, worker_id: str) -> str:
    """How to reach worker ``worker_id`` of ``prefix`` (``run``, ``_swarm``) from Python:
    ``run.worker(2)``, and in a tree ``run.worker('2.1')``."""
    return (f"{prefix}.worker({worker_id})" if worker_id.isdigit()
            else f"{prefix}.worker('{worker_id}')")


def _children(children: Sequence[ChildAnswer], where: str) -> str:
    """A split's children: each one's id, status, sub-task and answer, cut short."""
    out = []
    for child in children:
        answer = "(no answer yet)" if child.output is None else cut(
            child.output, MAX_CHILD_CHARS, f"{where}.children")
        head = f"{child.worker_id} · {child.status} · {one_line(child.task, 80)}"
        out.append(f"<div><i>{_esc(head)}</i><pre>{_esc(answer)}</pre></div>")
    return "".join(out)


def _esc(text: object) -> str:
    return html.escape(str(text), quote=True)


def cut(text: str, limit: int, where: str) -> str:
    """``text`` cut to ``limit`` characters, with a marker naming ``where`` the rest is."""
    if len(text) <= limit:
        return text
    return (f"{text[:limit]}\n… [cut: {len(text) - limit:,} more characters; "
            f"{where} has the whole text]")


def _pre(text: str, limit: int, where: str) -> str:
    return f"<pre>{_esc(cut(text, limit, where))}</pre>"


def _messages(messages: Sequence[Mapping[str, Any]], where: str, limit: int) -> str:
    out = []
    for message in messages:
        role = str(message.get("role", "?"))
        out.append(f"<div><i>{_esc(role)}</i>"
                   f"{_pre(str(message.get('content') or ''), limit, where)}</div>")
    return "".join(out)


def _tool_calls(calls: Sequence[ToolCallRecord], total: int, where: str) -> str:
    lines = []
    for t in calls[:MAX_TOOL_CALLS]:
        result = f"error: {t.error}" if t.error else (t.result or "")
        lines.append(f"hop {t.hop} · {t.tool}({cut(t.arguments, MAX_TOOL_CHARS, where)})"
                     f"\n  → {cut(result, MAX_TOOL_CHARS, where)}")
    if total > len(lines):
        lines.append(f"… {total - len(lines)} more; {where} has them all")
    return f"<pre>{_esc(chr(10).join(lines))}</pre>"


def worker_body(
    *,
    index: int,
    task: str,
    messages: Sequence[Mapping[str, Any]],
    output: str | None,
    tool_calls: Sequence[ToolCallRecord],
    tool_total: int,
    failure: Failure | None,
    where: str,
    output_limit: int = MAX_OUTPUT_CHARS,
    message_limit: int = MAX_MESSAGE_CHARS,
    cut_note: str | None = None,
    worker_id: str | None = None,
    children: Sequence[ChildAnswer] = (),
) -> str:
    """The inside of worker ``index``'s drill-down; ``where`` names how to reach it whole.

    ``cut_note`` says the output stopped at its max tokens (``display.truncation``), just
    above the output. The live view passes smaller limits: it re-sends the section on
    every push. In a tree, ``worker_id`` is its dotted id and ``children`` its split's
    children, listed after its tool calls (the ``split_task`` call among them).
    """
    parts = [f"<div class=\"sk-drill\"><b>sub-task {worker_id or index}</b>"
             f"<pre>{_esc(cut(task, MAX_OUTPUT_CHARS, where))}</pre>"]
    if failure is not None and (failure.error or failure.hint):
        parts.append(f'<b>error</b><pre class="sk-error">{_esc(failure.line)}</pre>')
    if messages:
        parts.append(f"<b>messages sent</b>{_messages(messages, where, message_limit)}")
    if tool_total:
        listed = _tool_calls(tool_calls, tool_total, where)
        parts.append(f"<b>tool calls ({tool_total})</b>{listed}")
    if children:
        done = sum(1 for child in children if child.output is not None)
        parts.append(f"<b>child answers ({done} of {len(children)})</b>"
                     f"{_children(children, where)}")
    if output is not None:
        text = cut(output, output_limit, f"{where}.output")
        warning = f'<p class="sk-warn">⚠ {_esc(cut_note)}</p>' if cut_note else ""
        parts.append(f'<b>output</b>{warning}<div class="sk-md">{markdown_html(text)}</div>')
    parts.append("</div>")
    return "".join(parts)


def details(summary: str, body: str, title: str = "", css: str = "") -> str:
    """``<details>`` whose one-line ``summary`` (escaped here) shows ``title`` on hover."""
    tip = f' title="{_esc(title)}"' if title else ""
    cls = f' class="{css}"' if css else ""
    return f"<details{cls}><summary{tip}>{_esc(summary)}</summary>{body}</details>"


def run_worker_messages(run: RunRecord, worker: WorkerRecord,
                        parent: WorkerRecord | None = None) -> list[dict[str, Any]]:
    """The messages ``worker`` started from, rebuilt from the run's config and plan (a
    child's from its ``parent``: its sub-task is the child's task, its children the
    child's siblings)."""
    prompt = run.config.get("system_prompt")
    if prompt is None or worker.started is None:
        return []  # an old run without its prompt, or a worker that never sent anything
    task, total = run.task, len(run.plan) or len(run.workers)
    if parent is not None:
        task, total = parent.task, len(parent.children)
    schema = run.config.get("output_schema")
    return worker_messages(str(prompt), task, worker.index, worker.task, total,
                           schema if isinstance(schema, str) else None)


def worker_details(
    run: RunRecord, worker: WorkerRecord, tool_calls: Sequence[ToolCallRecord],
    failure: Failure | None, summary: str, cut_note: str | None = None,
    parent: WorkerRecord | None = None,
) -> str:
    """A static worker row's expandable task cell (``cut_note``: its output was cut); a
    worker that split lists its split (a tool call) and its children's answers."""
    children = [ChildAnswer(child.id, child.task, child.status_label, child.output)
                for child in worker.children]
    body = worker_body(
        index=worker.index, task=worker.task,
        messages=run_worker_messages(run, worker, parent), output=worker.output,
        tool_calls=tool_calls, tool_total=len(tool_calls), failure=failure,
        where=worker_where("run", worker.id), cut_note=cut_note,
        worker_id=worker.id if worker.parent is not None or children else None,
        children=children,
    )
    return details(summary, body, title=worker.task)


def planner_details(run: RunRecord) -> str:
    """The planner's raw reply, expandable; empty when the run never planned."""
    if not run.plan_raw:
        return ""
    body = f'<div class="sk-drill">{_pre(run.plan_raw, MAX_OUTPUT_CHARS, "run.plan_raw")}</div>'
    planned = [call for call in run.calls if call.role == "planner" and call.error is None]
    cut_mark = " · cut at max tokens" if planned and planned[-1].cut else ""
    return details(f"planner's raw reply ({len(run.plan_raw):,} characters){cut_mark}", body,
                   css="sk-planner")


def reducer_input(
    prompt: str, task: str, inputs: list[tuple[int, str, str]], limit: int, where: str,
) -> str:
    """The messages the reducer was sent (``inputs``: index, sub-task, output), expandable."""
    body = "".join(f"<div><i>{_esc(m['role'])}</i>{_pre(m['content'], limit, where)}</div>"
                   for m in reducer_messages(prompt, task, inputs))
    return details(f"reducer's input ({counted(len(inputs), 'worker')})",
                   f'<div class="sk-drill">{body}</div>', css="sk-reducer")


def reducer_details(run: RunRecord) -> str:
    """The reducer's input of a finished run, expandable; empty if it got none."""
    if any(reducer_part_of_step(call.step) for call in run.calls):
        return ""  # a tree reduction's final call was sent partial answers, not these
    if not run.reduced or "reducer_prompt" not in run.config:
        return ""
    by_index = {w.index: w for w in run.workers}
    inputs = [(i, by_index[i].task, reducer_text(by_index[i])) for i in run.reduced
              if i in by_index]
    return reducer_input(str(run.config["reducer_prompt"]), run.task, inputs,
                         MAX_REDUCER_INPUT_CHARS, "run.reduced and run.workers")


def judge_details(run: RunRecord) -> str:
    """Each judge call, expandable: the prompt it was sent, its reply, and the score
    parsed from it (or why there is none); empty when the run was not judged."""
    by_step = {score.step: score for score in run.scores if score.step}
    parts = []
    for call in run.calls:
        if call.role != "judge" or call.messages is None:
            continue
        where = f"run.calls (step {call.step})"
        score = by_step.get(call.step)
        if call.error is not None:
            verdict = f"call failed: {call.error}"
        elif score is None or score.score is None:
            verdict = f"no score: {score.error if score else 'not recorded'}"
        else:
            verdict = f"score {float(score.score) * 10:g}/10 → {float(score.score):.2f}"
        body = "".join(
            f"<div><i>{_esc(m.get('role', ''))}</i>"
            f"{_pre(str(m.get('content', '')), MAX_MESSAGE_CHARS, where)}</div>"
            for m in call.messages)
        reply = "" if call.output is None else (
            f"<div><i>reply</i>{_pre(call.output, MAX_OUTPUT_CHARS, where)}</div>")
        parsed = f'<p class="sk-note">{_esc(verdict)}'
        parsed += f" · {_esc(score.reason)}</p>" if score and score.reason else "</p>"
        parts.append(details(f"{call.step}: the judge's prompt and reply · {verdict}",
                             f'<div class="sk-drill">{body}{reply}{parsed}</div>',
                             css="sk-judge"))
    return "".join(parts)
