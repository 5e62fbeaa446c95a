"""Every text view works with the tabulate that pip installs, with big numbers and long cells.

tabulate 0.10 parses cells as numbers under ``maxcolwidths`` even with
``disable_numparse``: "1,127" raised ValueError (a traceback under every ``%swarm
history`` and ``%swarm diff`` in a notebook) and "False" came out as "True". These
render each view's text/plain as a notebook stores it, through a real shell.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

from swarmkit.api.result import Run
from swarmkit.display.tables import render_table
from swarmkit.magics.output import SmallTable
from swarmkit.record.rows import CallRecord, ToolCallRecord, WorkerRecord
from swarmkit.record.usage import Usage
from swarmkit.store import History
from swarmkit.testing import swarm_shell

LONG = ("a sentence that goes on well past any column width a table gives its cells, "
        "so that it has to be wrapped or clipped by the view ") * 3
ODD_CELLS = ("1,127", "False", "1e5", "1_000", "nan", "0x10")


def big_run(run_id: str, answer: str = LONG) -> Run:
    usage = Usage(prompt_tokens=1_127, completion_tokens=1_234_567, requests=1)
    call = CallRecord(step="worker-1", role="worker", model="m", source="live", usage=usage,
                      cost_usd=Decimal("1234.5"), started=1_000.25, latency=2_500.5,
                      attempts=1, fingerprint="f" * 64)
    tool = ToolCallRecord(worker=1, hop=1, call_id="c1", tool="lookup",
                          arguments='{"n": 1127}', result="1,127 " + LONG, error=None,
                          started=1_000.5, duration=1.0)
    worker = WorkerRecord(index=1, task=LONG, status="completed", output=answer, usage=usage,
                          cost_usd=Decimal("1234.5"), started=1_000.25, latency=2_500.5,
                          attempts=1, calls=1, tool_calls=1)
    return Run(run_id=run_id, task=LONG, config={"worker": {"model": "m"}},
               started_at="2026-01-01T00:00:00+00:00", status="completed",
               plan=[LONG, *ODD_CELLS], workers=[worker], calls=[call], tool_calls=[tool],
               answer=answer, duration=3_600.0)


@pytest.fixture(scope="module")
def shell() -> InteractiveShell:
    return swarm_shell()


@pytest.fixture
def saved() -> Iterator[tuple[Run, Run]]:
    """Two big runs in the session's history (SWARMKIT_HISTORY, one per test)."""
    a, b = big_run("aaa111"), big_run("bbb222", answer="1,127\nFalse\n" + LONG)
    with History(os.environ["SWARMKIT_HISTORY"]) as history:
        history.save(a)
        history.save(b)
    yield a, b


def text_plain(shell: InteractiveShell, value: Any) -> str:
    """What a notebook stores as the value's text/plain (and it has an HTML form too)."""
    data, _ = shell.display_formatter.format(value)
    assert "<table>" in data["text/html"]
    return str(data["text/plain"])


def widest(text: str) -> int:
    return max(len(line) for line in text.splitlines())


def test_history_text_shows_thousands_separated_numbers(
    shell: InteractiveShell, saved: tuple[Run, Run]
) -> None:
    text = text_plain(shell, shell.run_line_magic("swarm", "history"))
    assert text.startswith("2 recent runs in ")
    row = next(line for line in text.splitlines() if line.startswith("aaa111"))
    assert "1,127" in row and "1,234,567" in row and "$1234.5000" in row
    assert "3600.00s" in row


def test_diff_text_wraps_long_cells_and_keeps_odd_ones_verbatim(
    shell: InteractiveShell, saved: tuple[Run, Run]
) -> None:
    text = text_plain(shell, shell.run_line_magic("swarm", "diff aaa111 bbb222"))
    assert text.startswith("run aaa111 (A) vs run bbb222 (B)")
    assert "1,127 / 1,234,567" in text  # the tokens row
    plan = text.split("\nplan\n")[1].split("\n\n")[0].splitlines()
    for number, cell in enumerate(ODD_CELLS, start=2):
        assert plan[number + 1].split()[:3] == [str(number), cell, cell], plan
    answers = text.split("\nanswer\n")[1]
    # The answer column is wrapped at 50 columns, the second answer's lines kept as given.
    assert widest(answers) <= 50 + 2 + 50
    b_lines = [line[52:].strip() for line in answers.splitlines()[2:]]
    assert b_lines[:2] == ["1,127", "False"]
    assert " ".join(" ".join(line[:50].split()) for line in answers.splitlines()[2:]).strip() \
        .startswith(" ".join(LONG.split())[:120])


def test_show_prints_the_run_tables_with_big_numbers(
    shell: InteractiveShell, saved: tuple[Run, Run]
) -> None:
    with capture_output() as captured:
        shell.run_line_magic("swarm", "show aaa111")
    data = captured.outputs[0].data
    assert data["text/plain"] == saved[0].tables().text()
    assert "1,127" in data["text/plain"] and "1,234,567" in data["text/plain"]
    assert "Traceback" not in captured.stdout + captured.stderr


def test_run_tables_text_and_tool_table_render_big_numbers_and_long_cells() -> None:
    run = big_run("ccc333")
    text = str(run)
    assert "1,127" in text and "1,234,567" in text
    assert "1,127" in run.tables().tool_table()
    assert "1,127" in run._repr_html_()


@pytest.mark.parametrize("fmt", ["simple", "html"])
def test_render_table_keeps_numbers_and_odd_cells_as_written(fmt: str) -> None:
    rows = [[cell, f" {cell} ", LONG] for cell in ODD_CELLS]
    table = render_table(rows, ["cell", "padded", "long"], fmt)
    for cell in ODD_CELLS:
        assert cell in table


def test_small_tables_render_big_numbers_and_long_cells(shell: InteractiveShell) -> None:
    table = SmallTable("title", ("key", "value"), [(cell, LONG) for cell in ODD_CELLS] +
                       [("tokens", 1_234_567)], note="a note")
    text = text_plain(shell, table)
    for cell in ODD_CELLS:
        assert f"\n{cell} " in text
    assert "1234567" in text and LONG.strip() in text
    for magic in ("config", "prices"):
        output = shell.run_line_magic("swarm", magic)
        assert text_plain(shell, output)

