"""Colours in both JupyterLab themes and in plain viewers: contrast computed, not eyeballed."""

from __future__ import annotations

import re

import pytest

from swarmkit.config.swarmconfig import SwarmConfig
from swarmkit.display.livehtml import render_section
from swarmkit.display.livestate import SECTIONS, LiveState
from swarmkit.display.theme import COLOURS, DARK, LIGHT, STYLE, contrast_ratio
from swarmkit.testing.synthetic import synthetic_events, synthetic_run

# Where the colours are seen: JupyterLab's light and dark backgrounds (the notebook and
# the panels), and the pages of viewers that define no --jp-* variable (white, and the
# dark VS Code / GitHub backgrounds) against which the fallbacks are drawn.
_THEMED = [(theme, theme[bg]) for theme in (LIGHT, DARK)
           for bg in ("--jp-layout-color0", "--jp-layout-color1")]
_PLAIN = ["#ffffff", "#1e1e1e", "#0d1117", "#111111"]
# Colours drawn as text or as marks that must read against the page (WCAG 1.4.11).
_TEXT = ["ok", "failed", "warn", "running", "tool", "muted"]


def _rendered() -> str:
    config = SwarmConfig().with_options(model="m", workers=12, budget="0.05")
    state = LiveState(task="t", config=config)
    events = synthetic_events(12, fail_every=5, retry_every=3, tool_every=4,
                              budget_usd="0.05")
    for event in events[: len(events) // 2]:
        state.apply(event)
    live = "".join(render_section(state, name) for name in SECTIONS)
    return live + synthetic_run(12, fail_every=5, tool_every=4).tables().html()


@pytest.mark.parametrize("name", _TEXT)
def test_status_colours_keep_3_to_1_in_light_dark_and_plain_viewers(name: str) -> None:
    colour = COLOURS[name]
    for theme, background in _THEMED:
        assert contrast_ratio(theme[colour.variable], background) >= 3, (name, background)
    for background in _PLAIN:
        assert contrast_ratio(colour.fallback, background) >= 3, (name, background)


def test_the_budget_bar_reads_against_the_page_in_both_themes() -> None:
    # the track is an outline in the muted colour; spent and reserved fill it
    for name in ("muted", "ok", "warn"):
        colour = COLOURS[name]
        for theme, background in _THEMED:
            assert contrast_ratio(theme[colour.variable], background) >= 3
    bar = _rendered().split("budget:", 1)[1].split("</div></div></div>", 1)[0]
    assert f"border:1px solid {COLOURS['muted'].css}" in bar
    assert "#eee" not in bar and "background:#" not in bar


def test_dimmed_svg_text_keeps_4_5_to_1_in_both_themes() -> None:
    # tick labels and notes are currentColor at fill-opacity 0.75 over the page
    for theme, background in _THEMED:
        text = theme["--jp-ui-font-color1"]
        r, g, b, a = (float(v) for v in text[text.index("(") + 1:-1].split(","))
        dimmed = f"rgba({r},{g},{b},{a * 0.75})"
        assert contrast_ratio(dimmed, background) >= 4.5


def test_every_colour_is_a_theme_variable_with_a_fallback_or_current_color() -> None:
    page = _rendered()
    # no bare colour: every hex sits in a var() fallback or in an SVG fill/stroke attribute
    # (the SVG's own fallback, overridden by the theme's class rules)
    bare = re.findall(r'(?<!,)(?<!fill=")(?<!stroke=")#[0-9a-fA-F]{3,6}\b', page)
    assert bare == []
    used = set(re.findall(r"var\((--jp-[a-z0-9-]*colou?r[0-9]*),", page + STYLE))
    assert used and used <= set(LIGHT) and used <= set(DARK)  # each one checked above
    svg = page.split("<svg", 1)[1]
    assert 'fill="currentColor"' in svg and "#555" not in svg and "#ddd" not in svg
