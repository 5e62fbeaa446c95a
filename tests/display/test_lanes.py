"""The live lanes of a comparison: one compact lane per run (each repeat its own), fed
by real runs, with each run's scores as they land."""

from __future__ import annotations

import html
import json
import re
import threading
from collections.abc import Iterator

import pytest

import swarmkit
from swarmkit import Check
from swarmkit.comparison.runner import ComparisonRunner
from swarmkit.config.swarmconfig import SwarmConfig
from swarmkit.display.flusher import FLUSHER_NAME
from swarmkit.display.lanes import lane_text
from swarmkit.display.tablefmt import format_cost, format_tokens
from swarmkit.display.widget import CompareDashboard
from swarmkit.engine.background import run_blocking
from swarmkit.errors import ConfigError
from swarmkit.testing import FakeReply, FakeRequest, FakeServer, Fault, FaultRule
from swarmkit.testing.synthetic import synthetic_events

KEY = "SWARMKIT_TEST_KEY"


def _flushers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == FLUSHER_NAME]


def _config(workers: int, **options: object) -> SwarmConfig:
    return SwarmConfig().with_options(model="gpt-4.1-mini", workers=workers, **options)


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeServer]:
    monkeypatch.setenv(KEY, "sk-test-lanes-0000")
    with FakeServer() as fake:
        yield fake


def test_each_lane_ends_with_its_own_runs_figures(server: FakeServer) -> None:
    options = [{"workers": 3, "system_prompt": "Be brief"},
               {"workers": 4, "system_prompt": "Be <detailed>"}]
    labels = ["system=@brief", "system=<@detailed>"]
    common = {"model": "gpt-4.1-mini", "base_url": server.base_url, "api_key_env": KEY,
              "cache": False}
    configs = [SwarmConfig().with_options(**common, **o) for o in options]
    view = CompareDashboard(task="Pick a database", labels=labels, configs=configs)
    runs = []
    for i, o in enumerate(options):
        server.plan_tasks = int(o["workers"])  # type: ignore[call-overload]
        if i == 1:  # the second variant loses one worker to a set-up mistake
            server.add_fault(FaultRule(Fault.status(400), step="worker-2"))
        runs.append(swarmkit.run_sync("Pick a database", sinks=[view.sink(i)], **common, **o))
    for thread in _flushers():
        thread.join(10)  # both lanes' final events end the flusher by itself
    assert not view.flushing
    view.close()
    assert not _flushers()
    assert [r.status for r in runs] == ["completed", "partial"]
    lanes = [view.sections["lane-0"].value, view.sections["lane-1"].value]
    assert "workers 3/3 done (3 ok)" in lanes[0]
    assert "workers 4/4 done (3 ok · 1 failed)" in lanes[1]
    for run, lane, state in zip(runs, lanes, view.states, strict=True):
        assert f"tokens {format_tokens(run.usage.prompt_tokens)} in / " \
            f"{format_tokens(run.usage.completion_tokens)} out" in lane
        assert f"cost {format_cost(run.cost_usd)}" in lane and "0 tool calls" in lane
        phase = "done" if run.status == "completed" else "done (partial)"
        assert f">{phase}</b>" in lane
        assert lane_text("x", state).startswith(f"x · {phase} · ")
    assert "system=&lt;@detailed&gt;" in lanes[1] and "<@detailed>" not in lanes[1]
    header = view.sections["header"].value
    assert "2 variants" in header and ">done</b>" in header
    assert view.cancel_button.disabled and view.stop_button.disabled


def shown(lane: str) -> str:
    """A lane's HTML as the page shows its text (tags dropped, entities read)."""
    return html.unescape(re.sub(r"<[^>]+>", "", lane))


def _judged(request: FakeRequest) -> FakeReply | None:
    """The reducer answers by its prompt; the judge gives 9 to the brief answer, 4 else."""
    if request.step == "reducer":
        brief = "Be brief" in json.dumps(request.body)
        return FakeReply(content="Paris." if brief else "It is Paris, the capital of France.")
    if request.step.startswith("judge-"):
        score = 9 if "Paris." in request.last_user_message and "It is" not in \
            request.last_user_message else 4
        return FakeReply(content=json.dumps({"score": score, "reason": "graded"}))
    return None


