"""Bad numbers, URLs and keys: one clear line or a bounded wait, never a hang or a traceback.

A server's ``Retry-After`` is hostile input (NaN, infinity, negative, huge, dates, junk):
the run still finishes. Options given by the user (rates, timeouts, tool limits, base
URLs) are refused at config time with a ``ConfigError`` naming the option, in Python,
in ``%%swarm`` (a one-line ``UsageError``) and in ``swarmkit run`` (one line, exit 2).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

import swarmkit
from swarmkit.api.result import Run
from swarmkit.config.swarmconfig import SwarmConfig
from swarmkit.errors import ConfigError
from swarmkit.provider.decode import retry_after_seconds
from swarmkit.record.events import CallRetried, Event
from swarmkit.testing import FakeReply, FakeRequest, FakeServer, Fault, FaultRule, run_problems
from tests.support.fakekey import KEY_ENV, Options, swarm_line

OneLine = Callable[[str], None]
ROOT = Path(__file__).resolve().parents[2]
GUARD = 120.0  # seconds: far past any bounded outcome; reaching it means a hang


def _within_guard(work: Callable[[], Any]) -> Any:
    """``work()`` in a thread; fails the test (instead of hanging it) past ``GUARD``."""
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["value"] = work()
        except BaseException as exc:  # handed to the test thread below
            outcome["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(GUARD)
    assert not thread.is_alive(), f"still running after {GUARD}s: a hang"
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "swarmkit", "run", "task", *args],
                          capture_output=True, text=True, timeout=GUARD, env=env, check=False)


def _refused_by_cli(args: list[str], says: str) -> None:
    done = _cli("--model", "gpt-4.1-mini", "--api-key-env", KEY_ENV, *args)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0], done.stderr


# -- Retry-After from the server --------------------------------------------------------------

HOSTILE_RETRY_AFTER = [
    "nan", "NaN", "inf", "-inf", "-5", "1e400", "99999999999999999999",
    "Fri, 31 Dec 9999 23:59:59 GMT", "Wed, 21 Oct 2015 07:28:00 GMT", "Mon, 32 Foo 2020",
    "soon", "0x10", "",
]


@pytest.mark.parametrize("value", HOSTILE_RETRY_AFTER)
def test_hostile_retry_after_is_clamped_and_the_run_completes(
    value: str, fresh: FakeServer, options: Options
) -> None:
    fresh.add_fault(FaultRule(Fault.rate_limit(retry_after=value), attempts=1))
    retries: list[CallRetried] = []

    class Retries:
        def on_event(self, event: Event) -> None:
            if isinstance(event, CallRetried):
                retries.append(event)

    try:
        run: Run = _within_guard(lambda: swarmkit.run_sync(
            "task", **options(fresh, workers=2, backoff_max=0.05), sinks=[Retries()]))
    finally:
        fresh.clear_faults()
    assert run.status == "completed" and run_problems(run) == []
    assert retries and all(r.status == 429 for r in retries)
    # Every wait is a real number within 0 .. backoff_max, whatever the header said.
    assert all(math.isfinite(r.delay) and 0 <= r.delay <= 0.05 for r in retries)


@pytest.mark.parametrize(("header", "seconds", "ms"), [
    ("2.5", 2.5, 0.0025), (" 7 ", 7.0, 0.007), ("-5", 0.0, 0.0),
    ("99999999999999999999", 86400.0, 86400.0), ("1e400", None, None),
    ("Wed, 21 Oct 2015 07:28:00 GMT", 0.0, None),
    ("Fri, 31 Dec 9999 23:59:59 GMT", 86400.0, None),
    ("nan", None, None), ("inf", None, None), ("1_000", None, None), ("soon", None, None),
    ("", None, None),
])
def test_retry_after_header_is_read_as_seconds_within_a_day_or_ignored(
    header: str, seconds: float | None, ms: float | None
) -> None:
    assert retry_after_seconds({"retry-after": header}) == seconds
    assert retry_after_seconds({"retry-after-ms": header}) == ms


def test_hostile_retry_after_in_the_magic_completes(
    shell: InteractiveShell, fresh: FakeServer
) -> None:
    fresh.add_fault(FaultRule(Fault.rate_limit(retry_after="nan"), attempts=1))
    line = swarm_line(fresh, "--workers 2 --quiet --out hostile")
    try:
        _within_guard(lambda: shell.run_cell_magic("swarm", line, "task"))
    finally:
        fresh.clear_faults()
    assert shell.user_ns["hostile"].status == "completed"


# -- numbers the user gives --------------------------------------------------------------------

BAD_NUMBERS: list[tuple[str, Any, str]] = [
    (name, value, says)
    for name, says in [
        ("rpm", "rpm must be positive"), ("tpm", "tpm must be positive"),
        ("rate_window", "rate_window must be positive seconds"),
        ("call_timeout", "call_timeout must be a positive number of seconds"),
        ("run_timeout", "run_timeout must be a positive number of seconds"),
        ("tool_timeout", "tool_timeout must be a positive number of seconds"),
        ("backoff_max", "backoff_max must be 0 or more seconds"),
    ]
    for value in (math.nan, "nan", math.inf, -1, 0)
    if not (name == "backoff_max" and value == 0)
] + [
    (name, value, f"{name} must be")
    for name in ("concurrency", "max_attempts", "max_tool_hops", "tool_concurrency",
                 "max_tool_errors", "max_tool_result_chars", "max_tool_calls_per_turn",
                 "budget_tokens", "workers")
    for value in (math.nan, math.inf, -1, 2.5, "x", True, [3])
] + [
    ("rpm", True, "rpm must be a number"), ("call_timeout", [1], "call_timeout must be a number"),
    ("budget", math.inf, "budget must be a finite USD amount"),
    ("temperature", math.nan, "temperature must be between 0 and 2"),
    ("max_tokens", math.inf, "max_tokens must be a whole number"),
]


@pytest.mark.parametrize(("name", "value", "says"), BAD_NUMBERS,
                         ids=[f"{n}={v!r}" for n, v, _ in BAD_NUMBERS])
def test_bad_number_is_a_config_error_naming_the_option_before_any_call(
    name: str, value: Any, says: str, fresh: FakeServer, options: Options,
    one_line: OneLine,
) -> None:
    with pytest.raises(ConfigError) as error:
        swarmkit.run_sync("task", **options(fresh, **{name: value}))
    assert says in str(error.value)
    one_line(str(error.value))
    assert fresh.count() == 0


def test_bad_number_in_a_config_built_directly_is_a_config_error(
    fresh: FakeServer, options: Options
) -> None:
    for field, value in [("rpm", math.nan), ("tool_timeout", "30"), ("max_tool_hops", -1),
                         ("max_tool_calls_per_turn", 0), ("concurrency", 2.5)]:
        with pytest.raises(ConfigError, match=f"^{field} must be"):
            swarmkit.run_sync("task", config=SwarmConfig(**{field: value}), **options(fresh))
    assert fresh.count() == 0


BAD_FLAGS = [
    ("--rpm nan", "rpm must be positive, got nan"),
    ("--tpm inf", "tpm must be positive, got inf; leave it unset for no limit"),
    ("--rpm -1", "rpm must be positive"),
    ("--run-timeout nan", "run_timeout must be a positive number of seconds"),
    ("--tool-timeout inf", "tool_timeout must be a positive number of seconds, got inf"),
    ("--max-tool-result-chars -5", "max_tool_result_chars must be at least 1"),
    ("--max-tool-hops nan", "max_tool_hops must be a whole number"),
    ("--tool-concurrency 0", "tool_concurrency must be at least 1"),
    ("--max-tool-errors -1", "max_tool_errors must be at least 1"),
    ("--max-tool-calls-per-turn 0", "max_tool_calls_per_turn must be at least 1"),
    ("--max-tool-calls-per-turn many", "max_tool_calls_per_turn must be a whole number"),
    ("--concurrency inf", "concurrency must be a whole number"),
]


@pytest.mark.parametrize(("flags", "says"), BAD_FLAGS, ids=[f for f, _ in BAD_FLAGS])
def test_bad_number_in_the_magic_is_a_one_line_usage_error(
    flags: str, says: str, shell: InteractiveShell, fresh: FakeServer,
    one_line: OneLine,
) -> None:
    line = swarm_line(fresh, flags)
    with pytest.raises(UsageError) as error:
        shell.run_cell_magic("swarm", line, "task")
    flag, _, value = flags.partition(" ")
    key = flag[2:].replace("-", "_")
    complaint = says.split(" ", 1)[1]
    # The cell's error names the flag as typed; %swarm config names the key as typed.
    assert str(error.value).startswith(f"%%swarm: {flag} {complaint}")
    one_line(str(error.value))
    with pytest.raises(UsageError) as config_error:  # the same value as a session default
        shell.run_line_magic("swarm", f"config {key}={value}")
    assert says in str(config_error.value)
    one_line(str(config_error.value))
    assert fresh.count() == 0


def test_history_count_past_sqlites_integers_lists_every_run(
    shell: InteractiveShell, fresh: FakeServer
) -> None:
    line = swarm_line(fresh, "--workers 2 --quiet --out listed")
    shell.run_cell_magic("swarm", line, "task")
    listing = shell.run_line_magic("swarm", "history " + "9" * 30)
    assert shell.user_ns["listed"].run_id in [run.run_id for run in listing.runs]


@pytest.mark.parametrize(("flags", "says"), [
    (["--rpm", "nan"], "ConfigError: --rpm must be positive, got nan"),
    (["--tpm", "inf"], "ConfigError: --tpm must be positive, got inf"),
    (["--concurrency", "0"], "ConfigError: --concurrency must be at least 1"),
    (["--workers", "many"], "ConfigError: --workers must be a whole number, got 'many'"),
    (["--call-timeout", "-1"], "ConfigError: --call-timeout must be a positive number"),
    (["--wrokers", "3"], "unknown option --wrokers (did you mean --workers?)"),
])
def test_bad_number_in_swarmkit_run_is_one_line_and_exit_status_2(
    flags: list[str], says: str
) -> None:
    _refused_by_cli(flags, says)


# -- tool calls per turn ------------------------------------------------------------------------


def _asks_for(calls: int) -> Callable[[FakeRequest], FakeReply]:
    """One worker whose model asks for ``calls`` tool calls in its first turn, then answers."""

    def handler(request: FakeRequest) -> FakeReply:
        if request.role == "planner":
            return FakeReply(content=json.dumps({"tasks": ["count"]}))
        if request.role == "reducer":
            return FakeReply(content="merged")
        if not any(m.get("role") == "tool" for m in request.messages):
            return FakeReply(tool_calls=[("count_call", {"n": n}) for n in range(calls)])
        return FakeReply(content="counted")

    return handler


@pytest.mark.parametrize(("calls", "cap", "ran"), [(40, 5, 5), (500, None, 16)])
def test_tool_calls_past_the_cap_are_refused_told_to_the_model_and_not_run(
    calls: int, cap: int | None, ran: int, options: Options
) -> None:
    executed: list[int] = []

    @swarmkit.tool
    def count_call(n: int) -> str:
        """Count one call."""
        executed.append(n)
        return f"call {n}"

    with FakeServer(_asks_for(calls)) as fake:
        run = swarmkit.run_sync("task", **options(fake, tools=[count_call],
                                                  max_tool_calls_per_turn=cap))
        answered = [r for r in fake.requests if r.step == "worker-1"][-1].body["messages"]
    limit = 16 if cap is None else cap
    assert sorted(executed) == list(range(ran))
    # The worker is not failed for it: refusals are not tool errors.
    assert run.status == "completed" and run.workers[0].status == "completed"
    refused = [t for t in run.tool_calls if t.error and t.error.startswith("ToolError: refused")]
    assert len(run.tool_calls) == calls and len(refused) == calls - ran
    assert all(f"max_tool_calls_per_turn={limit}" in t.error for t in refused if t.error)
    told = [m["content"] for m in answered if m.get("role") == "tool"]
    assert len(told) == calls and sum("refused" in text for text in told) == calls - ran
    assert "ToolError: refused" in run.tables().text()


def test_tool_call_cap_is_a_magic_flag_and_a_session_default(
    shell: InteractiveShell,
) -> None:
    shell.run_cell(
        "import swarmkit\n"
        "counted = []\n"
        "@swarmkit.tool\n"
        "def count_call(n: int) -> str:\n"
        "    '''Count one call.'''\n"
        "    counted.append(n)\n"
        "    return 'ok'\n"
    )
    with FakeServer(_asks_for(9)) as fake:
        line = swarm_line(fake, "--tools count_call --quiet --out capped")
        shell.run_cell_magic("swarm", line + " --max-tool-calls-per-turn 3", "task")
        assert sorted(shell.user_ns["counted"]) == [0, 1, 2]
        shell.user_ns["counted"].clear()
        shell.run_line_magic("swarm", "config max_tool_calls_per_turn=4")
        try:
            shell.run_cell_magic("swarm", line, "task")
        finally:
            shell.run_line_magic("swarm", "config max_tool_calls_per_turn=")
    assert sorted(shell.user_ns["counted"]) == [0, 1, 2, 3]
    assert shell.user_ns["capped"].config["max_tool_calls_per_turn"] == 4
