"""The timeline of a Run as an inline SVG waterfall: one lane per step, one bar per call.

A pure function of the RunRecord: fixed number formatting (1 decimal place in px), no ids, no
dates, no plotting dependency, so a replayed run renders byte-identical output.

Lanes are ``planner``, ``worker-1`` .. ``worker-N``, the parts of a tree reduction
(``reducer-1.1`` ..., one lane per level past ``MAX_PART_LANES``), ``reducer`` (then any
other step).
Bars are model calls coloured by outcome (ok / cached / failed; a cancelled call is a
dashed outline); orange ticks are retried attempts (``run.retries``); blue marks under a
bar are tool calls. A worker that never started keeps its lane (so lanes match the
worker table) but has no bar, and its label is dimmed.

A tree (a worker split): each worker's lane is followed by its children's (``2``,
``2.1``, ``2.1.3``, ``2.2``: the worker table's order), their labels indented by depth;
a split's reducer call (``reducer-of-2``) is drawn on its parent's lane, between the
parent's split call and its own answer. A tree with more workers than ``MAX_LANES`` gets
a lane per top-level worker and its whole tree (``worker-3 +20``) when those fit.

Colours follow the notebook's theme: text, axis and grid are ``currentColor`` (the
output's own text colour, light or dark); outcome colours are theme variables through
CSS classes (``swarmkit.display.theme.STYLE``), with mid-tone ``fill`` attributes as the fallback
for viewers that drop the CSS. Lane height
shrinks as lanes are added so the SVG stays under about 600 px of lanes; beyond
``MAX_LANES`` lanes, consecutive workers share a lane and a note says how many.
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable
from typing import TYPE_CHECKING

from ..config.wording import counted
from ..record.steps import owner_of_step, reducer_part_of_step
from .theme import COLOURS as _THEME
from .treelayout import tree_key

if TYPE_CHECKING:
    from ..record.rows import CallRecord
    from ..record.runrecord import RunRecord

__all__ = ["MAX_LANES", "MAX_PART_LANES", "timeline_svg"]

MAX_LANES = 200
MAX_PART_LANES = 12  # a tree reduction's parts past this share one lane per level
WIDTH = 800
_LABEL_W = 96
_RIGHT_PAD = 16
_PLOT_W = WIDTH - _LABEL_W - _RIGHT_PAD
_TOP = 24  # legend row
_AXIS_H = 24
_MAX_PLOT_H = 600
_MAX_LANE_H = 18
_MIN_LANE_H = 3
_LABEL_MIN_PX = 10  # below this lane height only every k-th lane is labelled
_MAX_TOOLTIPS = 300  # past this many marks, hover titles cost more bytes than they help

# The fallback colour of each mark (its class, sk-<outcome>, sets the theme's colour).
COLOURS = {
    "ok": _THEME["ok"].fallback,
    "cached": _THEME["muted"].fallback,
    "failed": _THEME["failed"].fallback,
    "cancelled": _THEME["muted"].fallback,
    "retry": _THEME["warn"].fallback,
    "tool": _THEME["tool"].fallback,
}
_LEGEND = (("ok", "ok"), ("cached", "cached"), ("failed", "failed"),
           ("cancelled", "cancelled"), ("retry", "retry"), ("tool", "tool call"))
_DIM = ' fill-opacity="0.75"'  # notes and tick labels: still >= 4.5:1 in both themes


def _px(value: float) -> str:
    return f"{value:.1f}"


def _esc(text: str) -> str:
    return html.escape(text, quote=True)


def _seconds(value: float) -> str:
    return f"{value:.3f}s"


def _outcome(call: CallRecord) -> str:
    if call.error is not None:
        cancelled = call.error == "cancelled" or call.error.startswith("cancelled (")
        return "cancelled" if cancelled else "failed"
    return "cached" if call.source == "cache" else "ok"


class _Lanes:
    """Maps a step (or a worker index) to a lane row, grouping workers when there are many."""

    def __init__(self, run: RunRecord) -> None:
        steps = {c.step for c in run.calls} | {r.step for r in run.retries}
        worker_of = {s: owner_of_step(s) for s in steps}  # each step parsed once
        workers = {w.id for top in run.workers for w in top.walk()}
        workers |= {t.worker_id for t in run.tool_calls}
        workers |= {i for i in worker_of.values() if i is not None}
        parts = sorted((part, s) for s in steps
                       if (part := reducer_part_of_step(s)) is not None)
        others = sorted(s for s in steps if worker_of[s] is None
                        and s not in ("planner", "reducer") and reducer_part_of_step(s) is None)
        head = ["planner"] if "planner" in steps else []
        part_lanes = _part_lanes(parts)
        tail = ([label for label, _ in part_lanes] + (["reducer"] if "reducer" in steps else [])
                + others)
        ordered = sorted(workers, key=tree_key)
        room = max(1, MAX_LANES - len(head) - len(tail))
        self.group = max(1, math.ceil(len(ordered) / room))
        self.workers = len(ordered)
        self.tree = any("." in worker for worker in ordered)
        self.note = f"{self.workers} workers in lanes of {self.group}" if self.group > 1 else ""
        chunks = [ordered[start:start + self.group]
                  for start in range(0, len(ordered), self.group)]
        subtrees = _subtree_chunks(ordered, room) if self.tree and self.group > 1 else None
        if subtrees is not None:
            chunks = subtrees
            self.note = f"{self.workers} workers: a lane per top-level worker and its tree"
        self.labels: list[str] = list(head)
        self.depth: list[int] = [1] * len(head)  # each lane's depth: its label's indent
        self.row: dict[str, int] = {step: n for n, step in enumerate(head)}
        self.worker_row: dict[str, int] = {}
        for chunk in chunks:
            for index in chunk:
                self.worker_row[index] = len(self.labels)
            label = f"worker-{chunk[0]}"
            if len(chunk) > 1:
                label = f"w{chunk[0]}–{chunk[-1]}"
            if len(chunk) > 1 and subtrees is not None:
                label = f"worker-{chunk[0]} +{len(chunk) - 1}"
            self.labels.append(label)
            self.depth.append(chunk[0].count(".") + 1)
        lane_steps = dict(part_lanes)
        for label in tail:
            for step in lane_steps.get(label, (label,)):
                self.row[step] = len(self.labels)
            self.labels.append(label)
            self.depth.append(1)
        # Every step's lane, worked out once: the bars look one up per call.
        self._lane = {step: self.worker_row[index] if index is not None else self.row[step]
                      for step, index in worker_of.items()}
        # lanes with a mark of their own: a lane without one draws no bar
        self.busy = set(self._lane.values())
        self.busy |= {self.worker_row[t.worker_id] for t in run.tool_calls}

    def of_step(self, step: str) -> int:
        return self._lane[step]

    def __len__(self) -> int:
        return len(self.labels)


def _subtree_chunks(ordered: list[str], room: int) -> list[list[str]] | None:
    """A tree too big for a lane each: one lane per top-level worker and its
    descendants (its calls, its children's and their splits'), when those fit; None
    when even they do not (then consecutive lanes are grouped, as for a flat run)."""
    subtrees: dict[str, list[str]] = {}
    for worker in ordered:
        subtrees.setdefault(worker.partition(".")[0], []).append(worker)
    return list(subtrees.values()) if len(subtrees) <= room else None


def _part_lanes(parts: list[tuple[tuple[int, int], str]]) -> list[tuple[str, list[str]]]:
    """The lanes of a tree reduction's parts (``reducer-1.1`` ...), in level and part
    order: one lane each, or past ``MAX_PART_LANES`` one lane per level."""
    if len(parts) <= MAX_PART_LANES:
        return [(step, [step]) for _, step in parts]
    levels: dict[int, list[tuple[int, str]]] = {}
    for (level, index), step in parts:
        levels.setdefault(level, []).append((index, step))
    return [(f"reducer-{level}.{steps[0][0]}–{steps[-1][0]}", [s for _, s in steps])
            for level, steps in sorted(levels.items())]


def _tick_step(span: float) -> float:
    """A 1/2/5 x 10^k step giving between 4 and 10 ticks over ``span`` seconds."""
    raw = span / 6
    power = 10 ** math.floor(math.log10(raw))
    for factor in (1, 2, 5, 10):
        if raw <= factor * power:
            return factor * power
    return 10 * power  # pragma: no cover - the loop always returns


def _tick_label(value: float, step: float) -> str:
    decimals = max(0, -math.floor(math.log10(step)))
    return f"{value:.{decimals}f}s"


def _span(run: RunRecord) -> float:
    ends: list[float] = [run.duration]
    ends += [c.started + c.latency for c in run.calls]
    ends += [t.started + t.duration for t in run.tool_calls]
    ends += [r.t for r in run.retries]
    span = max(ends)
    return span if span > 0 else 1.0


def _paint(outcome: str) -> str:
    """The class and fallback paint of a mark of ``outcome``."""
    if outcome == "cancelled":
        return (f'class="sk-cancelled" fill="none" stroke="{COLOURS["cancelled"]}" '
                'stroke-dasharray="3 2"')
    if outcome == "retry":
        return f'class="sk-retry" stroke="{COLOURS["retry"]}" stroke-width="2"'
    return f'class="sk-{outcome}" fill="{COLOURS[outcome]}"'


def _legend(note: str) -> Iterable[str]:
    x = _LABEL_W
    for key, text in _LEGEND:
        if key == "retry":
            yield f'<line x1="{_px(x + 5)}" y1="8.0" x2="{_px(x + 5)}" y2="18.0" {_paint(key)}/>'
        else:
            yield f'<rect x="{_px(x)}" y="8.0" width="10.0" height="10.0" {_paint(key)}/>'
        yield f'<text x="{_px(x + 14)}" y="17.0">{text}</text>'
        x += 14 + 6 * len(text) + 12
    if note:
        yield (f'<text x="{_px(WIDTH - _RIGHT_PAD)}" y="17.0" text-anchor="end"{_DIM}>'
               f"{_esc(note)}</text>")


def _merged(calls: Iterable[CallRecord], lanes: _Lanes, scale: float
            ) -> dict[tuple[int, str], list[tuple[float, float]]]:
    """The calls' (start, end) spans per lane and outcome, those less than a pixel
    apart merged into one."""
    by_lane: dict[tuple[int, str], list[tuple[float, float]]] = {}
    for call in calls:
        key = (lanes.of_step(call.step), _outcome(call))
        by_lane.setdefault(key, []).append((call.started, call.started + call.latency))
    gap = 1.0 / scale
    merged: dict[tuple[int, str], list[tuple[float, float]]] = {}
    for key, spans in by_lane.items():
        spans.sort()
        out = [spans[0]]
        for start, end in spans[1:]:
            if start <= out[-1][1] + gap:
                out[-1] = (out[-1][0], max(out[-1][1], end))
            else:
                out.append((start, end))
        merged[key] = out
    return merged


def timeline_svg(run: RunRecord) -> str:
    """An inline SVG waterfall of every call, retry and tool call of ``run``."""
    lanes = _Lanes(run)
    if not len(lanes):
        return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="24" '
                'font-family="sans-serif" font-size="11" fill="currentColor" '
                'class="swarmkit-timeline"><text x="4" y="16">no calls</text></svg>')
    lane_h = max(_MIN_LANE_H, min(_MAX_LANE_H, _MAX_PLOT_H // len(lanes)))
    plot_h = lane_h * len(lanes)
    height = _TOP + plot_h + _AXIS_H
    span = _span(run)
    scale = _PLOT_W / span

    def x_of(t: float) -> float:
        return _LABEL_W + max(0.0, t) * scale

    def y_of(row: int) -> float:
        return _TOP + row * lane_h

    marks = len(run.calls) + len(run.tool_calls) + len(run.retries)
    with_tips = marks <= _MAX_TOOLTIPS

    def tip_of(text: str) -> str:
        return f"<title>{_esc(text)}</title>" if with_tips else ""

    note = lanes.note
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
        f'viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="11" '
        'fill="currentColor" class="swarmkit-timeline">',
        f"<title>timeline of run {_esc(run.run_id)}: {counted(len(run.calls), 'call')}</title>",
        *_legend(note),
    ]
    # the time axis: grid lines through the lanes, labels under them
    step = _tick_step(span)
    ticks = math.floor(span / step + 1e-9)
    axis_y = _TOP + plot_h
    for n in range(ticks + 1):
        value = n * step
        x = _px(x_of(value))
        out.append(f'<line x1="{x}" y1="{_TOP}" x2="{x}" y2="{axis_y + 4}" '
                   'stroke="currentColor" stroke-opacity="0.15"/>')
        out.append(f'<text x="{x}" y="{axis_y + 16}" text-anchor="middle"{_DIM}>'
                   f"{_tick_label(value, step)}</text>")
    out.append(f'<line x1="{_LABEL_W}" y1="{axis_y}" x2="{WIDTH - _RIGHT_PAD}" '
               f'y2="{axis_y}" stroke="currentColor" stroke-opacity="0.6"/>')
    # lane labels; on thin lanes only every k-th one, so the text does not overlap
    every = 1 if lane_h >= _LABEL_MIN_PX else math.ceil(_LABEL_MIN_PX / lane_h)
    font = min(11, max(8, lane_h - 3))
    idle = {lanes.worker_row[w.id] for top in run.workers for w in top.walk()
            if w.started is None and w.id in lanes.worker_row} - lanes.busy
    for row, label in enumerate(lanes.labels):
        if row % every:
            continue
        y = y_of(row) + lane_h / 2 + font / 2 - 1
        dim = ' fill-opacity="0.6"' if row in idle else ""
        if lanes.tree:  # left-aligned, a child's label indented under its parent's
            depth = lanes.depth[row]
            text = label if depth == 1 else "↳" + label.removeprefix("worker-")
            out.append(f'<text x="{_px(4 + 8 * (depth - 1))}" y="{_px(y)}" '
                       f'font-size="{font}"{dim}>{_esc(text)}</text>')
            continue
        out.append(f'<text x="{_LABEL_W - 6}" y="{_px(y)}" text-anchor="end" '
                   f'font-size="{font}"{dim}>{_esc(label)}</text>')

    def bar(start: float, seconds: float, y: float, height: float, outcome: str,
            tip: str) -> str:
        width = max(1.0, seconds * scale)
        return (f'<rect x="{_px(x_of(start))}" y="{_px(y)}" width="{_px(width)}" '
                f'height="{_px(height)}" {_paint(outcome)}>{tip_of(tip)}</rect>')

    bar_pad = lane_h * 0.15
    if lanes.group > 1:
        # Lanes of many workers: one bar per stretch of time a lane is busy with calls of
        # one outcome, so the SVG grows with the lanes and the plot's width, not with N.
        for (row, outcome), spans in _merged(run.calls, lanes, scale).items():
            y = y_of(row) + bar_pad
            out.extend(bar(start, end - start, y, lane_h - 2 * bar_pad, outcome,
                           f"{lanes.labels[row]} · {outcome}") for start, end in spans)
    for call in run.calls if lanes.group == 1 else ():
        outcome = _outcome(call)
        tip = f"{call.step} · {outcome} · {call.attempts} attempt(s) · {_seconds(call.latency)}"
        if call.cut:
            tip += " · cut at max tokens"
        if call.error:
            tip += f" · {call.error}"
        y = y_of(lanes.of_step(call.step)) + bar_pad
        out.append(bar(call.started, call.latency, y, lane_h - 2 * bar_pad, outcome, tip))
    for tool in run.tool_calls:
        tip = f"worker-{tool.worker_id} · {tool.tool} · {_seconds(tool.duration)}"
        if tool.error:
            tip += f" · {tool.error}"
        y = y_of(lanes.worker_row[tool.worker_id]) + lane_h * 0.62
        out.append(bar(tool.started, tool.duration, y, max(1.0, lane_h * 0.3), "tool", tip))
    for retry in run.retries:
        top = y_of(lanes.of_step(retry.step))
        x = _px(x_of(retry.t))
        tip = f"{retry.step} · attempt {retry.attempt} failed · {retry.error}"
        out.append(
            f'<line x1="{x}" y1="{_px(top)}" x2="{x}" y2="{_px(top + lane_h)}" '
            f'{_paint("retry")}>{tip_of(tip)}</line>'
        )
    out.append("</svg>")
    return "\n".join(out)
