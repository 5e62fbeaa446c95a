"""CallStore end to end: real openai client, real FakeServer, real SQLite, real files.

Cache (only what changed reaches the server), record -> replay byte-identical with the
server gone, ReplayMiss, failures and retries in replay, partial recordings, rerun.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import swarmkit
from swarmkit.api.entry import create_engine
from swarmkit.api.result import Run
from swarmkit.config.swarmconfig import SwarmConfig
from swarmkit.errors import ReplayMiss, StoreError
from swarmkit.provider import OpenAIProvider
from swarmkit.record.events import RunFinished, RunStarted
from swarmkit.record.modelcall import ChatRequest, ToolKey, ToolOutcome
from swarmkit.store import CallStore, Cassette, History, Player, ResponseCache, rerun_config
from swarmkit.testing import FakeReply, FakeRequest, FakeServer, Fault, FaultRule
from tests.support.fakekey import FAKE_KEY, KEY_ENV, run_options

ROOT = Path(__file__).resolve().parents[2]
TASK = "Compare five vector databases for a small team"


def closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def swarm(base_url: str, tmp_path: Path, **options: Any) -> Run:
    return swarmkit.run_sync(TASK, **run_options(base_url, **{
        "model": "fake-model", "workers": 3, "history_path": str(tmp_path / "history.db"),
        "backoff_base": 0.01, "env": {KEY_ENV: FAKE_KEY}, **options}))


def assert_same_output(replayed: Run, recorded: Run) -> None:
    assert replayed.tables().text() == recorded.tables().text()
    assert replayed.tables().html() == recorded.tables().html()
    data, metadata = recorded.tables().mime_bundle()
    replayed_data, replayed_metadata = replayed.tables().mime_bundle()
    assert replayed_data == data
    # The parameters say how each run was made (record= vs replay=, the base URL); nbval
    # does not compare metadata, and every other entry is the recording's.
    metadata["swarmkit"].pop("parameters")
    replayed_metadata["swarmkit"].pop("parameters")
    assert replayed_metadata == metadata


# -- cache ---------------------------------------------------------------------------------


def test_changed_reducer_prompt_reaches_the_server_only_for_the_reducer(
    server: FakeServer, tmp_path: Path
) -> None:
    first = swarm(server.base_url, tmp_path, cache=True)
    assert server.counts_by_step() == {"planner": 1, "worker-1": 1, "worker-2": 1,
                                       "worker-3": 1, "reducer": 1}
    assert all(call.source == "live" for call in first.calls)
    server.clear()

    second = swarm(server.base_url, tmp_path, cache=True, reducer_prompt="Merge tersely.")

    assert server.counts_by_step() == {"reducer": 1}
    sources = {call.step: call.source for call in second.calls}
    assert sources == {"planner": "cache", "worker-1": "cache", "worker-2": "cache",
                       "worker-3": "cache", "reducer": "live"}
    cached = [c for c in second.calls if c.source == "cache"]
    assert all(c.cost_usd == 0 for c in cached)
    assert "5 calls (4 cached)" in second.tables().text()
    assert "1 (1 cached)" in second.tables().text()


def test_identical_run_is_served_entirely_from_cache_and_no_cache_turns_it_off(
    server: FakeServer, tmp_path: Path
) -> None:
    swarm(server.base_url, tmp_path, cache=True)
    server.clear()
    again = swarm(server.base_url, tmp_path, cache=True)
    assert server.count() == 0
    assert again.answer == "Final answer merging 3 results"
    assert again.cost_usd == 0
    swarm(server.base_url, tmp_path, cache=False)
    assert server.count() == 5


def test_the_same_model_at_another_endpoint_is_not_served_from_the_cache(
    server: FakeServer, tmp_path: Path
) -> None:
    swarm(server.base_url, tmp_path, cache=True)
    with FakeServer(lifetime=60) as other:
        swarm(other.base_url, tmp_path, cache=True)
        assert other.count() == 5  # same model name, different endpoint: every call live
    server.clear()
    swarm(server.base_url, tmp_path, cache=True)
    assert server.count() == 0  # and the first endpoint's entries are still there


def test_cache_survives_a_process_restart(server: FakeServer, tmp_path: Path) -> None:
    swarm(server.base_url, tmp_path, cache=True)
    server.clear()
    script = (
        "import swarmkit, sys\n"
        f"run = swarmkit.run_sync({TASK!r}, base_url=sys.argv[1], api_key_env={KEY_ENV!r},"
        " model='fake-model', workers=3, history_path=sys.argv[2], cache=True)\n"
        "print(sum(c.source == 'cache' for c in run.calls))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, server.base_url, str(tmp_path / "history.db")],
        capture_output=True, text=True, timeout=60, cwd=tmp_path,
        env={"PYTHONPATH": str(ROOT), KEY_ENV: FAKE_KEY, "PATH": ""},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "5"
    assert server.count() == 0


def test_occurrence_tells_identical_requests_apart(server: FakeServer, tmp_path: Path) -> None:
    counter = itertools.count(1)
    server.handler = lambda request: f"answer {next(counter)}"
    config = SwarmConfig.from_options(**run_options(
        server, model="fake-model", cache=True, history_path=str(tmp_path / "history.db"),
        env={}))
    request = ChatRequest(model="fake-model", messages=({"role": "user", "content": "hi"},))

    async def twice() -> list[tuple[str | None, str, int]]:
        store = CallStore.from_config(
            config, env={KEY_ENV: FAKE_KEY},
            provider_factory=lambda: OpenAIProvider(config, env={KEY_ENV: FAKE_KEY}),
        )
        try:
            outcomes = [
                await store.complete(request, role=config.worker, run_id="r", step="worker-1",
                                     emit=lambda event: None, clock=lambda: 0.0)
                for _ in range(2)
            ]
        finally:
            await store.aclose()
        return [(o.response.content, o.source, o.occurrence) for o in outcomes]

    assert asyncio.run(twice()) == [("answer 1", "live", 0), ("answer 2", "live", 1)]
    assert asyncio.run(twice()) == [("answer 1", "cache", 0), ("answer 2", "cache", 1)]
    assert server.count() == 2


def test_failed_calls_are_not_cached(server: FakeServer, tmp_path: Path) -> None:
    server.add_fault(FaultRule(Fault.status(400), step="worker-2"))
    first = swarm(server.base_url, tmp_path, cache=True)
    assert first.worker(2).status == "failed"
    with History(tmp_path / "history.db") as history:
        cached = len(ResponseCache(history.db))
    assert cached == 4  # planner, two workers, reducer; never the failure
    server.clear_faults()
    server.clear()
    second = swarm(server.base_url, tmp_path, cache=True)
    assert second.worker(2).status == "completed"
    assert server.counts_by_step() == {"worker-2": 1, "reducer": 1}


# -- record and replay -----------------------------------------------------------------------


def test_record_then_replay_with_the_server_gone_is_byte_identical(tmp_path: Path) -> None:
    cassette = tmp_path / "run.swarm.json"
    with FakeServer(lifetime=60, latency=0.02) as server:
        recorded = swarm(server.base_url, tmp_path, record=str(cassette))
    assert not server.running

    replayed = swarm(closed_port_url(), tmp_path, replay=str(cassette))

    assert replayed.run_id == recorded.run_id
    assert replayed.started_at == recorded.started_at
    assert replayed.duration == recorded.duration
    assert all(call.source == "replay" for call in replayed.calls)
    assert_same_output(replayed, recorded)
    data = json.loads(cassette.read_text())
    assert data["swarmkit_cassette"] == 1 and data["swarmkit_version"] == swarmkit.__version__
    assert len(data["calls"]) == 5 and data["run"]["status"] == "completed"


def test_replay_constructs_no_provider_and_starts_no_server(tmp_path: Path) -> None:
    cassette = tmp_path / "run.swarm.json"
    with FakeServer(lifetime=60) as server:
        swarm(server.base_url, tmp_path, record=str(cassette))

    async def build() -> CallStore:
        # model "auto" with no key and no base URL would start the embedded server live.
        engine = await create_engine(replay=str(cassette), workers=3, env={})
        assert engine.config.worker.model == "fake-model"
        assert isinstance(engine.caller, CallStore)
        return engine.caller

    store = asyncio.run(build())
    assert store.provider is None and store.cache is None and store.replaying


def test_replay_reproduces_retries_failures_and_cache_hits(tmp_path: Path) -> None:
    cassette = tmp_path / "run.swarm.json"
    with FakeServer(lifetime=60, faults=[
        FaultRule(Fault.rate_limit(retry_after=0.01), step="worker-1", attempts=2),
        FaultRule(Fault.status(400), step="worker-3"),
    ]) as server:
        swarm(server.base_url, tmp_path, cache=True, workers=4)  # warms the cache
        server.clear_faults()
        server.add_fault(FaultRule(Fault.rate_limit(retry_after=0.01), step="worker-1",
                                   attempts=2))
        server.add_fault(FaultRule(Fault.status(400), step="worker-3"))
        recorded = swarm(server.base_url, tmp_path, cache=True, workers=4,
                         reducer_prompt="Merge.", record=str(cassette))
    assert recorded.worker(3).status == "failed"
    assert {c.source for c in recorded.calls} == {"cache", "live"}

    replayed = swarm(closed_port_url(), tmp_path, workers=4, reducer_prompt="Merge.",
                     replay=str(cassette))

    assert_same_output(replayed, recorded)
    assert replayed.worker(3).error == recorded.worker(3).error
    assert [c.source for c in replayed.calls if c.step == "planner"] == ["cache"]


def test_replay_of_a_retried_call_keeps_attempts_and_retry_events(tmp_path: Path) -> None:
    cassette = tmp_path / "run.swarm.json"
    with FakeServer(lifetime=60, faults=[
        FaultRule(Fault.rate_limit(retry_after=0.01), step="worker-2", attempts=2),
    ]) as server:
        recorded = swarm(server.base_url, tmp_path, record=str(cassette))
    replayed = swarm(closed_port_url(), tmp_path, replay=str(cassette))
    assert replayed.worker(2).attempts == recorded.worker(2).attempts == 3
    assert [(r.step, r.attempt) for r in replayed.retries] == [("worker-2", 1), ("worker-2", 2)]
    assert_same_output(replayed, recorded)


def test_replay_miss_names_the_step_and_the_closest_request(
    server: FakeServer, tmp_path: Path
) -> None:
    cassette = tmp_path / "run.swarm.json"
    swarm(server.base_url, tmp_path, record=str(cassette))
    with pytest.raises(ReplayMiss) as caught:
        swarm(closed_port_url(), tmp_path, replay=str(cassette), system_prompt="Be brief.")
    miss = caught.value
    assert miss.step.startswith("worker-")
    assert f"replay miss at {miss.step}" in str(miss)
    assert f"closest recorded is {miss.step} #0" in str(miss)
    assert "messages[0].content" in str(miss)
    assert "\n" not in str(miss)

    with pytest.raises(ReplayMiss, match="replay miss at reducer") as caught:
        swarm(closed_port_url(), tmp_path, replay=str(cassette), reducer_prompt="Other.")
    assert caught.value.step == "reducer"


def test_interrupted_run_still_leaves_a_partial_recording_and_history(tmp_path: Path) -> None:
    cassette = tmp_path / "run.swarm.json"

    def slow_workers(request: FakeRequest) -> FakeReply | None:
        return FakeReply(content="late", latency=30.0) if request.role == "worker" else None

    async def cancel_once_workers_are_waiting(server: FakeServer) -> Run:
        engine = await create_engine(**run_options(
            server, model="fake-model", workers=3, history_path=str(tmp_path / "history.db"),
            record=str(cassette), env={KEY_ENV: FAKE_KEY}))
        running = asyncio.create_task(engine.execute(TASK))
        for _ in range(3000):  # until every worker's request reached the server
            if server.count("worker-*") == 3:
                break
            await asyncio.sleep(0.01)
        engine.cancel("cancelled")
        try:
            return await running
        finally:
            await engine.caller.aclose()

    with FakeServer(slow_workers, lifetime=60) as server:
        run = asyncio.run(cancel_once_workers_are_waiting(server))
    assert run.status == "cancelled"
    assert {w.status for w in run.workers} == {"cancelled"}
    saved = Cassette.load(cassette)
    assert saved.run["status"] == "cancelled"
    assert [c.step for c in saved.calls] == ["planner"]
    with History(tmp_path / "history.db") as history:
        assert history.load_run(run.run_id).status == "cancelled"


def test_tools_are_executed_and_recorded_live_and_replayed_without_running(
    tmp_path: Path,
) -> None:
    cassette_path = tmp_path / "tools.swarm.json"
    key = ToolKey(step="worker-1", hop=1, name="lookup", arguments='{"id":"7"}')
    runs: list[str] = []

    async def execute() -> ToolOutcome:
        runs.append("ran")
        return ToolOutcome(result=f"order 7: shipped ({len(runs)})", error=None, duration=0.125)

    async def never() -> ToolOutcome:
        raise AssertionError("replay must not execute a tool")

    async def record() -> None:
        config = SwarmConfig.from_options(record=str(cassette_path), history=False, env={})
        store = CallStore.from_config(config, env={})
        assert store.recorder is not None
        store.recorder.on_event(RunStarted("r1", "task", {}, "2026-01-01T00:00:00+00:00"))
        await store.tool(key, execute)
        await store.tool(key, execute)  # the same call again: executed again, never cached
        store.recorder.on_event(RunFinished("completed", "answer", None, duration=1.0, t=1.0))
        await store.aclose()

    asyncio.run(record())
    assert runs == ["ran", "ran"]

    async def replay(*keys: ToolKey) -> list[ToolOutcome]:
        store = CallStore(player=Player(Cassette.load(cassette_path)))
        return [await store.tool(k, never) for k in keys]

    first, second = asyncio.run(replay(key, key))
    assert (first.result, first.duration, first.source) == (
        "order 7: shipped (1)", 0.125, "replay")
    assert second.result == "order 7: shipped (2)"
    with pytest.raises(ReplayMiss, match="replay miss at worker-2: tool call lookup"):
        asyncio.run(replay(ToolKey("worker-2", 1, "lookup", '{"id":"8"}')))


# -- rerun ---------------------------------------------------------------------------------


def test_rerun_one_worker_bills_only_that_worker_and_the_reducer(
    server: FakeServer, tmp_path: Path
) -> None:
    fresh = itertools.count(1)

    def handler(request: FakeRequest) -> str | None:
        return f"draft {next(fresh)}" if request.step == "worker-2" else None

    server.handler = handler
    first = swarm(server.base_url, tmp_path, cache=True)
    server.clear()
    with History(tmp_path / "history.db") as history:
        past = history.load_run(first.run_id[:6])
    config = rerun_config(past, 2)

    again = swarmkit.run_sync(past.task, config=config, env={KEY_ENV: FAKE_KEY})

    assert server.counts_by_step() == {"worker-2": 1, "reducer": 1}
    assert again.worker(2).output == "draft 2" and first.worker(2).output == "draft 1"
    billed = {c.step for c in again.calls if c.source == "live"}
    assert billed == {"worker-2", "reducer"}
    with pytest.raises(StoreError, match="workers 1 to 3"):
        rerun_config(past, 9)
