"""A comparison's scores: summaries over repeats, the winner rule, and the scores block
of the side-by-side view (shown only when something was scored)."""

from __future__ import annotations

import math
from typing import Any

import pytest

import swarmkit
from swarmkit import Check
from swarmkit.comparison.result import Comparison
from swarmkit.comparison.scores import ScoreRow, scores_frame, summaries, winner
from swarmkit.errors import ConfigError
from swarmkit.testing import FakeReply, FakeRequest, FakeServer
from tests.support.fakekey import run_options

VARIANTS = ["short", "long"]


def rows(name: str, **by_variant: list[float | None]) -> list[ScoreRow]:
    return [ScoreRow(variant, repeat, name, score)
            for variant, scores in by_variant.items() for repeat, score in enumerate(scores)]


def test_a_summary_is_the_mean_the_sample_spread_and_the_range() -> None:
    (short, long_) = summaries(rows("judge", short=[0.6, 0.8, 0.7], long=[0.9, 0.9, 0.9]),
                               VARIANTS)
    assert (short.variant, short.repeats, short.low, short.high) == ("short", 3, 0.6, 0.8)
    assert short.mean == pytest.approx(0.7)
    assert short.spread == pytest.approx(0.1)  # sample standard deviation (n - 1)
    assert long_.spread == 0.0


def test_spreads_that_overlap_mark_no_winner() -> None:
    # long leads on the mean (0.75 > 0.7), but its interval reaches below short's top.
    found = summaries(rows("judge", short=[0.6, 0.8, 0.7], long=[0.5, 1.0, 0.75]), VARIANTS)
    assert found[1].mean > found[0].mean
    assert found[1].interval[0] < found[0].interval[1]
    assert winner(found) is None


def test_spreads_apart_mark_the_higher_mean_the_winner() -> None:
    found = summaries(rows("judge", short=[0.6, 0.8, 0.7], long=[0.9, 1.0, 0.95]), VARIANTS)
    assert found[1].interval[0] > found[0].interval[1]
    assert winner(found) == "long"


def test_one_repeat_marks_no_winner_however_far_apart() -> None:
    assert winner(summaries(rows("judge", short=[0.0], long=[1.0]), VARIANTS)) is None


def test_a_tie_marks_no_winner() -> None:
    assert winner(summaries(rows("ok", short=[1.0, 1.0], long=[1.0, 1.0]), VARIANTS)) is None


def test_a_score_that_could_not_be_taken_counts_as_zero_and_is_counted() -> None:
    (short, _) = summaries(rows("judge", short=[1.0, None], long=[1.0, 1.0]), VARIANTS)
    assert (short.mean, short.errors, short.low) == (0.5, 1, 0.0)
    assert short.spread == pytest.approx(math.sqrt(0.5))


def test_summaries_keep_the_names_order_and_the_variants_order() -> None:
    found = summaries([*rows("length", long=[1.0], short=[0.0]), *rows("judge", short=[0.5])],
                      VARIANTS)
    assert [(s.name, s.variant) for s in found] == [
        ("length", "short"), ("length", "long"), ("judge", "short")]


def test_a_score_outside_zero_to_one_or_of_an_unknown_variant_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"score 'judge' of short must be in \[0, 1\], got 7"):
        ScoreRow("short", 0, "judge", 7)
    with pytest.raises(ConfigError, match="'other', which is not a variant"):
        summaries([ScoreRow("other", 0, "judge", 0.5)], VARIANTS)


def test_the_frame_has_one_row_per_score() -> None:
    frame = scores_frame([ScoreRow("short", 0, "judge", 0.5, "terse"),
                          ScoreRow("long", 1, "contains('Paris')", 1.0)])
    assert list(frame.columns) == ["variant", "repeat", "check", "score", "reason"]
    assert frame.to_dict("records")[0] == {"variant": "short", "repeat": 0, "check": "judge",
                                           "score": 0.5, "reason": "terse"}


def test_the_scores_block_marks_the_winner_in_text_and_html() -> None:
    from swarmkit.comparison.scoreview import WINNER_RULE, ScoresView

    view = ScoresView(summaries([*rows("judge", short=[0.6, 0.8, 0.7], long=[0.9, 1.0, 0.95]),
                                 *rows("contains('Paris')", short=[1.0, 1.0, 0.0],
                                       long=[1.0, 1.0, 1.0])], VARIANTS))
    text = view.text()
    lines = text.splitlines()
    assert lines[0] == "scores" and lines[-1] == WINNER_RULE
    judge_long = next(line for line in lines if "long" in line and "0.95" in line)
    assert judge_long.split() == ["long", "0.95", "0.05", "0.90-1.00", "3", "winner"]
    # contains('Paris'): short's one miss leaves the intervals overlapping: no winner.
    paris = [line for line in lines if "0.67" in line or "1.00-1.00" in line]
    assert paris and not any("winner" in line for line in paris)
    page = view.html()
    assert page.count('class="sk-winner"') == 1
    # Narrow: a heading row per score, the mark beside the winner's label.
    assert ('<tr class="sk-score-name"><th colspan="3">judge<span class="sk-note"> · 3 '
            'repeats</span></th></tr>') in page
    assert ('<tr class="sk-winner"><td class="sk-score-variant">long <span '
            'class="sk-winner-mark">winner</span></td><td class="sk-num">0.95 ± 0.05</td>'
            '<td class="sk-num">0.90–1.00</td></tr>') in page
    assert "<th>variant</th>" in page and "<th>score</th>" not in page
    assert "contains(&#x27;Paris&#x27;)" in page  # names are escaped


