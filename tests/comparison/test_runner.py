"""Comparisons from Python: ``compare_sync`` runs variants concurrently, under one budget,
making every call two variants share once (counted at the FakeServer)."""

from __future__ import annotations

from decimal import Decimal
from functools import partial
from pathlib import Path
from typing import Any

import pytest

import swarmkit
from swarmkit import Check
from swarmkit.errors import ConfigError
from swarmkit.testing import FakeReply, FakeRequest, FakeServer, Fault
from tests.support.fakekey import QUICK_RETRIES, run_options

pytestmark = pytest.mark.usefixtures("fake_key")

options = partial(run_options, **QUICK_RETRIES, history=False)



def by_model(request: FakeRequest) -> FakeReply | None:
    """Workers answer in their model's words, so the reducers' inputs differ by model."""
    if request.role == "worker":
        return FakeReply(content=f"{request.model} says: {request.last_user_message[-30:]}")
    return None


def test_a_2x2_grid_makes_each_shared_call_once_at_the_server() -> None:
    variants = [{"worker_model": m, "reducer_prompt": p}
                for m in ("gpt-4.1-mini", "gpt-4.1") for p in ("Be brief.", "Be thorough.")]
    with FakeServer(by_model, plan_tasks=3) as server:
        comparison = swarmkit.compare_sync("Compare three databases", variants=variants,
                                           **options(server))
        counts = server.counts_by_step()
    # One planner for all four variants, one set of workers per worker model, and a
    # reducer per variant (each sees different outputs or a different prompt).
    assert counts["planner"] == 1
    assert sum(n for step, n in counts.items() if step.startswith("worker")) == 2 * 3
    assert counts["reducer"] == 4
    assert [run.status for run in comparison.runs] == ["completed"] * 4
    assert comparison.shared_calls == 3 + 2 * 3  # three planners, two sets of workers
    # A served call is cached in the served variant's Run: paid once, $0 there.
    sources = [sorted(c.source for c in run.calls) for run in comparison.runs]
    assert sum(s.count("cache") for s in sources) == comparison.shared_calls
    served = [c for run in comparison.runs for c in run.calls if c.source == "cache"]
    assert served and all(c.cost_usd == 0 and c.attempts == 0 for c in served)
    # Every variant still has its whole plan, workers and answer.
    for run in comparison.runs:
        assert len(run.plan) == 3 and [w.status for w in run.workers] == ["completed"] * 3
        assert run.answer and run.answer.startswith("Final answer merging 3")
    models = {run.workers[0].output.split(" says")[0] for run in comparison.runs}
    assert models == {"gpt-4.1-mini", "gpt-4.1"}
    assert comparison.labels[1] == ("worker_model=gpt-4.1-mini · "
                                    "reducer_prompt=Be thorough.")
    assert comparison["worker_model=gpt-4.1 · reducer_prompt=Be brief."] is comparison.runs[2]


def test_only_the_reducer_prompt_varies_so_planner_and_workers_run_once() -> None:
    with FakeServer(plan_tasks=4) as server:
        comparison = swarmkit.compare_sync(
            "Summarise the report",
            variants=[{"reducer_prompt": "One line."}, {"reducer_prompt": "A table."}],
            **options(server))
        counts = server.counts_by_step()
    assert counts["planner"] == 1 and counts["reducer"] == 2
    assert sum(n for step, n in counts.items() if step.startswith("worker")) == 4
    first, second = comparison.runs
    assert first.run_id != second.run_id
    assert sum(1 for c in second.calls if c.source == "cache") + sum(
        1 for c in first.calls if c.source == "cache") == 5


def test_the_variants_share_one_budget() -> None:
    # Each variant alone fits; together (no call is shared: the models differ) they do
    # not, so the comparison as a whole stays under the cap and some worker is refused.
    cap = Decimal("0.0006")
    with FakeServer(by_model, plan_tasks=4) as server:
        comparison = swarmkit.compare_sync(
            "Compare three databases",
            variants=[{"model": "gpt-4.1-mini"}, {"model": "gpt-4o-mini"}],
            budget=cap, max_tokens=64, **{k: v for k, v in options(server).items()
                                          if k != "model"})
    spent = sum((run.cost_usd or Decimal(0)) for run in comparison.runs)
    assert spent <= cap
    refused = [w for run in comparison.runs for w in run.workers
               if w.status.startswith("skipped") or "budget" in (w.error or "").lower()]
    budget_hit = refused or any("Budget" in (run.error or "") for run in comparison.runs)
    assert budget_hit, [(r.status, r.error, [w.status for w in r.workers])
                        for r in comparison.runs]


