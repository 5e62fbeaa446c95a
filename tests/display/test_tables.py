"""The static output of a Run: MIME bundle, escaping, unknown cost, provenance, determinism."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

import swarmkit
from swarmkit.api.result import Run
from swarmkit.display.tables import RunTables
from swarmkit.testing import FakeServer
from swarmkit.testing.synthetic import synthetic_run


def test_bundle_has_html_and_plain_text_and_provenance_metadata() -> None:
    run = synthetic_run(6, tool_every=3, retry_every=2)
    data, metadata = run.tables().mime_bundle()
    assert set(data) == {"text/html", "text/plain"}
    assert data["text/plain"] == run.tables().text()
    meta = metadata["swarmkit"]
    assert meta["version"] == swarmkit.__version__
    assert meta["run_id"] == run.run_id
    assert meta["models"] == {"planner": "gpt-4.1-mini", "worker": "gpt-4.1-mini",
                              "reducer": "gpt-4.1-mini"}
    assert meta["parameters"]["max_workers"] == 6
    assert meta["cost_usd"] == str(run.cost_usd)
    assert meta["usage"]["prompt_tokens"] == str(run.usage.prompt_tokens)
    json.dumps(metadata)  # it must survive into a notebook's output metadata


def test_html_holds_answer_tables_totals_and_timeline() -> None:
    run = synthetic_run(6, tool_every=3)
    page = run.tables().html()
    assert "<h4>Answer</h4>" in page and "<b>Qdrant</b>" in page  # Markdown, not raw text
    assert "<p><b>workers (6)</b></p>" in page
    assert "<p><b>tool calls (2)</b></p>" in page and "lookup" in page
    assert run.tables().totals().split(" · ")[0] in page
    assert page.count("<svg") == 1 and 'class="swarmkit-timeline"' in page


def test_tool_table_only_when_there_were_tool_calls() -> None:
    run = synthetic_run(4)
    assert "tool calls" not in run.tables().html()
    assert "tool calls" not in run.tables().text()


def test_rendering_is_deterministic_and_survives_json_round_trip() -> None:
    run = synthetic_run(20, tool_every=3, retry_every=4, fail_every=9, cached_every=5)
    data, metadata = run.tables().mime_bundle()
    again = run.tables().mime_bundle()
    restored = Run.from_json(run.to_json()).tables().mime_bundle()
    assert again == (data, metadata) == restored
    assert json.dumps(restored[1], sort_keys=True) == json.dumps(metadata, sort_keys=True)


def test_task_answer_and_errors_are_escaped() -> None:
    run = synthetic_run(3, fail_every=3, tool_every=2)
    run.task = "Explain <script>alert('task')</script>"
    run.answer = "Use <script>alert('answer')</script> **carefully**"
    run.error = "<img src=x onerror=alert(1)>"
    run.workers = [replace(w, task="<b onclick=x>sub</b>") for w in run.workers]
    page = run.tables().html()
    assert "<script>" not in page and "<img" not in page and "<b onclick" not in page
    assert "&lt;script&gt;alert(&#x27;task&#x27;)" in page
    assert "&lt;script&gt;alert(&#x27;answer&#x27;)&lt;/script&gt; <b>carefully</b>" in page


def test_unknown_cost_shows_unknown_never_zero() -> None:
    run = synthetic_run(3, unknown_cost=True)
    assert run.cost_usd is None
    data, metadata = run.tables().mime_bundle()
    assert "cost unknown" in data["text/plain"]
    assert "cost unknown" in data["text/html"]
    assert metadata["swarmkit"]["cost_usd"] == "unknown"
    rows = RunTables(run).worker_rows()
    assert all(row[8] == "unknown" for row in rows)


def test_metadata_holds_key_variable_names_not_key_values(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-secret-value-123")
    data, metadata = synthetic_run(2).tables().mime_bundle()
    dumped = json.dumps(metadata) + data["text/html"] + data["text/plain"]
    assert "sk-test-secret-value-123" not in dumped
    assert metadata["swarmkit"]["parameters"]["worker"]["api_key_env"] == ["OPENAI_API_KEY"]


def _worker_table(page: str) -> str:
    """The worker table of a rendered page."""
    return page.split('class="sk-table sk-workers"', 1)[1].split("</table>", 1)[0]


def test_many_workers_scroll_inside_the_output() -> None:
    page = synthetic_run(50, concurrency=20).tables().html()
    assert '<div class="sk-scroll" style="max-height:420px;overflow:auto">' in page
    assert _worker_table(page).count("<tr") == 51  # up to DISPLAY_ROWS, every worker


def test_a_long_run_displays_the_first_last_and_unfinished_workers_and_keeps_them_all() -> None:
    run = synthetic_run(100, fail_every=30)  # workers 30, 60 and 90 fail
    tables = run.tables()
    text = tables.text()
    shown = [line.split()[0] for line in text.splitlines()
             if line[:1].isdigit() or line.startswith("…")]
    expected = [*map(str, range(1, 21)), "…", "30", "…", "60", "…", "90", "…",
                *map(str, range(96, 101))]
    assert shown == expected
    assert "(9 more)" in text and "(29 more)" in text and "(5 more)" in text
    assert "workers: 28 of 100 shown" in text and "worker_table() has them all" in text
    page = tables.html()
    assert "workers: 28 of 100 shown" in page and _worker_table(page).count("<tr") == 1 + 28 + 4
    assert _worker_table(page).count("<details>") == 28  # every shown row opens, no more
    full = tables.worker_table()  # asked for by name: every row
    assert len(full.splitlines()) == 2 + 100 and "…" not in full


def test_displayed_rows_caps_the_notable_ones_too() -> None:
    from swarmkit.display.tables import DISPLAY_ROWS, displayed_rows

    assert displayed_rows(DISPLAY_ROWS, [3]) is None
    many = displayed_rows(1000, list(range(0, 1000, 2)))
    assert many is not None and len(many) == DISPLAY_ROWS and many == sorted(set(many))
    assert many[:20] == list(range(20)) and many[-5:] == list(range(995, 1000))


def test_a_run_of_many_tool_calls_displays_the_failed_ones() -> None:
    run = synthetic_run(8, tool_every=1)
    calls = [replace(t, error="ValueError: bad input") if i == 40 else t
             for i, t in enumerate(run.tool_calls * 10)]
    text = replace(run, tool_calls=calls).tables().text()
    assert "tool calls: 26 of 80 shown" in text and "tool_table() has them all" in text
    assert "ValueError: bad input" in text


# what the issue-15 display shows: reasons, spend by role, drill-down, alignment ---------

def _failing_run() -> Run:
    run = synthetic_run(8, fail_every=4, tool_every=3, retry_every=3)
    workers = list(run.workers)
    workers[5] = replace(workers[5], status="skipped", reason="budget", started=None,
                         error="BudgetExceeded: raise the budget")
    run.workers = workers
    return run


def test_a_failed_worker_says_why_on_its_row_and_in_the_text() -> None:
    run = _failing_run()
    page = run.tables().html()
    failed = _worker_table(page).split('<tr class="sk-failed">')[1].split("</tr>")[0]
    assert "failed (provider)" in failed and "sk-st-failed" in failed
    assert "ProviderError: HTTP 500 after retries — the server failed" in failed
    assert '<tr class="sk-skipped">' in page and '<tr class="sk-completed">' in page
    text = run.tables().text()
    assert "why workers did not complete" in text
    assert ("worker 4 · failed (provider): ProviderError: HTTP 500 after retries — the "
            "server failed: try again later or lower the concurrency") in text
    assert "worker 6 · skipped (budget): BudgetExceeded: raise the budget — raise the budget"\
        in text
    assert max(len(line) for line in text.splitlines()) < 240  # still a readable text view


def test_a_setup_mistake_gets_a_setup_hint() -> None:
    from swarmkit.display.failures import failure_of

    run = synthetic_run(2, fail_every=2)
    worker = run.workers[1]
    assert "set-up mistake" in failure_of(worker, 404).hint  # type: ignore[union-attr]
    assert "API key" in failure_of(worker, 401).hint  # type: ignore[union-attr]
    assert "rate limited" in failure_of(worker, 429).hint  # type: ignore[union-attr]
    assert failure_of(run.workers[0]) is None


def test_spend_by_role_adds_up_to_the_totals_line() -> None:
    run = synthetic_run(7, tool_every=2, retry_every=3)
    tables = run.tables()
    rows = tables.role_rows()
    assert [r[0] for r in rows] == ["planner", "workers", "reducer", "total"]

    def number(cell: str) -> float:
        return float(cell.replace(",", "").lstrip("$"))

    for column in (1, 2, 3, 4, 5, 6):
        assert sum(number(str(r[column])) for r in rows[:-1]) == pytest.approx(
            number(str(rows[-1][column])))
    total = rows[-1]
    assert f"tokens {total[4]} in / {total[5]} out · cost {total[6]}" in tables.totals()
    assert total[1] == len(run.calls)
    # the worker rows add up to the workers' role row
    worker_in = sum(number(r[6]) for r in tables.worker_rows())
    assert worker_in == number(rows[1][4])
    assert "by role" in tables.text() and 'class="sk-table sk-roles"' in tables.html()


def test_attempts_and_retries_agree_on_every_row() -> None:
    run = synthetic_run(12, retry_every=3, tool_every=4, fail_every=5)
    rows = run.tables().worker_rows()
    for row, worker in zip(rows, run.workers, strict=True):
        assert row[4] == worker.attempts and row[5] == worker.attempts - worker.calls
    worker_retries = [r for r in run.retries if r.step.startswith("worker-")]
    assert sum(row[5] for row in rows) == len(worker_retries)
    assert run.tables().role_rows()[1][3] == len(worker_retries)


def test_hostile_outputs_stay_escaped_inside_the_drill_down() -> None:
    run = synthetic_run(3, tool_every=1)
    hostile = '</pre></details></td><script>alert(1)</script><img src=x onerror=alert(2)>'
    run.workers = [replace(w, output=hostile, task=f"{w.task} </summary>{hostile}")
                   for w in run.workers]
    run.tool_calls = [replace(t, arguments=hostile, result=hostile) for t in run.tool_calls]
    run.plan_raw = hostile
    page = run.tables().html()
    assert "<script>" not in page and "<img" not in page
    assert page.count("<details") == page.count("</details>") == 3 + 2  # workers, plan, reducer
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_a_row_opens_on_the_sub_task_messages_tool_calls_and_output() -> None:
    from swarmkit.engine.worker import worker_messages

    run = synthetic_run(3, tool_every=3)
    page = run.tables().html()
    third = _worker_table(page).split("<tr")[4]
    sent = worker_messages(run.config["system_prompt"], run.task, 3, run.workers[2].task, 3)
    assert f'<summary title="{html_escape(run.workers[2].task)}">' in third
    assert html_escape(sent[1]["content"]) in third
    assert "lookup({&quot;id&quot;: 3})" in third and "Findings of worker 3." in third
    assert "planner&#x27;s raw reply" in page and "reducer&#x27;s input (3 workers)" in page
    assert html_escape("Worker 2 (sub-task: Sub-task 2") in page  # what the reducer got


def test_a_long_output_is_cut_with_a_marker_that_says_where_it_all_is() -> None:
    from swarmkit.display.drilldown import MAX_OUTPUT_CHARS

    run = synthetic_run(60)
    run.workers = [replace(w, output="word " * 20_000) for w in run.workers]
    page = run.tables().html()
    assert f"[cut: {100_000 - MAX_OUTPUT_CHARS:,} more characters; run.worker(1).output " \
        "has the whole text]" in page
    assert len(page) < 60 * (MAX_OUTPUT_CHARS + 4_000) + 40_000


def test_text_columns_are_left_aligned_and_numbers_right_aligned() -> None:
    from swarmkit.display.theme import STYLE

    page = synthetic_run(3).tables().html()
    assert "table.sk-table td{text-align:left" in STYLE.replace(
        ".swarmkit table.sk-table th,.swarmkit ", "")
    assert ".sk-num{text-align:right" in STYLE
    first = _worker_table(page).split("<tr")[2]
    assert first.startswith(' class="sk-completed"><td class="sk-num">1</td>'
                            '<td class="sk-st-completed">completed</td><td class="sk-task">')
    assert 'class="sk-scroll"' in page  # the table scrolls sideways in its own box


def html_escape(text: str) -> str:
    import html

    return html.escape(text, quote=True)


def test_an_error_that_carries_its_own_advice_gets_no_second_hint() -> None:
    from dataclasses import replace

    from swarmkit.display.failures import failure_of

    worker = replace(synthetic_run(2, fail_every=2).workers[1],
                     error="HTTP 502 from host (gave up after 6 attempts); the server may be "
                           "down or overloaded; try again later")
    failure = failure_of(worker, 502)
    assert failure is not None and failure.hint == ""
    assert failure.line.count("try again later") == 1


def test_a_run_with_no_failure_has_no_why_column() -> None:
    page = synthetic_run(3).tables().html()
    assert "<th>why</th>" not in _worker_table(page)
    assert "<th>why</th>" in _worker_table(_failing_run().tables().html())


def test_a_worker_stopped_early_says_the_reducer_merged_the_rest() -> None:
    from dataclasses import replace

    from swarmkit.display.failures import failure_of

    worker = replace(synthetic_run(1).workers[0], status="cancelled", reason="stopped",
                     error=None)
    failure = failure_of(worker)
    assert failure is not None and "the finished workers were merged" in failure.line


def test_a_typed_run_has_one_column_per_schema_field_within_the_row_cut() -> None:
    from swarmkit.config.outputschema import canonical_schema

    run = synthetic_run(100, fail_every=30)
    schema = canonical_schema({"type": "object", "properties": {
        "label": {"type": "string"}, "tags": {"type": "array"}}})
    workers = [replace(w, data={"label": f"w{w.index} | x", "tags": ["a", "b"]})
               if w.status == "completed" else w for w in run.workers]
    typed = Run.of(replace(run, config={**run.config, "output_schema": schema},
                           workers=workers))
    tables = typed.tables()
    text = tables.text()
    header = next(line for line in text.splitlines() if line.startswith("worker "))
    assert header.split()[-2:] == ["label", "tags"]
    row = next(line for line in text.splitlines() if line.startswith("1 "))
    assert row.rstrip().endswith('w1 | x    ["a", "b"]')
    failed = next(line for line in text.splitlines() if line.startswith("30 "))
    assert failed.split()[-1] != '["a", "b"]'  # no data: empty field cells
    assert "workers: 28 of 100 shown" in text  # the same cut as an untyped run
    page = tables.html()
    assert "<th>label</th><th>tags</th>" in _worker_table(page).replace("\n", "")
    assert _worker_table(page).count("<tr") == 1 + 28 + 4
    # An untyped run's tables are unchanged by the feature.
    assert run.tables().text() == RunTables(run).text() and "label" not in run.tables().text()


def test_a_run_served_from_the_cache_made_no_attempts_and_no_retries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SWARMKIT_TEST_KEY", "sk-test-cache-0000")
    with FakeServer(plan_tasks=2) as server:
        options = {"model": "gpt-4.1-mini", "base_url": server.base_url,
                   "api_key_env": "SWARMKIT_TEST_KEY", "cache": True,
                   "history_path": str(tmp_path / "history.db")}
        swarmkit.run_sync("Name two lakes", **options)
        again = swarmkit.run_sync("Name two lakes", **options)
    assert all(call.source == "cache" for call in again.calls)
    rows = again.tables().role_rows()
    assert [(r[0], r[1], r[2], r[3]) for r in rows] == [
        ("planner", 1, 0, 0), ("workers", 2, 0, 0), ("reducer", 1, 0, 0), ("total", 4, 0, 0)]


def test_a_worker_mixing_a_cached_call_and_a_retried_one_counts_its_retries() -> None:
    # worker-2's live call took two attempts; give it a second call served from the cache
    # (no attempt): attempts - calls would say 0 retries, the call says 1.
    run = synthetic_run(3, retry_every=2)
    live = next(c for c in run.calls if c.step == "worker-2")
    assert live.attempts == 2
    cached = replace(live, source="cache", attempts=0, started=live.started + live.latency)
    run.calls = [*run.calls, cached]
    run.workers = [replace(w, calls=w.calls + 1, cached_calls=1) if w.index == 2 else w
                   for w in run.workers]
    rows = run.tables().worker_rows()
    assert [(row[0], row[3], row[4], row[5]) for row in rows] == [
        (1, "1", 1, 0), (2, "2 (1 cached)", 2, 1), (3, "1", 1, 0)]
    assert run.tables().role_rows()[1][3] == 1
