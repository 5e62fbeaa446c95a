"""``%%swarm --check NAME --judge MODEL --rubric TEXT`` in a real IPython shell against
FakeServer: the checks are the notebook's functions and ``swarmkit.Check`` values, the
judge's score lands beside theirs, and a name that is no check is one line."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

from swarmkit import Check
from swarmkit.testing import FakeServer, swarm_shell

KEY_ENV = "SWARMKIT_TEST_KEY"


@pytest.fixture
def shell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[InteractiveShell]:
    monkeypatch.setenv(KEY_ENV, "sk-test-magic-scores-0000")
    monkeypatch.setenv("SWARMKIT_HISTORY", str(tmp_path / "history.db"))
    ip = swarm_shell()
    yield ip
    for name in ("r", "short", "merged", "text", "rubric", "blank"):
        ip.user_ns.pop(name, None)


def test_check_flags_take_the_notebooks_checks_and_the_judge_scores_too(
        shell: InteractiveShell) -> None:
    def short(answer: str) -> bool:
        return len(answer) < 200

    shell.user_ns.update(short=short, merged=Check.contains("merging"))
    with FakeServer() as server:
        shell.run_cell_magic(
            "swarm", f"--model gpt-4.1-mini --base-url {server.base_url} --api-key-env "
                     f"{KEY_ENV} --workers 2 --quiet --out r --check short,merged "
                     "--judge judge-model --rubric 'Is it merged?'", "Summarise the report")
        (judged,) = [r for r in server.requests if r.step == "judge-0"]
    run = shell.user_ns["r"]
    assert [(s.name, s.score) for s in run.scores] == [
        ("short", 1.0), ("contains('merging')", 1.0), ("judge", 0.8)]
    assert judged.body["model"] == "judge-model"
    assert "Is it merged?" in judged.body["messages"][-1]["content"]


@pytest.mark.parametrize(("names", "message"), [
    ("nothing_here", "--check nothing_here: no such name in the notebook"),
    ("text", "--check text: a str in the notebook"),
    ("",  "--check needs names"),
])
def test_a_name_that_is_no_check_is_one_line(shell: InteractiveShell, names: str,
                                            message: str) -> None:
    shell.user_ns["text"] = "not a check"
    with pytest.raises(UsageError, match=message) as caught:
        shell.run_cell_magic("swarm", f"--model gpt-4.1-mini --check '{names}'", "a task")
    assert "\n" not in str(caught.value)


def test_rubric_at_name_takes_the_notebooks_text(shell: InteractiveShell) -> None:
    shell.user_ns["rubric"] = "Names every merged section, in order."
    with FakeServer() as server:
        shell.run_cell_magic(
            "swarm", f"--model gpt-4.1-mini --base-url {server.base_url} --api-key-env "
                     f"{KEY_ENV} --workers 2 --quiet --out r --judge judge-model "
                     "--rubric @rubric", "Summarise the report")
        (judged,) = [r for r in server.requests if r.step == "judge-0"]
    assert "Names every merged section, in order." in judged.body["messages"][-1]["content"]
    assert shell.user_ns["r"].config["rubric"] == "Names every merged section, in order."


@pytest.mark.parametrize(("value", "message"), [
    ("@missing", "--rubric @missing: no such name in the notebook"),
    ("@blank", "--rubric @blank: an empty text in the notebook"),
    ("@short", "--rubric @short: a function in the notebook"),
])
def test_a_rubric_name_that_holds_no_text_is_one_line(shell: InteractiveShell, value: str,
                                                      message: str) -> None:
    def short(answer: str) -> bool:
        return len(answer) < 200

    shell.user_ns.update(blank="  ", short=short)
    with pytest.raises(UsageError, match=message) as caught:
        shell.run_cell_magic("swarm", f"--model gpt-4.1-mini --judge j --rubric {value}",
                             "a task")
    assert "\n" not in str(caught.value)


def test_repeat_without_compare_is_one_line_and_a_sessions_repeat_waits_for_compare(
        shell: InteractiveShell) -> None:
    with pytest.raises(UsageError, match=r"--repeat runs each variant of a --compare K "
                                         r"times; add --compare") as caught:
        shell.run_cell_magic("swarm", "--model gpt-4.1-mini --repeat 3", "a task")
    assert "\n" not in str(caught.value)
    with FakeServer() as server:
        shell.run_line_magic("swarm", "config repeat=3")
        try:
            shell.run_cell_magic(
                "swarm", f"--model gpt-4.1-mini --base-url {server.base_url} --api-key-env "
                         f"{KEY_ENV} --workers 2 --quiet --out r", "Summarise the report")
        finally:
            shell.run_line_magic("swarm", "config repeat=")
    assert shell.user_ns["r"].status == "completed"
    assert server.count("planner") == 1  # one run: the session's repeat is --compare's


def test_a_judged_replay_cell_is_judged_live_too_under_swarmkit_live(
        shell: InteractiveShell, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cassette = tmp_path / "judged.swarm.json"
    with FakeServer() as server:
        line = (f"--model gpt-4.1-mini --base-url {server.base_url} --api-key-env {KEY_ENV} "
                "--workers 2 --quiet --no-cache --out r")
        shell.run_cell_magic("swarm", f"{line} --judge judge-model --rubric 'Merged?' "
                                      f"--record {cassette}", "Summarise the report")
        recorded = shell.user_ns["r"]
        # The replay cell names no judge: the recording's is asked again, from the file.
        shell.run_cell_magic("swarm", f"{line} --replay {cassette}", "Summarise the report")
        assert shell.user_ns["r"].scores == recorded.scores
        assert server.count("judge-*") == 1
        monkeypatch.setenv("SWARMKIT_LIVE", "1")
        shell.run_cell_magic("swarm", f"{line} --replay {cassette}", "Summarise the report")
        (live_judge,) = [r for r in server.requests if r.step == "judge-0"][1:]
    live = shell.user_ns["r"]
    assert live.run_id != recorded.run_id and live.scores[0].score == 0.8
    assert live_judge.body["model"] == "judge-model"
    assert "Merged?" in live_judge.body["messages"][-1]["content"]