def test_a_failed_variant_does_not_fail_the_others() -> None:
    def refuse_gpt41(request: FakeRequest) -> Fault | None:
        if request.model == "gpt-4.1" and request.role == "reducer":
            return Fault.status(400, body="model gpt-4.1 is not available here")
        return None

    with FakeServer(refuse_gpt41, plan_tasks=2) as server:
        comparison = swarmkit.compare_sync(
            "Summarise", variants=[{"reducer_model": "gpt-4.1-mini"},
                                   {"reducer_model": "gpt-4.1"}], **options(server))
    ok, failed = comparison.runs
    assert ok.status == "completed" and ok.answer
    assert failed.status == "failed" and failed.answer is None
    assert [w.status for w in failed.workers] == ["completed", "completed"]  # the workers are kept


def test_two_reducer_prompts_sharing_their_first_words_run_and_read_apart() -> None:
    table, listed = "Merge the findings into a table", "Merge the findings into a list"
    with FakeServer(plan_tasks=2) as server:
        comparison = swarmkit.compare_sync(
            "Summarise", variants=[{"worker_model": "gpt-4.1", "reducer_prompt": table},
                                   {"worker_model": "gpt-4.1", "reducer_prompt": listed}],
            **options(server))
        counts = server.counts_by_step()
    assert counts["reducer"] == 2 and counts["planner"] == 1
    assert comparison.labels == ("worker_model=gpt-4.1 · reducer_prompt=…into a table",
                                 "worker_model=gpt-4.1 · reducer_prompt=…into a list")
    assert comparison["worker_model=gpt-4.1 · reducer_prompt=…into a list"] \
        is comparison.runs[1]
    reducer_prompts = [run.config["reducer_prompt"] for run in comparison.runs]
    assert reducer_prompts == [table, listed]
    assert "answer of worker_model=gpt-4.1 · reducer_prompt=…into a list" in str(comparison)


@pytest.mark.parametrize(("variants", "extra", "says"), [
    ([{"model": "a"}], {}, "at least two variants"),
    ([{"model": str(i)} for i in range(9)], {}, "over the cap of 8"),
    ([{"model": str(i)} for i in range(3)], {"max_variants": 2}, "--max-variants 3"),
    ([{"budget": 1}, {"budget": 2}], {}, "one budget covers every variant"),
    ([{"modle": "a"}, {"modle": "b"}], {}, "--compare modle: no such option"),
    ([{"model": "a"}, {"model": "a"}], {}, "two variants are the same"),
    ([{"workers": 0}, {"workers": 2}], {}, "variant workers=0:"),
])
def test_bad_variants_are_refused_before_any_request(
    variants: list[dict[str, Any]], extra: dict[str, Any], says: str
) -> None:
    with FakeServer() as server:
        with pytest.raises(ConfigError, match=None) as caught:
            swarmkit.compare_sync("task", variants=variants, **options(server), **extra)
        assert server.count() == 0
    assert says in str(caught.value)
    assert len(str(caught.value).splitlines()) == 1


def test_every_variant_is_scored_and_an_identical_judge_call_is_sent_once() -> None:
    with FakeServer(plan_tasks=2) as server:
        comparison = swarmkit.compare_sync(
            "Summarise the report",
            variants=[{"reducer_prompt": "One line."}, {"reducer_prompt": "A table."}],
            checks=[Check.contains("merging")], **options(server, judge="gpt-4.1-mini"))
        counts = server.counts_by_step()
    # Both reducers answer the same text, so both judges ask the same: sent once.
    assert counts["judge-0"] == 1
    for run in comparison.runs:
        assert [(s.name, s.score) for s in run.scores] == [("contains('merging')", 1.0),
                                                           ("judge", 0.8)]


def test_repeats_are_distinct_live_calls_and_a_rerun_is_served_from_the_cache(
    tmp_path: Path,
) -> None:
    variants = [{"reducer_prompt": "One line."}, {"reducer_prompt": "A table."}]
    cached = {"cache": True, "history": True, "history_path": str(tmp_path / "history.db")}
    with FakeServer(plan_tasks=2) as server:
        first = swarmkit.compare_sync("Summarise the report", variants=variants, repeat=3,
                                      **options(server, **cached))
        counts = server.counts_by_step()
        seeds = sorted({r.body.get("seed") for r in server.requests}, key=str)
        sent = server.count()
        again = swarmkit.compare_sync("Summarise the report", variants=variants, repeat=3,
                                      **options(server, **cached))
        resent = server.count() - sent
    # Each repeat plans, works and reduces on its own seed: three of everything, the
    # planner and workers still shared by the two variants within a repeat.
    assert counts["planner"] == 3 and counts["reducer"] == 2 * 3
    assert sum(n for step, n in counts.items() if step.startswith("worker")) == 3 * 2
    assert seeds == [1, 2, None]  # repeat 0 sends no seed: it is the config unchanged
    assert [len(group) for group in first.repeats] == [3, 3]
    assert first.runs == tuple(group[0] for group in first.repeats)
    assert len({run.run_id for group in first.repeats for run in group}) == 6
    assert [run.config["planner"]["seed"] for run in first.repeats[1]] == [None, 1, 2]
    # The same comparison again: every call of every repeat from the cache, none sent.
    assert resent == 0
    assert {c.source for group in again.repeats for run in group for c in run.calls} \
        == {"cache"}
    assert [run.answer for run in again.runs] == [run.answer for run in first.runs]


