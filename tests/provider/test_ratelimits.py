"""Rate limits end to end: the real openai client against FakeServer's per-key limits.

FakeServer enforces ``rpm_limit`` requests (and ``tpm_limit`` tokens) per key over a
sliding ``window``; these tests shorten the window to a second or two and give swarmkit
the same limit over the same ``rate_window``, so "60 RPM" is 60 requests per window.
Every assertion counts requests, 429s or events; none times anything.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from typing import Any

import pytest

import swarmkit
from swarmkit.api.result import Run
from swarmkit.config.swarmconfig import RoleConfig, SwarmConfig
from swarmkit.engine.worker import start_delay
from swarmkit.provider.ratelimits import RateLimits, ideal_wall_time
from swarmkit.record.events import (
    CallFinished,
    ConcurrencyChanged,
    Event,
    RateLimitWait,
)
from swarmkit.record.modelcall import ChatRequest, worst_case_tokens
from swarmkit.testing import FakeReply, FakeRequest, FakeServer
from tests.support.events import Events
from tests.support.fakekey import FAKE_KEY, KEY_ENV, run_options, swarm_line


def swarm(
    server: FakeServer, *, env: dict[str, str] | None = None, **extra: Any
) -> tuple[Run, Events]:
    sink = Events()
    options = run_options(server, **{
        "model": "fake-model", "workers": 100, "concurrency": 20, "max_attempts": 8,
        "backoff_base": 0.05, "backoff_max": 5.0, "call_timeout": 10.0, **extra})
    run = asyncio.run(
        swarmkit.run("a wide task", sinks=[sink], env=env or {KEY_ENV: FAKE_KEY}, **options)
    )
    return run, sink


def completed_workers(run: Run) -> int:
    return sum(1 for w in run.workers if w.status == "completed")


def test_a_hundred_workers_under_the_matching_rpm_get_no_429() -> None:
    # 60 requests per 2 s window; the run makes 102 (planner, 100 workers, reducer): one
    # reducer call, though fake-model's context is unknown (the default would merge 100
    # outputs in parts).
    with FakeServer(plan_tasks=100, latency=0.01, rpm_limit=60, window=2.0) as server:
        run, sink = swarm(server, rpm=60, rate_window=2.0, reducer_max_input_tokens=10**6)
        rejected, total = server.rejected_429, len(server.requests)
    assert run.status == "completed"
    assert completed_workers(run) == 100
    assert total == 102
    assert rejected == 0
    # The limit was binding: some calls waited for the window, and said so.
    waits = sink.of(RateLimitWait)
    assert any(e.waiting for e in waits)
    assert Counter(e.waiting for e in waits)[True] == Counter(e.waiting for e in waits)[False]


def test_without_rpm_adaptive_concurrency_keeps_429s_to_a_small_fraction() -> None:
    with FakeServer(plan_tasks=100, latency=0.01, rpm_limit=60, window=2.0) as server:
        run, sink = swarm(server)
        rejected, total = server.rejected_429, len(server.requests)
    print(f"\nno rpm, adaptive concurrency: {rejected} of {total} requests got a 429")
    assert run.status == "completed"
    assert completed_workers(run) == 100
    assert rejected > 0  # the server did push back ...
    # ... and the swarm backed off instead of storming: at most the calls already in flight
    # when the first 429 came back, then a few while it ramps up after the pause.
    assert rejected <= total * 0.25
    changes = sink.of(ConcurrencyChanged)
    assert changes and changes[0].reason == "429" and changes[0].limit == 10
    assert all(e.endpoint == server.base_url and 1 <= e.limit <= 20 for e in changes)


def test_without_rpm_or_adaptive_concurrency_the_storm_is_bigger() -> None:
    """The comparison that shows what the adaptive gate buys (counts printed)."""
    with FakeServer(plan_tasks=100, latency=0.01, rpm_limit=60, window=2.0) as server:
        run, sink = swarm(server, adaptive_concurrency=False)
        rejected, total = server.rejected_429, len(server.requests)
    print(f"\nno rpm, fixed concurrency: {rejected} of {total} requests got a 429")
    assert completed_workers(run) == 100
    assert not sink.of(ConcurrencyChanged)
    assert rejected > 0


def long_answers(request: FakeRequest) -> FakeReply | None:
    """Answers at least four times max_tokens long, so every completion is capped at
    max_tokens: then the usage swarmkit settles to equals what FakeServer counted."""
    if request.role == "worker":
        return FakeReply(content="word " * 8)
    return None


def test_the_matching_tpm_gets_no_429() -> None:
    # FakeServer counts prompt chars / 4 + max_tokens per request: ~66 for a worker here
    # (so 60 workers need two windows; without tpm this run meets 429s), and ~1430 for
    # the reducer, which reads every worker's output.
    with FakeServer(
        long_answers, plan_tasks=60, latency=0.01, tpm_limit=2500, window=1.0
    ) as server:
        run, sink = swarm(server, workers=60, max_tokens=8, tpm=2500, rate_window=1.0)
        rejected, total = server.rejected_429, len(server.requests)
    assert run.status == "completed"
    assert completed_workers(run) == 60
    assert total == 62
    assert rejected == 0
    assert any(e.waiting for e in sink.of(RateLimitWait))


def test_two_keys_split_the_calls_and_only_their_names_are_recorded() -> None:
    env = {"KEY_A": "sk-limits-A-SECRET", "KEY_B": "sk-limits-B-SECRET"}
    with FakeServer(plan_tasks=60, latency=0.01, rpm_limit=20, window=1.0) as server:
        run, sink = swarm(
            server, env=env, api_key_env="KEY_A,KEY_B", workers=60, rpm=20, rate_window=1.0
        )
        seen = Counter(r.authorization for r in server.requests)
        rejected = server.rejected_429
    assert run.status == "completed" and completed_workers(run) == 60
    assert rejected == 0  # each key stayed under its own limit
    assert set(seen) == {"Bearer sk-limits-A-SECRET", "Bearer sk-limits-B-SECRET"}
    share = seen["Bearer sk-limits-A-SECRET"] / sum(seen.values())
    assert 0.35 <= share <= 0.65
    recorded = run.to_json() + repr(sink.events) + json.dumps(run.config)
    for value in env.values():
        assert value not in recorded
    assert run.config["worker"]["api_key_env"] == ["KEY_A", "KEY_B"]


# -- the pieces -------------------------------------------------------------------------------


def test_admission_settles_tpm_to_real_usage_and_refunds_a_429() -> None:
    config = SwarmConfig.from_options(env={}, rpm=10, tpm=1000, rate_window=60)
    limits = RateLimits(config)
    events: list[Event] = []

    async def scenario() -> tuple[int, int, int, int]:
        def admit() -> Any:
            return limits.admit("http://x/v1", ["K"], 600, step="worker-1",
                                emit=events.append, clock=lambda: 0.0)

        first = await admit()
        from swarmkit.provider.ratelimits import _windows

        key = _windows("http://x/v1", "K")
        assert key.tpm is not None and key.rpm is not None
        reserved = key.tpm.used
        first.succeeded(150, events.append, lambda: 0.0)
        settled = key.tpm.used
        second = await admit()
        second.failed(429, events.append, lambda: 0.0)
        return reserved, settled, key.tpm.used, key.rpm.used

    reserved, settled, after_429, requests = asyncio.run(scenario())
    assert (reserved, settled, after_429) == (600, 150, 150)
    assert requests == 1  # the refused request is not counted
    assert [(e.limit, e.reason) for e in events if isinstance(e, ConcurrencyChanged)] == [
        (config.concurrency // 2, "429")
    ]


def test_worst_case_tokens_is_what_the_budget_reserves() -> None:
    request = ChatRequest(model="m", messages=({"role": "user", "content": "hi"},))
    role = RoleConfig(model="m", max_tokens=50)
    assert worst_case_tokens(request, role) == request.prompt_token_bound() + 50
    capped = ChatRequest(model="m", messages=request.messages, max_tokens=7)
    assert worst_case_tokens(capped, role) == request.prompt_token_bound() + 7


@pytest.mark.parametrize(
    ("options", "delays"),
    [
        ({}, [0.0, 0.0, 0.0, 0.0, 0.0]),  # unlimited: no jitter, no lost wall time
        ({"rpm": 60}, [0.0, 0.0625, 0.125, 0.1875, 0.0]),
        ({"tpm": 10_000, "start_jitter": 0.1}, [0.0, 0.025, 0.05, 0.075, 0.0]),
        ({"start_jitter": 0.2}, [0.0, 0.05, 0.1, 0.15, 0.0]),  # explicit: always applied
        ({"rpm": 60, "start_jitter": 0}, [0.0] * 5),
    ],
)
def test_start_delay_spreads_only_the_first_wave(
    options: dict[str, Any], delays: list[float]
) -> None:
    config = SwarmConfig.from_options(env={}, concurrency=4, **options)
    assert [start_delay(config, i) for i in range(1, 6)] == pytest.approx(delays)


def test_ideal_wall_time() -> None:
    # 100 calls at 60 per window: one full window, then the second wave's latency.
    assert ideal_wall_time(100, limit=60, window=2.0, latency=0.1) == pytest.approx(2.1)
    assert ideal_wall_time(60, limit=60, window=60.0, latency=1.0) == pytest.approx(1.0)
    # Without a binding rate, concurrency decides: 100 calls, 20 at a time, 0.1 s each.
    assert ideal_wall_time(100, limit=10_000, latency=0.1, concurrency=20) == pytest.approx(0.5)
    assert ideal_wall_time(0, limit=60) == 0.0


def test_each_call_finishes_once_under_limits() -> None:
    with FakeServer(plan_tasks=10, latency=0.0, rpm_limit=5, window=0.5) as server:
        run, sink = swarm(server, workers=10, concurrency=10, rpm=5, rate_window=0.5)
        assert server.rejected_429 == 0
    assert run.status == "completed"
    assert len(sink.of(CallFinished)) == 12


def test_rate_options_are_validated() -> None:
    with pytest.raises(swarmkit.ConfigError, match="rate_window"):
        SwarmConfig.from_options(env={}, rate_window=0)
    with pytest.raises(swarmkit.ConfigError, match="start_jitter"):
        SwarmConfig.from_options(env={}, start_jitter=1.5)


def test_the_cli_takes_rpm_and_tpm(fake_key: str, capsys: pytest.CaptureFixture[str]) -> None:
    from swarmkit.cli.command import main

    with FakeServer(plan_tasks=3, rpm_limit=100, window=60.0) as server:
        line = swarm_line(server, "--rpm 100 --tpm 100000 --json", model="fake-model")
        code = main(["run", "three things", *line.split()])
        assert server.rejected_429 == 0
    assert code == 0
    config = json.loads(capsys.readouterr().out)["config"]
    assert (config["rpm"], config["tpm"], config["rate_window"]) == (100.0, 100000.0, 60.0)
