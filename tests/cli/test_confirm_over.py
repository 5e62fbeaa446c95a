"""``jswarm run --confirm-over USD`` as a real subprocess against FakeServer: in a
terminal (a real pty: the plan, the forecast and ``run N workers? [y/N/e]``, answered
``y`` or ``e`` with an $EDITOR), with no terminal (exit 2 after the planner, one line
naming --yes), and with --yes. The history tells what ran and how it was approved."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from swarmkit.cli.exitcodes import EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE
from swarmkit.store.history import History
from swarmkit.testing import FakeServer
from tests.cli.test_cli import ROOT, child_env, common, swarmkit_cli

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="a pty needs POSIX")

_LIMIT = 60.0  # seconds a pty conversation may take before the test gives up
_NAP = 0.02  # seconds between looks at the terminal


def _history(tmp_path: Path) -> list[str]:
    return ["--history-path", str(tmp_path / "h.db")]


def _read_until(fd: int, wanted: bytes, seen: bytearray) -> None:
    deadline = time.monotonic() + _LIMIT
    while wanted not in seen:
        left = deadline - time.monotonic()
        assert left > 0, f"never saw {wanted!r}; the terminal showed:\n{seen.decode()}"
        if _readable(fd):
            try:
                chunk = os.read(fd, 4096)
            except OSError:  # the child closed the terminal
                chunk = b""
            assert chunk, f"the terminal closed before {wanted!r}:\n{seen.decode()}"
            seen += chunk


def _readable(fd: int) -> bool:
    """Whether the pty's master has output, after a short nap. Never a blocking select:
    Linux's last close of the slave (the child's exit) waits while anybody sleeps on the
    master, doubling its wait each time it finds a sleeper, so a reader always back in
    select() kept a loaded machine's child from exiting for over two minutes."""
    ready, _, _ = select.select([fd], [], [], 0)
    if not ready:
        time.sleep(_NAP)
    return bool(ready)


def _in_a_terminal(args: list[str], answers: list[tuple[bytes, bytes | int]],
                   **env: str) -> tuple[int, str]:
    """Run ``python -m swarmkit`` with stdin, stdout and stderr on a real pty; answer each
    prompt ``(waited for, typed)`` (a signal number: sent to it instead); the exit status
    and what the terminal showed."""
    import pty

    master, slave = pty.openpty()
    child = subprocess.Popen([sys.executable, "-m", "swarmkit", *args], stdin=slave,
                             stdout=slave, stderr=slave, env=child_env(**env), cwd=ROOT,
                             close_fds=True)
    os.close(slave)
    seen = bytearray()
    try:
        for wanted, typed in answers:
            _read_until(master, wanted, seen)
            if isinstance(typed, int):
                child.send_signal(typed)
            else:
                os.write(master, typed)
        deadline = time.monotonic() + _LIMIT
        while child.poll() is None and time.monotonic() < deadline:
            if _readable(master):
                try:
                    seen += os.read(master, 4096)
                except OSError:
                    break
        code = child.wait(timeout=_LIMIT)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        os.close(master)
    return code, seen.decode(errors="replace")


def test_in_a_terminal_the_plan_and_forecast_are_shown_and_y_runs_it(tmp_path: Path) -> None:
    with FakeServer(plan_tasks=3) as server:
        code, shown = _in_a_terminal(
            ["run", "Name three rivers", *common(server), *_history(tmp_path),
             "--confirm-over", "0.000001"], [(b"[y/N/e]", b"y\n")])
        assert code == EXIT_OK, shown
        assert server.count("planner") == 1 and server.count("worker-*") == 3
    assert "run 3 workers? [y/N/e]" in shown and "over confirm_over $0.000001" in shown
    assert "at most" in shown and "1. Sub-task 1 of Name three rivers" in shown
    assert "plan reviewed: 3 proposed · approved as proposed" in shown  # the tables
    with History(tmp_path / "h.db") as history:
        run = history.load_run(history.recent(1)[0].run_id)
    assert run.review is not None and run.review.approved_by == "yes"