def test_a_given_seed_is_offset_per_repeat_and_one_repeat_changes_nothing() -> None:
    variants = [{"reducer_prompt": "One line."}, {"reducer_prompt": "A table."}]
    with FakeServer(plan_tasks=1) as server:
        seeded = swarmkit.compare_sync("Summarise", variants=variants, repeat=2, seed=7,
                                       **options(server))
        planner_seeds = sorted(r.body["seed"] for r in server.requests
                               if r.step == "planner")
        server.clear()
        single = swarmkit.compare_sync("Summarise", variants=variants, **options(server))
        assert all("seed" not in r.body for r in server.requests)
    assert planner_seeds == [7, 8]
    assert [len(group) for group in seeded.repeats] == [2, 2]
    assert single.repeats == tuple((run,) for run in single.runs)


def test_a_replay_of_a_repeated_comparison_needs_a_cassette_per_repeat() -> None:
    with FakeServer() as server:
        with pytest.raises(ConfigError, match=r"one cassette per variant and repeat \(4\)"):
            swarmkit.compare_sync("task", variants=[{"model": "a"}, {"model": "b"}],
                                  repeat=2, replay=["a.json", "b.json"], **options(server))
        assert server.count() == 0


def test_scores_are_a_frame_of_every_repeat_and_the_table_gains_their_means() -> None:
    def short(answer: str) -> bool:
        return len(answer) < 10

    def broken(answer: str) -> bool:
        raise RuntimeError("no dictionary here")

    with FakeServer(plan_tasks=2) as server:
        comparison = swarmkit.compare_sync(
            "Summarise the report",
            variants=[{"reducer_prompt": "One line."}, {"reducer_prompt": "A table."}],
            checks=[Check.contains("merging"), short, broken], repeat=2,
            **options(server, judge="gpt-4.1-mini"))
    frame = comparison.scores()
    assert list(frame.columns) == ["variant", "repeat", "check", "score", "reason"]
    assert len(frame) == 2 * 2 * 4  # variants x repeats x (three checks and the judge)
    first = frame[(frame["variant"] == comparison.labels[0]) & (frame["repeat"] == 1)]
    assert first[["check", "score"]].values.tolist() == [
        ["contains('merging')", 1.0], ["short", 0.0], ["broken", 0.0], ["judge", 0.8]]
    reasons = dict(zip(first["check"], first["reason"], strict=True))
    assert reasons["broken"] == "RuntimeError: no dictionary here"
    assert sorted(set(frame["repeat"])) == [0, 1]
    table = comparison.table()
    assert table.headers[-5:] == ("contains('merging') mean", "short mean", "broken mean",
                                  "judge mean", "answer")
    header, _rule, *lines = table.text().splitlines()
    assert "judge mean" in header and len(lines) == 2
    assert all(" 1.00 " in line and " 0.80 " in line for line in lines)
    assert "<th>judge mean</th>" in table.html()


def test_an_unscored_comparison_has_an_empty_frame_and_the_table_it_had() -> None:
    from swarmkit.comparison.figures import ComparisonTable

    with FakeServer(plan_tasks=1) as server:
        comparison = swarmkit.compare_sync(
            "Summarise", variants=[{"reducer_prompt": "One line."},
                                   {"reducer_prompt": "A table."}], **options(server))
    assert comparison.scores().empty
    assert list(comparison.scores().columns) == ["variant", "repeat", "check", "score",
                                                 "reason"]
    assert comparison.table().headers == ComparisonTable.HEADERS
    assert comparison.table().text() == ComparisonTable(comparison.labels,
                                                        comparison.runs).text()


def test_a_comparison_whose_repeats_do_not_start_with_its_runs_is_refused() -> None:
    from swarmkit.comparison.result import Comparison

    with FakeServer(plan_tasks=1) as server:
        made = swarmkit.compare_sync(
            "Summarise", variants=[{"reducer_prompt": "One line."},
                                   {"reducer_prompt": "A table."}], repeat=2,
            **options(server))
    swapped = (made.repeats[0][::-1], made.repeats[1])
    with pytest.raises(ConfigError, match="repeat 0 first") as caught:
        Comparison(made.task, made.variants, made.runs, repeats=swapped)
    assert len(str(caught.value).splitlines()) == 1
    kept = Comparison(made.task, made.variants, made.runs, repeats=made.repeats)
    assert kept.repeats == made.repeats and kept[1] is made.runs[1]
