"""The live dashboard with real ipywidgets (headless): bounded pushes, final state, cancel."""

from __future__ import annotations

import threading
import time
from collections import Counter
from decimal import Decimal

import pytest

from swarmkit.config.swarmconfig import SwarmConfig
from swarmkit.display.livestate import MAX_ROWS, SECTIONS
from swarmkit.display.widget import Dashboard
from swarmkit.errors import ConfigError
from swarmkit.record.events import ReducerDelta, RunStarted
from swarmkit.testing.synthetic import synthetic_events

FLUSHER = "swarmkit-dashboard-flusher"


def _config(workers: int = 8, **options: object) -> SwarmConfig:
    return SwarmConfig().with_options(model="gpt-4.1-mini", workers=workers, **options)


def _count_value_changes(dashboard: Dashboard) -> Counter[str]:
    """Every trait change of a section's value is one state message to the frontend."""
    changes: Counter[str] = Counter()
    for name, section in dashboard.sections.items():
        section.observe(lambda _change, name=name: changes.update([name]), names="value")
    return changes


def _flusher_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == FLUSHER]


def test_500_workers_send_a_bounded_number_of_widget_updates() -> None:
    events = synthetic_events(500, concurrency=50, retry_every=7, tool_every=5, fail_every=50,
                              cached_every=11, budget_usd="5")
    assert len(events) > 3000
    max_rate = 10.0
    dashboard = Dashboard(task="compare", config=_config(500, concurrency=50, budget="5"),
                          max_rate=max_rate)
    changes = _count_value_changes(dashboard)
    started = time.monotonic()
    for n, event in enumerate(events):  # spread the stream over about a second
        dashboard.on_event(event)
        if n % 100 == 0:
            time.sleep(0.03)
    dashboard.close()
    elapsed = time.monotonic() - started
    # one push at most per 1/max_rate seconds, plus the first one and close()'s final one
    assert 1 <= dashboard.updates_sent <= elapsed * max_rate + 2
    assert sum(changes.values()) <= dashboard.updates_sent * len(SECTIONS)
    assert sum(changes.values()) < len(events) / 10  # far fewer messages than events
    workers = dashboard.sections["workers"].value
    assert "<b>500 workers</b>: 490 completed · 10 failed (provider)" in workers
    assert workers.count("<tr") == MAX_ROWS + 1  # header row + at most MAX_ROWS workers
    header = dashboard.sections["header"].value
    assert "done" in header and "concurrency 25 (429)" in header
    assert "tool calls: 90" in dashboard.sections["tools"].value  # 100 minus 10 that failed first
    assert "cap $5.0000" in dashboard.sections["budget"].value
    assert "<b>Qdrant</b>" not in dashboard.sections["reducer"].value  # escaped, not rendered
    assert "**Qdrant**" in dashboard.sections["reducer"].value


def test_flusher_pushes_live_while_the_run_goes_on_and_exits_after_the_last_event() -> None:
    events = synthetic_events(6, retry_every=2)
    dashboard = Dashboard(task="t", config=_config(6), max_rate=50)
    pushed = threading.Event()
    dashboard.sections["plan"].observe(lambda _change: pushed.set(), names="value")
    for event in events[:5]:
        dashboard.on_event(event)
    assert pushed.wait(10)  # the plan reached the widget with no close() or flush() call
    assert dashboard.flushing
    for event in events[5:]:
        dashboard.on_event(event)
    for thread in _flusher_threads():
        thread.join(10)  # RunFinished ends the flusher by itself
    assert not dashboard.flushing
    assert "done" in dashboard.sections["header"].value
    assert dashboard.cancel_button.disabled
    dashboard.close()


def test_nothing_changed_means_nothing_is_pushed() -> None:
    dashboard = Dashboard(task="t", config=_config())
    changes = _count_value_changes(dashboard)
    assert dashboard.flush() is False
    dashboard.on_event(RunStarted("r1", "t", _config().summary(), "2026-01-01T00:00:00"))
    dashboard.close()
    pushed = dashboard.updates_sent
    assert pushed >= 1 and changes["header"] >= 1
    assert dashboard.flush() is False and dashboard.updates_sent == pushed


def test_close_stops_the_flusher_and_disables_cancel() -> None:
    cancelled: list[bool] = []
    dashboard = Dashboard(task="t", config=_config(), on_cancel=lambda: cancelled.append(True),
                          max_rate=0.5)  # a slow rate keeps the flusher waiting
    events = synthetic_events(8)
    for event in events[:10]:
        dashboard.on_event(event)
    dashboard.on_event(events[10])
    assert dashboard.flushing
    dashboard.close()
    assert not dashboard.flushing and not _flusher_threads()
    assert dashboard.cancel_button.disabled
    before = dashboard.updates_sent
    for event in events[11:]:
        dashboard.on_event(event)  # late events change state but start no thread
    assert not dashboard.flushing and dashboard.updates_sent == before
    dashboard.close()  # idempotent
    assert not cancelled


