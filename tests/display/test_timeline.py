"""The timeline SVG: deterministic, well-formed, every call/retry/tool shown, compact at scale."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import replace

from swarmkit.api.result import Run
from swarmkit.display.timeline import COLOURS, MAX_LANES, timeline_svg
from swarmkit.testing.synthetic import synthetic_run

SVG = "{http://www.w3.org/2000/svg}"


def _parse(svg: str) -> ET.Element:
    return ET.fromstring(svg)


def _rects(root: ET.Element, colour: str) -> list[ET.Element]:
    return [r for r in root.iter(f"{SVG}rect") if r.get("fill") == colour and r.get("y") != "8.0"]


def test_same_run_renders_byte_identical_svg_also_after_json_round_trip() -> None:
    run = synthetic_run(12, retry_every=3, tool_every=4, fail_every=7, cached_every=5)
    first = timeline_svg(run)
    assert timeline_svg(run) == first
    assert timeline_svg(Run.from_json(run.to_json())) == first


def test_one_lane_per_step_in_order() -> None:
    run = synthetic_run(5)
    root = _parse(timeline_svg(run))
    labels = [t.text for t in root.iter(f"{SVG}text") if t.get("text-anchor") == "end"]
    assert labels == ["planner", "worker-1", "worker-2", "worker-3", "worker-4", "worker-5",
                      "reducer"]


def test_bars_are_coloured_by_outcome_and_retries_and_tools_are_marked() -> None:
    run = synthetic_run(12, retry_every=3, tool_every=4, fail_every=7, cached_every=5)
    root = _parse(timeline_svg(run))
    failed = [c for c in run.calls if c.error]
    cached = [c for c in run.calls if c.source == "cache" and not c.error]
    ok = [c for c in run.calls if c.error is None and c.source != "cache"]
    assert failed and cached and run.retries and run.tool_calls
    assert len(_rects(root, COLOURS["failed"])) == len(failed)
    assert len(_rects(root, COLOURS["cached"])) == len(cached)
    assert len(_rects(root, COLOURS["ok"])) == len(ok)
    assert len(_rects(root, COLOURS["tool"])) == len(run.tool_calls)
    ticks = [line for line in root.iter(f"{SVG}line")
             if line.get("stroke") == COLOURS["retry"] and line.get("y1") != "8.0"]
    assert len(ticks) == len(run.retries)
    titles = [t.text or "" for t in root.iter(f"{SVG}title")]
    assert any("attempt 1 failed" in t for t in titles)
    assert any("lookup" in t for t in titles)


def test_pixel_values_have_one_decimal_place_and_there_are_no_ids() -> None:
    svg = timeline_svg(synthetic_run(9, retry_every=2, tool_every=3))
    values = re.findall(r' (?:x|y|x1|x2|y1|y2|width|height)="([^"]+)"', svg)
    inner = [v for v in values if "." in v]
    assert inner and all(re.fullmatch(r"\d+\.\d", v) for v in inner)
    assert " id=" not in svg


def test_text_from_the_run_is_escaped() -> None:
    run = synthetic_run(3, retry_every=1)
    run.retries = [replace(r, error="<script>alert(1)</script>") for r in run.retries]
    svg = timeline_svg(run)
    assert "<script>" not in svg
    assert "&lt;script&gt;" in svg
    _parse(svg)


def test_a_thousand_workers_are_grouped_into_at_most_max_lanes_with_a_note() -> None:
    run = synthetic_run(1000, concurrency=100, tool_every=50, retry_every=100)
    svg = timeline_svg(run)
    root = _parse(svg)
    height = int(root.get("height", "0"))
    assert height <= 24 + 600 + 24 + MAX_LANES  # legend + capped lanes + axis
    assert "1000 workers in lanes of" in svg
    labels = [t.text for t in root.iter(f"{SVG}text") if t.get("text-anchor") == "end"]
    assert "planner" in labels and "reducer" in labels
    assert any(label and label.startswith("w") and "–" in label for label in labels)
    # shared lanes draw a lane's busy stretches, one bar per outcome, not one per call
    bars = sum(len(_rects(root, COLOURS[k])) for k in ("ok", "cached", "failed"))
    assert 0 < bars < len(run.calls) / 4


def test_grouped_lanes_keep_each_outcome_and_stay_bounded_in_size() -> None:
    small = synthetic_run(1000, concurrency=100, fail_every=97, cached_every=5)
    big = synthetic_run(10_000, concurrency=100, fail_every=97, cached_every=5)
    for run in (small, big):
        root = _parse(timeline_svg(run))
        for outcome in ("ok", "cached", "failed"):
            assert _rects(root, COLOURS[outcome]), outcome
    # ten times the workers, not ten times the bytes (one bar per call would be)
    assert len(timeline_svg(big)) < 3 * len(timeline_svg(small))


def test_a_run_with_no_calls_says_so() -> None:
    svg = timeline_svg(Run("r0", "task"))
    assert "no calls" in svg
    _parse(svg)


def test_time_axis_labels_cover_the_run() -> None:
    run = synthetic_run(4)
    root = _parse(timeline_svg(run))
    ticks = [t.text or "" for t in root.iter(f"{SVG}text") if t.get("text-anchor") == "middle"]
    assert ticks[0] in ("0s", "0.0s")
    last = float(ticks[-1].rstrip("s"))
    assert last <= run.duration and len(ticks) >= 4


def test_cancelled_calls_have_their_own_style_and_legend_entry() -> None:
    run = synthetic_run(4)
    cancelled = replace(run.calls[2], error="cancelled (stop)")
    run.calls = [*run.calls[:2], cancelled, *run.calls[3:]]
    root = _parse(timeline_svg(run))
    marks = [r for r in root.iter(f"{SVG}rect") if r.get("class") == "sk-cancelled"]
    assert len(marks) == 2  # the legend's and the call's
    assert all(r.get("fill") == "none" and r.get("stroke-dasharray") for r in marks)
    assert "cancelled" in [t.text for t in root.iter(f"{SVG}text")]
    assert len(_rects(root, COLOURS["failed"])) == 0  # not drawn as a failure


def test_a_worker_that_never_started_keeps_its_lane_but_gets_no_bar() -> None:
    run = synthetic_run(4)
    workers = list(run.workers)
    workers[2] = replace(workers[2], status="skipped", reason="budget", started=None,
                         calls=0, attempts=0)
    run.workers = workers
    run.calls = [c for c in run.calls if c.step != "worker-3"]
    root = _parse(timeline_svg(run))
    labels = [t for t in root.iter(f"{SVG}text") if t.get("text-anchor") == "end"]
    lane = next(t for t in labels if t.text == "worker-3")
    assert lane.get("fill-opacity")  # dimmed
    top = float(lane.get("y", "0")) - 18
    bars = [r for r in root.iter(f"{SVG}rect") if r.get("y") != "8.0"
            and top < float(r.get("y", "0")) < top + 18]
    assert bars == []
    assert all(t.get("fill-opacity") is None for t in labels if t.text != "worker-3")


def test_text_axis_and_legend_take_the_page_colour() -> None:
    svg = timeline_svg(synthetic_run(5, retry_every=2, tool_every=2))
    root = _parse(svg)
    assert root.get("fill") == "currentColor"
    assert all(t.get("fill") is None for t in root.iter(f"{SVG}text"))  # they inherit it
    lines = [line for line in root.iter(f"{SVG}line") if line.get("class") != "sk-retry"]
    assert lines and all(line.get("stroke") == "currentColor" for line in lines)
    classes = {r.get("class") for r in root.iter(f"{SVG}rect")}
    assert {"sk-ok", "sk-cached", "sk-failed", "sk-cancelled", "sk-tool"} <= classes
