"""Variants side by side: figures, plans shown once or marked, answers diffed word by word."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import pytest

import swarmkit
from swarmkit.api.result import Run
from swarmkit.comparison.figures import (
    LATENCY_NOTE,
    ComparisonTable,
    comparison_rows,
    live_latencies,
    percentile,
)
from swarmkit.comparison.view import MAX_ANSWER_CHARS, ComparisonView
from swarmkit.display.tablefmt import format_cost, format_tokens
from swarmkit.display.worddiff import marked_text, word_diff
from swarmkit.errors import ConfigError
from swarmkit.testing import FakeReply, FakeRequest, FakeServer, Fault, FaultRule
from swarmkit.testing.synthetic import synthetic_run

KEY = "SWARMKIT_TEST_KEY"


def _styled(request: FakeRequest) -> FakeReply | None:
    """Workers answer in the style their system prompt names (its last word); the
    reducer's answer names the style of the outputs it merged."""
    if request.role == "worker":
        style = str(request.messages[0]["content"]).split()[-1]
        return FakeReply(content=f"A {style} result.")
    if request.role == "reducer":
        text = request.last_user_message
        style = "brief" if "A brief result" in text else "detailed"
        return FakeReply(content=f"The team should pick Qdrant, in a {style} summary "
                                 "<b>now</b>.")
    return None


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeServer]:
    monkeypatch.setenv(KEY, "sk-test-compare-0000")
    with FakeServer(_styled) as fake:
        yield fake


def _run(server: FakeServer, system: str, workers: int = 4, **options: object) -> Run:
    server.plan_tasks = workers
    return swarmkit.run_sync("Pick a vector database", model="gpt-4.1-mini",
                             base_url=server.base_url, api_key_env=KEY, workers=workers,
                             system_prompt=system, cache=False, **options)


def test_answers_are_diffed_on_the_words_that_differ(server: FakeServer) -> None:
    brief = _run(server, "Answer in a style that is brief")
    detailed = _run(server, "Answer in a style that is detailed")
    assert brief.answer != detailed.answer
    view = ComparisonView(["system=@brief", "system=@detailed"], [brief, detailed])
    text = view.text()
    assert "answer of system=@brief (baseline)\nThe team should pick Qdrant, in a brief" in text
    assert "in a [-brief-]{+detailed+} summary <b>now</b>." in text
    page = view.html()
    assert ('in a <del class="sk-del">brief</del><ins class="sk-ins">detailed</ins> '
            "summary &lt;b&gt;now&lt;/b&gt;.") in page
    assert "<b>now</b>" not in page  # model output is escaped
    # identical plans are said once, not once per variant
    assert text.count("Sub-task 1 of") == 1 and "same plan for every variant (4 sub-tasks)" in text
    assert page.count("Sub-task 1 of") == 1 and "same plan for every variant" in page


def test_figures_come_from_each_run(server: FakeServer) -> None:
    a = _run(server, "Be brief", workers=2)
    b = _run(server, "Be detailed", workers=3)
    view = ComparisonView(["a", "b"], [a, b])
    text = view.text()
    for run, label in ((a, "a"), (b, "b")):
        line = next(ln for ln in text.splitlines() if ln.startswith(label + " "))
        assert f"{len(run.workers)} ok" in line
        assert format_tokens(run.usage.prompt_tokens) in line
        assert format_tokens(run.usage.completion_tokens) in line
        assert format_cost(run.cost_usd) in line and f"{run.duration:.2f}s" in line
    # the plans differ: the third sub-task is marked as added in b, in both forms
    assert "plan of b: 1 added, 0 removed vs the baseline" in text
    assert "+ 3. Sub-task 3 of" in text
    assert '<li value="3"><ins class="sk-ins">Sub-task 3 of' in view.html()


