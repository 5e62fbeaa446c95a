"""One compact lane per variant while a comparison runs, rendered from its ``LiveState``.

A lane is two lines: the variant's label, its phase and its clock; then its workers
done of all (by status), its calls cut at max tokens (when any), tokens, cost and tool
calls, over a thin bar of finished workers. Once the run is scored, a third line shows
each check's and the judge's score as it lands (``scores: contains 1.00 · judge 0.80``).
The comparison's header sums what every lane spent. Both have a text form too (the same
figures on one line). Everything is escaped.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

from ..config.wording import counted
from ..credentials.scrub import one_line
from ..record.usage import Usage
from .livestate import LiveState
from .tablefmt import format_cost, format_tokens
from .tablerows import score_figure
from .theme import COLOURS, STYLE
from .truncation import CUT_MARK

__all__ = ["lane_scores", "lane_text", "lane_workers", "render_header", "render_lane"]

_BOX = "font-family:var(--jp-ui-font-family,sans-serif);font-size:12px"
# Worker statuses as a lane counts them (the first word of a status label), in order.
_ORDER = ("ok", "failed", "skipped", "cancelled", "running")
_PHASE_COLOUR = {"done": "ok", "failed": "failed", "cancelled": "failed",
                 "done (partial)": "warn", "stopped and merged": "warn"}


def _esc(text: object) -> str:
    return html.escape(str(text), quote=True)


def _phase(state: LiveState) -> str:
    if state.cancelling and state.phase in ("planning", "running", "reducing", "scoring"):
        return "cancelling…"
    return state.phase


def _by_status(state: LiveState) -> dict[str, int]:
    counts: dict[str, int] = {}
    for label, n in state.counts.items():
        word = label.split(" ", 1)[0]
        key = "ok" if word == "completed" else word
        if n:
            counts[key] = counts.get(key, 0) + n
    return counts


def lane_workers(state: LiveState) -> str:
    """``3/4 done (2 ok · 1 failed · 1 running)``; ``no plan yet`` before the planner."""
    total = max(len(state.plan), len(state.workers))
    if not total:
        return "no plan yet"
    counts = _by_status(state)
    parts = [f"{counts[k]} {k}" for k in _ORDER if counts.get(k)]
    # A tree (a variant with depth > 1): its splits and leaves, as the dashboard counts them.
    tree = (f" · {counted(state.splits, 'split')}, {state.leaves_done}/"
            f"{state.tree_size - state.splits} leaves done" if state.splits else "")
    return (f"{state.finished}/{total} done" + (f" ({' · '.join(parts)})" if parts else "")
            + tree)


def _cut(state: LiveState) -> str:
    """`` · 2 cut at max tokens``: the lane's calls that stopped at their max tokens."""
    return f" · {state.cut_calls:,} {CUT_MARK}" if state.cut_calls else ""


def _spend(usage: Usage, tools: int | None = None) -> str:
    spent = (f"tokens {format_tokens(usage.prompt_tokens)} in / "
             f"{format_tokens(usage.completion_tokens)} out · cost {format_cost(usage.cost)}")
    return spent if tools is None else f"{spent} · {counted(tools, 'tool call')}"


def lane_scores(state: LiveState) -> str:
    """``scores: contains 1.00 · judge 0.80 · regex error``, in the order they landed;
    "" before the first. A score that could not be taken reads ``error`` (unknown, not 0:
    the static view and ``Comparison.scores()`` say why)."""
    if not state.scores:
        return ""
    shown = (f"{score.name} {score_figure(score)}" for score in state.scores)
    return "scores: " + " · ".join(shown)


def lane_text(label: str, state: LiveState) -> str:
    """The lane on one line."""
    scores = lane_scores(state)
    return (f"{label} · {_phase(state)} · {state.now:.1f}s · workers {lane_workers(state)}"
            f"{_cut(state)} · {_spend(state.usage, state.tool_count)}"
            + (f" · {scores}" if scores else ""))


def _bar(state: LiveState) -> str:
    """Finished workers as a thin bar: completed, failed, others, of all planned."""
    total = max(len(state.plan), len(state.workers))
    if not total:
        return ""
    counts = _by_status(state)
    fills = []
    for key, colour in (("ok", "ok"), ("failed", "failed"), ("skipped", "warn"),
                        ("cancelled", "muted"), ("running", "running")):
        share = 100.0 * counts.get(key, 0) / total
        if share:
            opacity = ";opacity:.45" if key == "running" else ""
            fills.append(f'<div style="width:{share:.1f}%;background:'
                         f'{COLOURS[colour].css}{opacity}"></div>')
    return ('<div class="sk-track" style="width:360px;max-width:100%;height:6px;margin-top:2px;'
            f"border:1px solid {COLOURS['muted'].css};border-radius:3px;display:flex;"
            f'overflow:hidden;box-sizing:border-box">{"".join(fills)}</div>')


def _kept(text: str) -> str:
    """``text``'s `` · ``-separated figures (outside parentheses), each kept on one line,
    so a narrow lane wraps between ``tokens ...`` and ``cost $0.01``, never inside."""
    pieces, depth, start = [], 0, 0
    for i, char in enumerate(text):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth == 0 and text.startswith(" · ", i):
            pieces.append(text[start:i])
            start = i + 3
    pieces.append(text[start:])
    return " · ".join(f'<span style="white-space:nowrap">{_esc(piece)}</span>'
                      for piece in pieces)


def render_lane(label: str, state: LiveState) -> str:
    """The lane's HTML: a ``div.swarmkit`` (the header carries the CSS)."""
    phase = _phase(state)
    colour = COLOURS[_PHASE_COLOUR.get(state.phase, "running")].css
    error = (f'<br><span style="color:{COLOURS["failed"].css}">error: '
             f"{_esc(one_line(state.error, 200))}</span>" if state.error else "")
    scores = lane_scores(state)
    scored = f'<br><span class="sk-lane-scores">{_kept(scores)}</span>' if scores else ""
    # Its own line height: an ipywidgets HTML widget's (28 px) would space it out.
    return (f'<div class="swarmkit sk-lane" style="{_BOX};line-height:1.45;'
            f'border-left:3px solid {colour};padding:1px 0 3px 6px;margin:2px 0">'
            f'<b>{_esc(label)}</b> · <b style="color:{colour}">{_esc(phase)}</b> · '
            f"{state.now:.1f}s<br>{_kept('workers ' + lane_workers(state) + _cut(state))} · "
            f"{_kept(_spend(state.usage, state.tool_count))}{error}{scored}{_bar(state)}</div>")


def render_header(task: str, states: Sequence[LiveState], cancelling: bool = False,
                  variants: int | None = None) -> str:
    """The comparison's header: how many variants (and runs, when they repeat), how many
    runs finished. ``variants`` is None when each lane is one variant."""
    finished = sum(1 for s in states if s.phase not in ("starting", "planning", "running",
                                                        "reducing", "scoring"))
    variants = len(states) if variants is None else variants
    runs = "" if variants == len(states) else f" · {len(states)} runs"
    status = ("cancelling…" if cancelling and finished < len(states) else
              "done" if finished == len(states) else f"running · {finished} of "
              f"{len(states)} finished")
    colour = COLOURS["ok" if finished == len(states) else "running"].css
    # No sum of the lanes' spend: a call the variants share is in every lane that uses it.
    return (f'{STYLE}<div class="swarmkit" style="{_BOX}"><b>compare</b> · '
            f"{variants} variants{runs} · "
            f'<b style="color:{colour}">{_esc(status)}</b>'
            f"<br>task: {_esc(one_line(task, 160))}</div>")
