"""A forecast shown: a row per role with the expected cost next to the bound, and its basis.

A ``Plan``'s text and HTML (the terminal's confirmation prints the text) read these
rows, so both state the two figures the same way.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

from ..config.wording import counted
from ..engine.forecast import Forecast
from .tablefmt import format_cost, html_table, render_table
from .theme import STYLE

__all__ = ["FORECAST_HEADERS", "forecast_html", "forecast_lines", "forecast_rows",
           "forecast_summary", "plan_html"]

FORECAST_HEADERS = ("role", "model", "calls", "expected", "at most", "")


def forecast_rows(forecast: Forecast) -> list[tuple[object, ...]]:
    """One row per role, then the total: expected cost and the bound."""
    rows: list[tuple[object, ...]] = [
        (r.role, r.model, r.calls,
         "-" if r.expected_usd is None else format_cost(r.expected_usd),
         format_cost(r.bound_usd), "spent" if r.measured else "")
        for r in forecast.roles
    ]
    expected = forecast.expected_usd
    rows.append(("total", "", sum(r.calls for r in forecast.roles),
                 "-" if expected is None else format_cost(expected),
                 format_cost(forecast.bound_usd), ""))
    return rows


def forecast_summary(forecast: Forecast) -> str:
    """One line: ``forecast for 8 workers: expected $0.0036, at most $0.0214 (basis)``."""
    expected = forecast.expected_usd
    head = f"forecast for {counted(forecast.workers, 'worker')}: "
    figures = (f"at most {format_cost(forecast.bound_usd)}" if expected is None else
               f"expected {format_cost(expected)}, at most {format_cost(forecast.bound_usd)}")
    return f"{head}{figures} ({forecast.basis})"


def forecast_lines(forecast: Forecast) -> list[str]:
    """The table and the summary line, as text lines."""
    table = render_table(forecast_rows(forecast), FORECAST_HEADERS, "simple")
    return [*table.splitlines(), forecast_summary(forecast)]


def forecast_html(forecast: Forecast) -> str:
    """The table and the summary line as HTML."""
    return (html_table(forecast_rows(forecast), FORECAST_HEADERS, css="sk-roles")
            + f'<p class="sk-note">{html.escape(forecast_summary(forecast))}</p>')


def plan_html(title: str, tasks: Sequence[str], forecast: Forecast) -> str:
    """A plan's sub-tasks, numbered, and its forecast: how a ``Plan`` shows itself."""
    items = "".join(f"<li>{html.escape(task)}</li>" for task in tasks)
    return (f'<div class="swarmkit">{STYLE}<p><b>{html.escape(title)}</b></p>'
            f"<ol>{items}</ol>{forecast_html(forecast)}</div>")