def test_repeats_without_a_winner_keep_the_spread_but_draw_no_mark_column() -> None:
    from swarmkit.comparison.scoreview import WINNER_RULE, ScoresView

    view = ScoresView(summaries(rows("judge", short=[0.6, 0.9], long=[0.7, 0.8]), VARIANTS))
    lines = view.text().splitlines()
    assert lines[1].split() == ["score", "variant", "mean", "spread", "range", "repeats"]
    assert lines[-1] == WINNER_RULE
    assert all(len(line.split()) in (5, 6) for line in lines[3:-1])
    assert '<span class="sk-winner-mark">' not in view.html()
    assert 'class="sk-winner"' not in view.html()
    assert "0.75 ± 0.21" in view.html()  # short: the mean and spread of 0.6 and 0.9


def test_one_repeat_shows_scores_without_spread_or_winner() -> None:
    from swarmkit.comparison.scoreview import ScoresView

    view = ScoresView(summaries(rows("judge", short=[0.2], long=[0.9]), VARIANTS))
    header = view.text().splitlines()[1].split()
    assert header == ["score", "variant", "mean", "range", "repeats"]
    assert "winner" not in view.text().replace("no winner", "")
    assert 'class="sk-winner"' not in view.html() and "sk-winner-mark\">" not in view.html()


def test_a_score_not_taken_is_counted_in_its_own_column() -> None:
    from swarmkit.comparison.scoreview import ScoresView

    view = ScoresView(summaries(rows("judge", short=[1.0, None], long=[1.0, 1.0]), VARIANTS))
    assert "not scored" in view.text().splitlines()[1]


def _by_prompt(request: FakeRequest) -> FakeReply | None:
    """The reducer answers in its prompt's words, so a check can tell the variants apart."""
    if request.role == "reducer":
        system = str(request.messages[0].get("content"))
        return FakeReply(content="A table of it." if "table" in system else "One line.")
    return None


def _compared(server: FakeServer, **extra: Any) -> Comparison:
    return swarmkit.compare_sync(
        "Summarise the report",
        variants=[{"reducer_prompt": "One line."}, {"reducer_prompt": "A table."}],
        **run_options(server, history=False, **extra))


@pytest.mark.usefixtures("fake_key")
def test_a_scored_comparison_view_has_the_scores_block_and_marks_the_winner() -> None:
    from swarmkit.comparison.scoreview import WINNER_RULE, ScoresView

    with FakeServer(_by_prompt, plan_tasks=1) as server:
        comparison = _compared(server, checks=[Check.contains("table")], repeat=2)
    block = ScoresView(summaries(comparison.score_rows(), comparison.labels))
    text, page = comparison.view().text(), comparison.view().html()
    assert block.text() in text and WINNER_RULE in text
    # The block sits after the figures, before the plan.
    assert text.index("p50 / p95") < text.index("\nscores\n") < text.index("plan")
    winner_line = next(line for line in text.splitlines() if line.endswith("winner"))
    assert winner_line.split()[:2] == ["reducer_prompt=A", "table."]
    assert block.html() in page and page.count('class="sk-winner"') == 1
    assert str(comparison) == text


@pytest.mark.usefixtures("fake_key")
def test_an_unscored_view_has_no_scores_block() -> None:
    from swarmkit.comparison.view import ComparisonView

    with FakeServer(_by_prompt, plan_tasks=1) as server:
        comparison = _compared(server)
    view = comparison.view()
    assert view.scores is None
    assert "scores" not in view.text() and "sk-winner" not in view.html()
    assert view.text() == ComparisonView(comparison.labels, comparison.runs, ()).text()


@pytest.mark.usefixtures("fake_key")
def test_a_view_of_kept_scores_keeps_the_judge_and_drops_the_checks_left_out() -> None:
    from swarmkit.comparison.view import ComparisonView
    from swarmkit.export.checksource import kept_scores

    with FakeServer(_by_prompt, plan_tasks=1) as server:
        judged = _compared(server, judge="gpt-4.1-mini")
        checked = _compared(server, checks=[Check.contains("table")], judge="gpt-4.1-mini")
    # The view of the repeats is the comparison's own view.
    rebuilt = ComparisonView.of_repeats(judged.labels, judged.repeats)
    assert rebuilt.text() == judged.view().text() and rebuilt.html() == judged.view().html()
    assert "one run per variant: no spread, so no winner" in rebuilt.text()
    # What an export that cannot write the check expects its replay to show: the judge.
    kept = [(kept_scores(run, frozenset()),) for run in checked.runs]
    replayed = ComparisonView.of_repeats(checked.labels, kept).text()
    assert "contains('table')" in checked.view().text()
    assert "contains('table')" not in replayed and "\njudge " in replayed
    assert all(run.scores[0].name == "contains('table')" for run in checked.runs)  # kept
