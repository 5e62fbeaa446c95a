"""A fault's ``Retry-After`` is sent as digits a client reads, whatever its size
(``10**9`` was sent as ``1e+09``, which clients ignore), and swarmkit's provider then
waits its ``backoff_max`` rather than its plain backoff."""

from __future__ import annotations

import httpx2
import pytest

import swarmkit
from swarmkit.record.events import CallRetried
from swarmkit.testing import FakeServer, Fault, FaultRule
from swarmkit.testing.faults import seconds_text
from tests.support.fakekey import run_options

pytestmark = pytest.mark.usefixtures("fake_key")


@pytest.mark.parametrize(("seconds", "sent"), [
    (10**9, "1000000000"), (1e12, "1000000000000"), (2.5, "2.5"), (0.000123, "0.000123"),
    (3, "3"), (-1, "-1"), (float("nan"), "nan"), (float("inf"), "inf"),
])
def test_seconds_are_written_without_an_exponent(seconds: float, sent: str) -> None:
    assert seconds_text(seconds) == sent


def test_a_huge_retry_after_reaches_the_client_as_digits_and_is_clamped() -> None:
    fault = FaultRule(Fault.rate_limit(retry_after=10**9), step="worker-1", attempts=1)
    with FakeServer(plan_tasks=2, faults=[fault]) as server:
        raw = httpx2.post(f"{server.base_url}/chat/completions",
                          json={"model": "m", "messages": [{"role": "user", "content": "x"}]},
                          headers={"X-Swarm-Step": "worker-1", "X-Swarm-Attempt": "1"})
        assert raw.status_code == 429 and raw.headers["Retry-After"] == "1000000000"
        retried: list[CallRetried] = []
        sink = type("Retries", (), {"on_event": lambda self, event: retried.append(event)
                                    if isinstance(event, CallRetried) else None})()
        run = swarmkit.run_sync("task", sinks=[sink], **run_options(
            server, history=False, backoff_max=0.05, backoff_base=0.01))
    assert run.status == "completed"
    # Read as a number and clamped to backoff_max; ignored, it would have been the plain
    # backoff, at most backoff_base (0.01 s) for a first retry.
    (retry,) = retried
    assert retry.step == "worker-1" and retry.delay == pytest.approx(0.05)