def test_cancel_button_calls_on_cancel_once_and_shows_cancelling() -> None:
    calls: list[str] = []
    dashboard = Dashboard(task="t", config=_config(), on_cancel=lambda: calls.append("x"))
    for event in synthetic_events(8)[:12]:
        dashboard.on_event(event)
    assert not dashboard.cancel_button.disabled
    dashboard.cancel_button.click()
    dashboard.cancel_button.click()
    assert calls == ["x"]
    assert dashboard.cancel_button.disabled
    assert dashboard.cancel_button.description == "Cancelling…"
    assert "cancelling…" in dashboard.sections["header"].value
    dashboard.close()


def test_without_on_cancel_the_button_is_disabled_and_says_why() -> None:
    dashboard = Dashboard(task="t", config=_config())
    assert dashboard.cancel_button.disabled
    assert "--background" in dashboard.cancel_button.tooltip
    dashboard.cancel_button.click()  # a disabled button's click does nothing
    dashboard.close()


def test_plan_appears_and_reducer_text_streams_in() -> None:
    events = synthetic_events(4)
    dashboard = Dashboard(task="t", config=_config(4))
    plan_at = next(i for i, e in enumerate(events) if e.kind == "plan_ready")
    for event in events[: plan_at + 1]:
        dashboard.on_event(event)
    dashboard.flush()
    assert "plan: 4 sub-tasks" in dashboard.sections["plan"].value
    assert "Sub-task 4" in dashboard.sections["plan"].value
    first_delta = next(i for i, e in enumerate(events) if isinstance(e, ReducerDelta))
    for event in events[plan_at + 1 : first_delta + 2]:
        dashboard.on_event(event)
    dashboard.flush()
    partial = dashboard.sections["reducer"].value
    assert "reducing" in dashboard.sections["header"].value
    assert "## Answer" in partial and "pgvector" not in partial
    for event in events[first_delta + 2 :]:
        dashboard.on_event(event)
    dashboard.close()
    assert "pgvector" in dashboard.sections["reducer"].value


def test_budget_without_a_cap_shows_only_spent() -> None:
    dashboard = Dashboard(task="t", config=_config(3))
    for event in synthetic_events(3):
        dashboard.on_event(event)
    dashboard.close()
    budget = dashboard.sections["budget"].value
    assert "no budget cap" in budget and "cap $" not in budget


def test_task_text_is_escaped() -> None:
    task = "<script>alert(1)</script>"
    dashboard = Dashboard(task=task, config=_config(2))
    for event in synthetic_events(2, task=task):
        dashboard.on_event(event)
    dashboard.close()
    assert "<script>" not in "".join(s.value for s in dashboard.sections.values())
    assert "&lt;script&gt;" in dashboard.sections["header"].value


def test_unknown_cost_is_shown_as_unknown() -> None:
    dashboard = Dashboard(task="t", config=_config(2))
    for event in synthetic_events(2, unknown_cost=True):
        dashboard.on_event(event)
    dashboard.close()
    assert "cost unknown" in dashboard.sections["header"].value


def test_max_rate_must_be_positive() -> None:
    with pytest.raises(ConfigError, match="max_rate"):
        Dashboard(task="t", config=_config(), max_rate=0)


def test_budget_bar_shares() -> None:
    dashboard = Dashboard(task="t", config=_config(2, budget="1"))
    for event in synthetic_events(2, budget_usd="1"):
        dashboard.on_event(event)
    dashboard.close()
    budget = dashboard.sections["budget"].value
    assert "reserved $0.001000" in budget and "cap $1.0000" in budget
    assert Decimal("0") < Decimal(budget.split("spent $")[1].split(" ")[0])


def test_a_real_swarm_against_fake_server_ends_with_the_runs_figures(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import swarmkit
    from swarmkit.display.tablefmt import format_cost, format_tokens
    from swarmkit.testing import FakeServer

    monkeypatch.setenv("SWARMKIT_TEST_KEY", "sk-test-dashboard-0000")
    with FakeServer(plan_tasks=100, latency=0.01) as server:
        options = {"model": "gpt-4.1-mini", "base_url": server.base_url,
                   "api_key_env": "SWARMKIT_TEST_KEY", "workers": 100, "concurrency": 20}
        dashboard = Dashboard(task="big task", config=SwarmConfig().with_options(**options))
        changes = _count_value_changes(dashboard)
        run = swarmkit.run_sync("big task", sinks=[dashboard], **options)
        dashboard.close()
    assert run.status == "completed" and len(run.workers) == 100
    header = dashboard.sections["header"].value
    assert f"{len(run.calls)} calls" in header
    assert f"tokens {format_tokens(run.usage.prompt_tokens)} in" in header
    assert f"cost {format_cost(run.cost_usd)}" in header and "done" in header
    assert "<b>100 workers</b>: 100 completed" in dashboard.sections["workers"].value
    assert "sk-test-dashboard-0000" not in "".join(s.value for s in dashboard.sections.values())
    assert sum(changes.values()) <= dashboard.updates_sent * len(SECTIONS)


def test_the_widget_shows_one_stable_plain_text_line_without_a_frontend() -> None:
    dashboard = Dashboard(task="<task>", config=_config())
    data = dashboard.widget._repr_mimebundle_()
    assert data["text/plain"] == (
        "<swarmkit dashboard: the live view needs a Jupyter widget frontend>")
    assert "application/vnd.jupyter.widget-view+json" in data
    dashboard.close()
