"""A scored run's static view: a scores table (text and HTML) with each check's and the
judge's score and reason, and the judge's drill-down (its prompt, its reply, the score
parsed from it), from real runs against FakeServer."""

from __future__ import annotations

import html
import json
from functools import partial

import pytest

import swarmkit
from swarmkit import Check
from swarmkit.testing import FakeReply, FakeRequest, FakeServer
from tests.support.fakekey import QUICK_RETRIES, run_options

pytestmark = pytest.mark.usefixtures("fake_key")

options = partial(run_options, **QUICK_RETRIES, history=False, judge="gpt-4.1-mini",
                  rubric="Names the right city.")
ANSWER = "The capital of France is Paris."


def _script(judge_reply: str):  # type: ignore[no-untyped-def]
    def script(request: FakeRequest) -> FakeReply | None:
        if request.step == "reducer":
            return FakeReply(content=ANSWER)
        if request.step.startswith("judge-"):
            return FakeReply(content=judge_reply)
        return None
    return script


def has_lyon(answer: str) -> tuple[bool, str]:
    return "Lyon" in answer, "looked for Lyon"


def test_a_scored_run_shows_its_scores_and_the_judges_prompt_and_reply() -> None:
    reply = json.dumps({"score": 7, "reason": "Right city, <no> detail."})
    with FakeServer(_script(reply)) as server:
        run = swarmkit.run_sync("What is the capital of France?", **options(server),
                                checks=[Check.contains("Paris"), has_lyon])
    tables = run.tables()
    text = tables.text()
    block = text[text.index("scores\n"):text.index("answer\n")]
    lines = [line.split() for line in block.splitlines()[3:] if line.strip()]
    assert [(row[0], row[1]) for row in lines] == [("contains('Paris')", "1.00"),
                                                   ("has_lyon", "0.00"), ("judge", "0.70")]
    assert "looked for Lyon" in block and "Right city, <no> detail." in block
    page = tables.html()
    assert page.count("sk-scores") == 1
    assert html.escape("Right city, <no> detail.") in page
    assert "Right city, <no> detail." not in page  # escaped, never raw
    # The judge's drill-down: what it was sent (task, rubric, answer), what it replied,
    # and the score parsed from that reply.
    start = page.index('<details class="sk-judge">')
    drill = page[start:page.index("</details>", start)]
    assert "judge-0: the judge&#x27;s prompt and reply · score 7/10 → 0.70" in drill
    for sent in ("What is the capital of France?", "Names the right city.", ANSWER):
        assert html.escape(sent) in drill
    assert html.escape(reply) in drill


def test_a_judge_reply_with_no_score_is_shown_as_an_error_with_why() -> None:
    with FakeServer(_script("I liked it.")) as server:
        run = swarmkit.run_sync("What is the capital of France?", **options(server))
    text = run.tables().text()
    block = text[text.index("scores\n"):text.index("answer\n")]
    (row,) = [line for line in block.splitlines() if line.startswith("judge ")]
    assert row.split()[1] == "error" and "held no score" in row
    page = run.tables().html()
    assert "no score: the judge&#x27;s reply held no score" in page
    assert "I liked it." in page  # its reply, to see why


def test_an_unscored_run_has_no_scores_section() -> None:
    with FakeServer() as server:
        run = swarmkit.run_sync("What is the capital of France?",
                                **run_options(server, history=False))
    assert "scores" not in run.tables().text().split("answer\n")[0]
    assert "sk-scores" not in run.tables().html() and "sk-judge" not in run.tables().html()