def test_in_a_terminal_e_opens_the_editor_on_the_plan(tmp_path: Path) -> None:
    editor = tmp_path / "edit.py"
    editor.write_text(
        "import sys, pathlib\n"
        "path = pathlib.Path(sys.argv[1])\n"
        "lines = [l for l in path.read_text().splitlines() if not l.startswith('#')]\n"
        "path.write_text('\\n'.join(['The Nile, briefly', *lines[2:], 'The Amazon']))\n")
    with FakeServer(plan_tasks=3) as server:
        code, shown = _in_a_terminal(
            ["run", "Name rivers", *common(server), *_history(tmp_path),
             "--confirm-over", "0.000001"],
            [(b"[y/N/e]", b"e\n"), (b"run 3 workers? [y/N/e]", b"y\n")],
            EDITOR=f"{sys.executable} {editor}", VISUAL="")
        assert code == EXIT_OK, shown
        sent = [r.body["messages"][-1]["content"] for r in server.requests
                if r.step.startswith("worker-")]
    assert server.count("planner") == 1
    assert any("The Nile, briefly" in t for t in sent) and any("The Amazon" in t for t in sent)
    assert not any("Sub-task 1 of" in t or "Sub-task 2 of" in t for t in sent)
    assert "plan reviewed: 3 proposed · 1 edited · 1 dropped · 1 added" in shown


def test_in_a_terminal_no_runs_nothing_more(tmp_path: Path) -> None:
    with FakeServer(plan_tasks=3) as server:
        code, shown = _in_a_terminal(
            ["run", "Name rivers", *common(server), *_history(tmp_path),
             "--confirm-over", "0.000001"], [(b"[y/N/e]", b"\n")])
        assert server.count("planner") == 1 and server.count("worker-*") == 0
    assert code == EXIT_USAGE and "not run (answered no)" in shown


def test_ctrl_c_at_the_question_runs_nothing_more(tmp_path: Path) -> None:
    with FakeServer(plan_tasks=3) as server:
        code, shown = _in_a_terminal(
            ["run", "Name rivers", *common(server), *_history(tmp_path),
             "--confirm-over", "0.000001"], [(b"[y/N/e]", signal.SIGINT)])
        assert server.count("planner") == 1 and server.count("worker-*") == 0
    assert code == EXIT_INTERRUPTED, shown
    assert "Traceback" not in shown


def test_with_no_terminal_it_exits_2_after_the_planner_naming_yes(tmp_path: Path) -> None:
    with FakeServer(plan_tasks=3) as server:
        done = swarmkit_cli("run", "Name rivers", *common(server), *_history(tmp_path),
                            "--confirm-over", "0.000001", stdin="y\n")
        assert server.count("planner") == 1 and server.count("worker-*") == 0
    assert done.returncode == EXIT_USAGE and done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "--yes" in lines[0] and "at most" in lines[0], done.stderr


def test_yes_runs_it_and_records_approved_by_yes(tmp_path: Path) -> None:
    with FakeServer(plan_tasks=3) as server:
        done = swarmkit_cli("run", "Name rivers", *common(server), *_history(tmp_path),
                            "--confirm-over", "0.000001", "--yes")
        assert server.count("planner") == 1 and server.count("worker-*") == 3
    assert done.returncode == EXIT_OK, done.stderr
    assert "plan reviewed: 3 proposed · approved as proposed" in done.stdout
    assert "approved at the prompt" in done.stdout
    # One run, the planner's call carried into it: one history row, its planner row.
    with History(tmp_path / "h.db") as kept:
        (row,) = kept.recent(10)
        calls = kept.calls(row.run_id)
    assert row.status == "completed" and [c.role for c in calls].count("planner") == 1
    assert row.cost_usd == sum(c.cost_usd for c in calls if c.cost_usd is not None)


def test_under_the_threshold_it_runs_unasked_with_no_review(tmp_path: Path) -> None:
    with FakeServer(plan_tasks=2) as server:
        done = swarmkit_cli("run", "Name rivers", *common(server), *_history(tmp_path),
                            "--confirm-over", "5")
        assert server.count("planner") == 1 and server.count("worker-*") == 2
    assert done.returncode == EXIT_OK, done.stderr
    assert "plan reviewed" not in done.stdout
    assert "planner" in done.stdout  # its row in the spend by role, as without the threshold
    with History(tmp_path / "h.db") as kept:
        assert [r.status for r in kept.recent(10)] == ["completed"]


def test_run_help_names_confirm_over_and_yes() -> None:
    text = swarmkit_cli("run", "--help").stdout
    assert "--confirm-over USD" in text and "--yes" in text
