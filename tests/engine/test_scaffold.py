"""The embedded model's echoes of swarmkit's prompt labels, dropped from its answers."""

from __future__ import annotations

import pytest

from swarmkit.engine.scaffold import without_scaffold


def test_a_restated_sub_task_line_is_dropped_whole() -> None:
    text = "Your sub-task (4 of 4) is to write docs.\nBe concise.\nOverall task: docs\nUse lists."
    assert without_scaffold(text) == "Be concise.\nUse lists."


def test_a_reducer_heading_goes_and_the_answer_on_its_line_stays() -> None:
    text = "Worker 1 (sub-task: Describe red): Red is warm.\nPartial answer 1.2 (workers 3-4): ok"
    assert without_scaffold(text) == "Red is warm.\nok"


def test_an_answer_of_nothing_but_labels_is_kept_as_it_came() -> None:
    assert without_scaffold("Worker 1 (sub-task: a):") == "Worker 1 (sub-task: a):"


@pytest.mark.parametrize("text", ["A plain answer about a task.", "Workers unite (a slogan)."])
def test_an_answer_without_labels_is_unchanged(text: str) -> None:
    assert without_scaffold(text) is text


def test_a_hosted_models_answer_is_never_touched() -> None:
    text = "Your sub-task (1 of 2): as asked.\nDone."
    assert without_scaffold(text, local=False) is text