def test_a_failed_variant_shows_why_instead_of_an_answer(server: FakeServer) -> None:
    ok = _run(server, "Be brief", workers=2)
    server.add_fault(FaultRule(Fault.status(400), step="worker-*"))
    failed = _run(server, "Be brief", workers=2)
    server.clear_faults()
    assert failed.answer is None and failed.status == "failed"
    view = ComparisonView(["ok", "broken"], [ok, failed])
    text = view.text()
    section = text.split("answer of broken\n", 1)[1]
    assert section.startswith("no answer: failed: no worker finished")
    assert "worker 1 · failed (provider):" in section and "400" in section
    page = view.html()
    assert '<div class="sk-error"><b>answer</b><br>no answer: failed' in page
    assert "2 failed" in text.split("\n\n")[1]  # workers by status in the figures
    row = comparison_rows(["ok", "broken"], [ok, failed])[1]
    assert (row["workers"], row["workers_ok"], row["workers_failed"]) == (2, 0, 2)
    assert row["answer"] is None and row["status"] == "failed"


def test_plan_items_the_variant_lacks_are_struck() -> None:
    base, other = synthetic_run(4), synthetic_run(3)
    view = ComparisonView(["four", "three"], [base, other])
    assert view.plan_rows(1)[-1] == ("-", "", base.plan[3])
    assert "plan of three: 0 added, 1 removed vs the baseline" in view.text()
    assert f'− <del class="sk-del">{base.plan[3].replace("<", "&lt;").replace(">", "&gt;")}' \
        in view.html()


