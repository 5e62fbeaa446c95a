"""Every provider fault, transient and permanent, on workers, planner and the streamed reducer.

Real openai client → FakeServer on 127.0.0.1. A transient fault fails the first k
attempts of a step; a permanent one fails every attempt.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

import swarmkit
from swarmkit.config.swarmconfig import SwarmConfig
from swarmkit.display.livestate import LiveState
from swarmkit.record.events import CallRetried, ReducerDelta
from swarmkit.testing import FakeServer, Fault, FaultRule, run_problems
from tests.support.events import Events
from tests.support.fakekey import KEY_ENV, Options

CALL_TIMEOUT = 0.5
STALL = 2.0  # well past CALL_TIMEOUT; the server drops the stalled answer when we hang up
RETRY_AFTER = 0.02


@dataclass(frozen=True)
class Case:
    fault: Fault
    says: str  # what the final one-line error must contain
    status: int | None  # the HTTP status recorded on retries and on the failed call


CASES = {
    "429-retry-after": Case(Fault.rate_limit(retry_after=RETRY_AFTER), "HTTP 429", 429),
    "429-bare": Case(Fault.rate_limit(), "HTTP 429", 429),
    "500": Case(Fault.status(500), "HTTP 500", 500),
    "502-html": Case(Fault.html(502), "HTTP 502", 502),
    "503": Case(Fault.status(503), "HTTP 503", 503),
    "drop": Case(Fault.drop(), "connection dropped", None),
    "stall": Case(Fault.stall(STALL), f"within {CALL_TIMEOUT:g}s", None),
    "malformed": Case(Fault.malformed(), "malformed response", None),
    "cut-body": Case(Fault.stream_cut(), "127.0.0.1", None),
}


def _run(server: FakeServer, options: Options, sink: Events | None = None, **extra: object):
    opts = options(server, call_timeout=CALL_TIMEOUT, **extra)
    return swarmkit.run_sync("Survey four things", sinks=[sink] if sink else [], **opts)


@pytest.mark.parametrize("name", list(CASES))
def test_transient_worker_fault_completes_every_worker_with_attempts_recorded(
    name: str, options: Options
) -> None:
    case = CASES[name]
    sink = Events()
    rule = FaultRule(case.fault, step="worker-*", attempts=2)
    with FakeServer(plan_tasks=4, faults=[rule]) as server:
        run = _run(server, options, sink, max_attempts=4)
        assert server.count("worker-*") == 12
    assert run_problems(run) == []
    assert run.status == "completed", run.error
    assert [w.status for w in run.workers] == ["completed"] * 4
    assert all(w.attempts == 3 and w.output for w in run.workers)
    worker_calls = [c for c in run.calls if c.role == "worker"]
    assert [c.attempts for c in worker_calls] == [3] * 4
    assert all(c.error is None for c in worker_calls)
    retries = [r for r in run.retries if r.step.startswith("worker-")]
    assert len(retries) == 8
    assert {r.status for r in retries} == {case.status}
    assert sorted(r.attempt for r in retries) == [1] * 4 + [2] * 4
    delays = [e.delay for e in sink.of(CallRetried)]
    if name == "429-retry-after":
        assert delays == [RETRY_AFTER] * 8  # the server's Retry-After is honoured
    else:
        assert all(0 <= d <= 0.05 for d in delays)  # jittered backoff, capped at backoff_max


@pytest.mark.parametrize("name", list(CASES))
def test_permanent_worker_fault_fails_that_worker_readably_and_reduces_the_rest(
    name: str, options: Options
) -> None:
    case = CASES[name]
    rule = FaultRule(case.fault, step="worker-2", attempts=None)
    with FakeServer(plan_tasks=4, faults=[rule]) as server:
        run = _run(server, options, max_attempts=2)
        reducer = next(r for r in server.requests if r.step == "reducer")
    assert run_problems(run) == []
    assert run.status == "partial"
    failed = run.worker(2)
    assert (failed.status, failed.reason, failed.attempts) == ("failed", "provider", 2)
    assert failed.error is not None and case.says in failed.error
    assert "gave up after 2 attempts" in failed.error
    assert "<" not in failed.error and "\n" not in failed.error and len(failed.error) < 400
    assert [run.worker(i).status for i in (1, 3, 4)] == ["completed"] * 3
    failed_call = next(c for c in run.calls if c.step == "worker-2")
    assert failed_call.status == case.status and failed_call.error == failed.error
    assert run.reduced == [1, 3, 4]
    prompt = reducer.body["messages"][-1]["content"]
    assert "Worker 2 (" not in prompt and prompt.count("Worker ") == 3
    assert run.answer == "Final answer merging 3 results"


@pytest.mark.parametrize("name", ["500", "502-html", "drop", "malformed", "cut-body"])
def test_transient_planner_fault_is_retried_and_the_run_completes(
    name: str, options: Options
) -> None:
    rule = FaultRule(CASES[name].fault, step="planner", attempts=1)
    with FakeServer(plan_tasks=3, faults=[rule]) as server:
        run = _run(server, options)
    assert run_problems(run) == []
    assert run.status == "completed" and len(run.plan) == 3
    planner = next(c for c in run.calls if c.step == "planner")
    assert planner.attempts == 2


@pytest.mark.parametrize("name", ["500", "502-html", "drop", "malformed", "cut-body"])
def test_transient_reducer_fault_on_the_stream_retries_with_a_clean_answer(
    name: str, options: Options
) -> None:
    sink = Events()
    rule = FaultRule(CASES[name].fault, step="reducer", attempts=1)
    with FakeServer(plan_tasks=4, faults=[rule]) as server:
        run = _run(server, options, sink)
        streamed = [r.body.get("stream") for r in server.requests if r.step == "reducer"]
    assert streamed == [True, True]
    assert run_problems(run) == []
    assert run.status == "completed"
    assert run.answer == "Final answer merging 4 results"
    reducer = next(c for c in run.calls if c.step == "reducer")
    assert reducer.attempts == 2
    assert reducer.usage.completion_tokens  # the retried stream's usage chunk was read
    deltas = sink.of(ReducerDelta)
    assert "".join(d.text for d in deltas if d.attempt == 2) == run.answer


def test_stream_cut_midway_reducer_retries_without_duplicated_text(options: Options) -> None:
    """The cut attempt streamed half the answer; what a sink shows must not repeat it."""
    sink = Events()
    rule = FaultRule(Fault.stream_cut(), step="reducer", attempts=1)
    with FakeServer(plan_tasks=4, faults=[rule]) as server:
        run = _run(server, options, sink)
    deltas = sink.of(ReducerDelta)
    first = "".join(d.text for d in deltas if d.attempt == 1)
    assert first and run.answer is not None and run.answer.startswith(first)
    assert first != run.answer  # the cut attempt really was cut midway
    # The text a live view shows is the text of the latest attempt only.
    assert _shown(deltas) == run.answer
    assert run.answer.count("Final answer") == 1
    live = LiveState(task=run.task, config=SwarmConfig())  # the dashboard's own state
    for event in sink.events:
        live.apply(event)
    assert "".join(live.reducer_text) == run.answer


def _shown(deltas: list[ReducerDelta]) -> str:
    """What a display that follows the ReducerDelta contract shows at the end."""
    text: list[str] = []
    attempt = 0
    for delta in deltas:
        if delta.attempt != attempt:
            text, attempt = [], delta.attempt
        text.append(delta.text)
    return "".join(text)


@pytest.mark.parametrize("name", ["500", "drop", "cut-body"])
def test_permanent_reducer_fault_fails_the_run_but_keeps_every_worker(
    name: str, options: Options
) -> None:
    rule = FaultRule(CASES[name].fault, step="reducer", attempts=None)
    with FakeServer(plan_tasks=3, faults=[rule]) as server:
        run = _run(server, options, max_attempts=2)
    assert run_problems(run) == []
    assert run.status == "failed" and run.answer is None
    assert run.error is not None and run.error.startswith("ProviderError:")
    assert "gave up after 2 attempts" in run.error
    assert [w.status for w in run.workers] == ["completed"] * 3
    assert all(w.output for w in run.workers)


def test_worker_that_is_not_retryable_fails_at_once_with_a_hint(options: Options) -> None:
    rule = FaultRule(Fault.status(400), step="worker-1", attempts=None)
    with FakeServer(plan_tasks=2, faults=[rule]) as server:
        run = _run(server, options, max_attempts=5)
        assert server.count("worker-1") == 1
    failed = run.worker(1)
    assert failed.status == "failed" and failed.attempts == 1
    assert failed.error is not None and "HTTP 400" in failed.error
    assert "gave up" not in failed.error
    assert run_problems(run) == []


def test_short_placeholder_key_does_not_mangle_error_messages(
    options: Options, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Local servers take any key ("x", "ollama"); such a value is not scrubbed as a secret."""
    monkeypatch.setenv(KEY_ENV, "e")
    rule = FaultRule(Fault.stream_cut(), step="worker-1", attempts=None)
    with FakeServer(plan_tasks=2, faults=[rule]) as server:
        run = _run(server, options, max_attempts=1)
    error = run.worker(1).error
    assert error is not None and "[redacted]" not in error
    # The transport's "Not enough data to satisfy content length header" survives whole.
    assert "Not enough data to satisfy content length header" in error


def test_an_error_event_mid_stream_is_retried_and_then_named_in_one_line(
    options: Options,
) -> None:
    """A server that fails mid-answer sends {"error": ...} inside the stream, with 200."""
    sink = Events()
    once = FaultRule(Fault.stream_error("The model is overloaded"), step="reducer", attempts=1)
    with FakeServer(plan_tasks=3, faults=[once]) as server:
        run = _run(server, options, sink)
    assert run.status == "completed" and run.answer == "Final answer merging 3 results"
    assert _shown(sink.of(ReducerDelta)) == run.answer  # the failed attempt's text is gone
    [retry] = [r for r in run.retries if r.step == "reducer"]
    assert "mid-answer: The model is overloaded" in retry.error

    always = FaultRule(Fault.stream_error("The model is overloaded"), step="reducer")
    with FakeServer(plan_tasks=3, faults=[always]) as server:
        run = _run(server, options, max_attempts=2)
    assert run.status == "failed" and run.error is not None
    assert "error from 127.0.0.1" in run.error
    assert "mid-answer: The model is overloaded (gave up after 2 attempts)" in run.error
    assert "\n" not in run.error
    assert all(w.status == "completed" for w in run.workers)  # the workers are kept