def test_every_repeat_has_a_lane_and_each_lane_shows_its_scores_as_they_land(
    server: FakeServer,
) -> None:
    server.handler = _judged
    common = {"model": "gpt-4.1-mini", "base_url": server.base_url, "api_key_env": KEY,
              "cache": False, "history": False, "workers": 2, "repeat": 2,
              "judge": "gpt-4.1-mini"}
    variants = [{"reducer_prompt": "Be brief."}, {"reducer_prompt": "Be thorough."}]
    configs = [SwarmConfig().with_options(**common, **v) for v in variants]
    labels = [f"{name} · repeat {r + 1} of 2" for name in ("brief", "thorough")
              for r in range(2)]
    view = CompareDashboard(task="Name the capital", labels=labels, variants=2,
                            configs=[c.for_repeat(r) for c in configs for r in range(2)])

    async def compare() -> swarmkit.Comparison:
        runner = await ComparisonRunner.create(
            variants, sinks_for=lambda i, _variant: [view.sink(i)],
            checks=[Check.contains("Paris"), Check.max_length(10)], **common)
        return await runner.execute("Name the capital")

    comparison = run_blocking(compare)
    for thread in _flushers():
        thread.join(10)
    view.close()
    assert [len(group) for group in comparison.repeats] == [2, 2]
    lanes = [view.sections[f"lane-{i}"].value for i in range(4)]
    # Each run fed its own lane: its own scores, in the order they landed (escaped).
    brief = "scores: contains('Paris') 1.00 · max_length(10) 1.00 · judge 0.90"
    thorough = "scores: contains('Paris') 1.00 · max_length(10) 0.00 · judge 0.40"
    assert all(brief in shown(lane) for lane in lanes[:2])
    assert all(thorough in shown(lane) for lane in lanes[2:])
    assert "<b>" not in brief and "contains(&#x27;Paris&#x27;)" in lanes[0]  # escaped
    assert "thorough · repeat 2 of 2" in lanes[3]
    assert lane_text("x", view.states[3]).endswith(
        f" · {thorough}")
    header = view.sections["header"].value
    assert "2 variants · 4 runs" in header and ">done</b>" in header
    # The repeats were runs of their own at the server (their own seeds): no lane is a
    # copy of another's.
    assert len({run.run_id for group in comparison.repeats for run in group}) == 4


def test_the_flusher_lives_until_every_lane_has_finished() -> None:
    first, second = synthetic_events(3, tool_every=2), synthetic_events(5, fail_every=2)
    view = CompareDashboard(task="t", labels=["a", "b"], configs=[_config(3), _config(5)],
                            max_rate=50)
    for event in first:
        view.sink(0).on_event(event)
    for event in second[:8]:
        view.sink(1).on_event(event)
    view.flush()
    assert view.flushing  # lane b has not finished
    assert "1 of 2 finished" in view.sections["header"].value
    assert "1 tool call" in view.sections["lane-0"].value
    for event in second[8:]:
        view.sink(1).on_event(event)
    for thread in _flushers():
        thread.join(10)
    assert not view.flushing
    assert "workers 5/5 done (3 ok · 2 failed)" in view.sections["lane-1"].value
    view.close()


def test_one_cancel_for_the_whole_comparison() -> None:
    calls: list[str] = []
    view = CompareDashboard(task="t", labels=["a", "b"], configs=[_config(4), _config(4)],
                            on_cancel=lambda: calls.append("cancel"))
    for i in (0, 1):
        for event in synthetic_events(4)[:8]:
            view.sink(i).on_event(event)
    view.cancel_button.click()
    view.cancel_button.click()
    assert calls == ["cancel"]
    assert all("cancelling…" in view.sections[f"lane-{i}"].value for i in (0, 1))
    assert "cancelling…" in view.sections["header"].value
    view.close()
    assert not view.flushing and not _flushers()


def test_labels_and_configs_must_pair_up() -> None:
    with pytest.raises(ConfigError, match="one label per config"):
        CompareDashboard(task="t", labels=["a"], configs=[_config(2), _config(2)])


def test_the_widget_shows_one_stable_plain_text_line_without_a_frontend() -> None:
    with CompareDashboard(task="t", labels=["a"], configs=[_config(2)]) as view:
        text = view.widget._repr_mimebundle_()["text/plain"]
    assert text == "<swarmkit dashboard: the live view needs a Jupyter widget frontend>"