def test_long_answers_and_plans_are_cut_with_a_note() -> None:
    long_answer = "word " * (MAX_ANSWER_CHARS // 2)
    a = synthetic_run(70, answer=long_answer)
    b = synthetic_run(80, answer=long_answer + "tail")
    view = ComparisonView(["a", "b"], [a, b])
    text = view.text()
    assert "runs[0].answer has the whole text" in text
    assert "runs[1].answer has the whole text]" in text and "{+" not in text  # not diffed
    assert "runs[1].plan has them all" in text  # 80 items: cut to the display's rows
    assert "… (" in text
    # every added plan item (71..80) is kept in the cut
    for n in range(71, 81):
        assert f"+ {n}. Sub-task {n}" in text
    assert len(view.html()) < 120_000


def test_the_table_and_the_rows_are_one_source() -> None:
    runs = [synthetic_run(3), synthetic_run(2, unknown_cost=True)]
    rows = comparison_rows(["x", "y"], runs)
    assert rows[0]["cost_usd"] == runs[0].cost_usd and isinstance(rows[0]["cost_usd"], Decimal)
    assert rows[1]["cost_usd"] is None
    assert rows[0]["plan"] == runs[0].plan and rows[0]["duration_s"] == runs[0].duration
    table = ComparisonTable(["x", "y"], runs)
    text = table.text()
    assert text.splitlines()[0].split() == ["variant", "status", "workers", "tokens", "in",
                                            "tokens", "out", "cost", "wall", "time", "p50",
                                            "p95", "answer"]
    assert "unknown" in text.splitlines()[-1] and "3 ok" in text
    page = table.html()
    assert "<th>variant</th>" in page and "## Answer - **Qdrant**" in page
    assert table.mime_bundle()[0]["text/plain"] == text


def test_labels_must_match_runs() -> None:
    with pytest.raises(ConfigError, match="one label per run"):
        ComparisonView(["a"], [synthetic_run(2), synthetic_run(2)])


def test_word_diff_marks_only_words() -> None:
    assert marked_text(word_diff("a b c", "a c")) == "a [-b-] c"
    assert marked_text(word_diff("one two", "one  two three")) == "one  two {+three+}"
    assert marked_text(word_diff("same", "same")) == "same"


def test_a_variant_whose_planner_failed_has_no_plan_to_mark(server: FakeServer) -> None:
    ok = _run(server, "Be brief", workers=2)
    server.add_fault(FaultRule(Fault.status(400), step="planner"))
    unplanned = _run(server, "Be brief", workers=2)
    server.clear_faults()
    assert unplanned.plan == [] and unplanned.status == "failed"
    view = ComparisonView(["ok", "unplanned"], [ok, unplanned])
    text = view.text()
    assert "plan of unplanned: none" in text and "removed vs the baseline" not in text
    assert text.split("answer of unplanned\n", 1)[1].startswith("no answer: failed: ")
    assert "del" not in view.html().split("plan: 0 sub-tasks", 1)[1].split("answer", 1)[0]


# -- wall time and latency ------------------------------------------------------------------


def test_latency_percentiles_are_by_nearest_rank() -> None:
    assert percentile([], 50) is None
    assert percentile([0.5], 50) == percentile([0.5], 95) == 0.5
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.0
    assert percentile([1.0, 2.0, 3.0, 4.0], 95) == 4.0
    assert percentile([float(n) for n in range(1, 21)], 95) == 19.0


def _two_reducers(server: FakeServer) -> swarmkit.Comparison:
    server.plan_tasks = 3
    return swarmkit.compare_sync(
        "Pick a vector database", model="gpt-4.1-mini", base_url=server.base_url,
        api_key_env=KEY, cache=False, history=False,
        variants=[{"reducer_prompt": "One line."}, {"reducer_prompt": "A table."}])


def test_each_variant_shows_its_wall_time_and_the_latency_of_its_live_calls_only(
    server: FakeServer,
) -> None:
    comparison = _two_reducers(server)
    first, second = comparison.runs
    # The second variant was served the planner's and the workers' calls by the first:
    # only its reducer was made live, so its latency is that one call's.
    assert [c.step for c in second.calls if c.source != "cache"] == ["reducer"]
    reducer = next(c for c in second.calls if c.step == "reducer")
    assert live_latencies(second) == [reducer.latency]
    assert live_latencies(first) == sorted(c.latency for c in first.calls)
    rows = comparison.to_dataframe().to_dict("records")
    assert rows[1]["latency_p50_s"] == rows[1]["latency_p95_s"] == reducer.latency
    assert rows[1]["live_calls"] == 1 and rows[0]["live_calls"] == len(first.calls)
    assert rows[0]["latency_p95_s"] == max(c.latency for c in first.calls)
    assert rows[0]["duration_s"] == first.duration
    text = comparison.view().text()
    line = next(ln for ln in text.splitlines() if ln.startswith(comparison.labels[1]))
    assert line.split()[-3:] == [f"{second.duration:.2f}s", f"{reducer.latency:.2f}s",
                                 f"{reducer.latency:.2f}s"]
    assert "wall time" in text and LATENCY_NOTE in text
    page = comparison.view().html()
    assert (f"wall time {second.duration:.2f}s · latency p50 {reducer.latency:.2f}s / "
            f"p95 {reducer.latency:.2f}s (1 live call)") in page
    table = comparison.table().text()
    assert table.splitlines()[0].split()[-4:] == ["time", "p50", "p95", "answer"]
    assert f"{reducer.latency:.2f}s" in table.splitlines()[-1]


def test_a_variant_served_entirely_from_the_cache_shows_no_latency(
    server: FakeServer, tmp_path: Path
) -> None:
    server.plan_tasks = 2
    fresh, again = (swarmkit.run_sync(
        "Pick a vector database", model="gpt-4.1-mini", base_url=server.base_url,
        api_key_env=KEY, workers=2, system_prompt="Be brief", cache=True,
        history_path=str(tmp_path / "history.db")) for _ in range(2))
    assert again.calls and {c.source for c in again.calls} == {"cache"}
    view = ComparisonView(["fresh", "cached"], [fresh, again])
    line = next(ln for ln in view.text().splitlines() if ln.startswith("cached "))
    assert line.split()[-2:] == ["—", "—"]
    assert "latency — (no live call)" in view.html()
    row = comparison_rows(["fresh", "cached"], [fresh, again])[1]
    assert (row["latency_p50_s"], row["latency_p95_s"], row["live_calls"]) == (None, None, 0)


def test_a_replayed_comparison_shows_the_recorded_wall_times_and_latencies(
    server: FakeServer, tmp_path: Path
) -> None:
    from swarmkit.store.recent import recent_recording

    live = _two_reducers(server)
    cassettes = []
    for number, run in enumerate(live.runs, start=1):
        recording = recent_recording(run.run_id)
        assert recording is not None
        cassettes.append(str(recording.save(tmp_path / f"v{number}.swarm.json", {})))
    replayed = swarmkit.compare_sync(
        "Pick a vector database", model="gpt-4.1-mini", api_key_env=KEY, cache=False,
        history=False, replay=cassettes,
        variants=[{"reducer_prompt": "One line."}, {"reducer_prompt": "A table."}])
    assert {c.source for run in replayed.runs for c in run.calls} == {"replay", "cache"}
    assert replayed.view().text() == live.view().text()
    assert replayed.view().html() == live.view().html()
