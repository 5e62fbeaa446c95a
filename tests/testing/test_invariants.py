"""``swarmkit.testing.run_problems``: silent on sound runs, specific on broken ones."""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal
from pathlib import Path

import pytest

import swarmkit
from swarmkit.api.result import Run
from swarmkit.testing import FakeServer, run_problems
from tests.support.fakekey import run_options

pytestmark = pytest.mark.usefixtures("fake_key")


def _runs(tmp_path: Path) -> tuple[Run, Run]:
    with FakeServer(plan_tasks=3) as server:
        options = run_options(server, cache=True, history_path=str(tmp_path / "h.db"))
        live = swarmkit.run_sync("task", **options)
        cached = swarmkit.run_sync("task", **options)

    return live, cached


def test_sound_runs_live_or_cached_have_no_problems(tmp_path: Path) -> None:
    live, cached = _runs(tmp_path)
    assert {c.source for c in cached.calls} == {"cache"}
    assert run_problems(live) == [] and run_problems(cached) == []


def test_each_kind_of_damage_is_named(tmp_path: Path) -> None:
    run, _ = _runs(tmp_path)
    run.workers = run.workers[1:]  # a worker row lost
    run.workers[0] = replace(run.workers[0], cost_usd=Decimal(1))  # a total that does not add
    run.workers[1] = replace(run.workers[1], status="failed", error="line one\n<b>two</b>")
    run.reduced = [1, 2, 3]
    run.answer = None
    problems = run_problems(run)
    assert "3 planned workers but worker rows [2, 3]" in problems
    assert "worker 2 cost 1 is not the sum of its calls" in problems
    assert any(p.startswith("worker 3 is failed with unreadable error") for p in problems)
    assert "run is completed without an answer" in problems
    assert "reducer got workers [1, 2, 3], completed were [2]" in problems
