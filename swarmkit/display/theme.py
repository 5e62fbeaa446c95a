"""Colours and CSS shared by the static tables, the timeline and the live view.

Every colour is a JupyterLab theme variable with a fallback, ``var(--jp-…, #hex)``, so the
output follows JupyterLab's light and dark themes, and plain HTML viewers (nbviewer,
GitHub, VS Code) that do not define the variables get the fallback. Fallbacks are mid
tones that keep 3:1 against both a white and a near-black page. Body text is never
coloured: it inherits the page's own colour (``currentColor`` in the SVG).

``STYLE`` is one ``<style>`` block, scoped under ``.swarmkit``; the static bundle and the
dashboard's header both carry it. ``LIGHT`` and ``DARK`` hold the JupyterLab 4 theme
values of the variables used here, so a test can check the contrast of what a reader of
either theme sees (``contrast_ratio``).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "COLOURS", "DARK", "LIGHT", "STYLE", "Colour", "contrast_ratio", "resolve",
    "row_class",
]


@dataclass(frozen=True, slots=True)
class Colour:
    """A theme variable and the colour used where it is not defined."""

    variable: str
    fallback: str

    @property
    def css(self) -> str:
        return f"var({self.variable},{self.fallback})"


# name -> colour; the names are also the CSS classes' suffixes (sk-failed, sk-ok, ...)
COLOURS: dict[str, Colour] = {
    "ok": Colour("--jp-success-color1", "#388e3c"),
    "failed": Colour("--jp-error-color1", "#d32f2f"),
    "warn": Colour("--jp-warn-color0", "#e65100"),  # retries, skipped, reserved budget
    "running": Colour("--jp-brand-color1", "#1976d2"),
    "tool": Colour("--jp-brand-color1", "#1976d2"),
    "muted": Colour("--jp-ui-font-color2", "#808080"),  # cached, cancelled, axis, notes
    "rule": Colour("--jp-border-color2", "#c0c0c0"),  # grid lines and table rules only
}

# JupyterLab 4's values of the variables above (theme-light / theme-dark extensions).
# Translucent font colours are listed as RGBA and composed over the background.
LIGHT: dict[str, str] = {
    "--jp-layout-color0": "#ffffff", "--jp-layout-color1": "#ffffff",
    "--jp-success-color1": "#388e3c", "--jp-error-color1": "#d32f2f",
    "--jp-warn-color0": "#e65100", "--jp-brand-color1": "#1976d2",
    "--jp-ui-font-color1": "rgba(0,0,0,0.87)", "--jp-ui-font-color2": "rgba(0,0,0,0.54)",
    "--jp-border-color2": "#e0e0e0",
}
DARK: dict[str, str] = {
    "--jp-layout-color0": "#111111", "--jp-layout-color1": "#212121",
    "--jp-success-color1": "#4caf50", "--jp-error-color1": "#f44336",
    "--jp-warn-color0": "#f57c00", "--jp-brand-color1": "#2196f3",
    "--jp-ui-font-color1": "rgba(255,255,255,0.87)",
    "--jp-ui-font-color2": "rgba(255,255,255,0.54)",
    "--jp-border-color2": "#424242",
}


def row_class(status: str) -> str:
    """The CSS class of a worker row by status: sk-failed, sk-skipped, sk-cancelled, ..."""
    return f"sk-{status.split(' ', 1)[0]}"


def _rgba(colour: str) -> tuple[float, float, float, float]:
    colour = colour.strip()
    if colour.startswith("#"):
        digits = colour[1:]
        if len(digits) == 3:
            digits = "".join(d * 2 for d in digits)
        return (int(digits[0:2], 16), int(digits[2:4], 16), int(digits[4:6], 16), 1.0)
    inner = colour[colour.index("(") + 1: colour.rindex(")")].split(",")
    r, g, b = (float(v) for v in inner[:3])
    return r, g, b, float(inner[3]) if len(inner) > 3 else 1.0


def resolve(colour: str, background: str) -> tuple[float, float, float]:
    """``colour`` (hex or rgba) as opaque RGB over an opaque ``background``."""
    r, g, b, alpha = _rgba(colour)
    br, bg, bb, _ = _rgba(background)
    return (r * alpha + br * (1 - alpha), g * alpha + bg * (1 - alpha),
            b * alpha + bb * (1 - alpha))


def _luminance(rgb: tuple[float, float, float]) -> float:
    def channel(value: float) -> float:
        c = value / 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (channel(v) for v in rgb)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast_ratio(foreground: str, background: str) -> float:
    """WCAG 2 contrast ratio of ``foreground`` (hex or rgba) drawn on ``background``."""
    fg = _luminance(resolve(foreground, background))
    bg = _luminance(resolve(background, background))
    light, dark = max(fg, bg), min(fg, bg)
    return (light + 0.05) / (dark + 0.05)


def _css() -> str:
    c = {name: colour.css for name, colour in COLOURS.items()}
    rules = [
        ".swarmkit{font-family:var(--jp-ui-font-family,sans-serif)}",
        # JupyterLab right-aligns every rendered table cell: text columns go back left.
        ".swarmkit .sk-scroll{overflow-x:auto;max-width:100%}",
        ".swarmkit table.sk-table{border-collapse:collapse;font-size:12px;margin:2px 0;"
        "table-layout:auto}",
        ".swarmkit table.sk-table th,.swarmkit table.sk-table td{text-align:left;"
        "padding:2px 8px;vertical-align:top;white-space:nowrap;"
        f"border-bottom:1px solid {c['rule']}}}",
        ".swarmkit table.sk-table .sk-num{text-align:right;font-variant-numeric:tabular-nums}",
        ".swarmkit .sk-task{max-width:26em;overflow:hidden;text-overflow:ellipsis}",
        # an opened row widens its task cell (the table box scrolls sideways)
        ".swarmkit td.sk-task:has(details[open]){max-width:60em;min-width:30em;"
        "white-space:normal}",
        ".swarmkit summary{cursor:pointer;overflow:hidden;text-overflow:ellipsis}",
        f".swarmkit .sk-why{{color:{c['muted']};max-width:28em;overflow:hidden;"
        "text-overflow:ellipsis}",
        f".swarmkit tr.sk-failed td:first-child{{box-shadow:inset 3px 0 0 {c['failed']}}}",
        f".swarmkit tr.sk-skipped td:first-child{{box-shadow:inset 3px 0 0 {c['warn']}}}",
        f".swarmkit tr.sk-cancelled td:first-child{{box-shadow:inset 3px 0 0 {c['muted']}}}",
        f".swarmkit .sk-st-failed{{color:{c['failed']};font-weight:600}}",
        f".swarmkit .sk-st-skipped{{color:{c['warn']};font-weight:600}}",
        f".swarmkit .sk-st-cancelled{{color:{c['muted']}}}",
        f".swarmkit .sk-st-running{{color:{c['running']}}}",
        f".swarmkit .sk-st-completed{{color:{c['ok']}}}",
        f".swarmkit .sk-note{{color:{c['muted']}}}",
        f".swarmkit .sk-error{{color:{c['failed']}}}",
        f".swarmkit .sk-warn{{color:{c['warn']};font-weight:600}}",
        ".swarmkit .sk-drill{font-size:12px;margin:4px 0}",
        ".swarmkit .sk-drill pre{white-space:pre-wrap;max-height:20em;overflow:auto;"
        f"margin:2px 0;padding:4px;border-left:3px solid {c['rule']}}}",
        ".swarmkit .sk-drill .sk-md{max-height:24em;overflow:auto;"
        f"border-left:3px solid {c['rule']};padding-left:6px}}",
        f".swarmkit .sk-track{{border:1px solid {c['muted']};border-radius:3px}}",
        f".swarmkit .sk-spent{{background:{c['ok']}}}",
        f".swarmkit .sk-reserved{{background:{c['warn']}}}",
        ".swarmkit-timeline text{fill:currentColor}",
    ]
    for name in ("ok", "failed", "tool", "muted"):
        rules.append(f".swarmkit-timeline .sk-{name}{{fill:{c[name]}}}")
    rules += [
        f".swarmkit-timeline .sk-cached{{fill:{c['muted']}}}",
        f".swarmkit-timeline .sk-cancelled{{fill:none;stroke:{c['muted']}}}",
        f".swarmkit-timeline .sk-retry{{stroke:{c['warn']}}}",
        f".swarmkit-timeline .sk-grid{{stroke:{c['rule']}}}",
        f".swarmkit-timeline .sk-axis{{stroke:{c['muted']}}}",
    ]
    return "<style>" + "\n".join(rules) + "</style>"


STYLE = _css()
