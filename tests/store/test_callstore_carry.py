"""``CallStore.carry``: the calls a run carries (a Plan's planner calls) are answered as
recorded, noted for the run's cassette, and handed to the engine; replay refuses them
(its cassette holds them) and a cassette gives its own only for a run of given tasks."""

from __future__ import annotations

import asyncio
from decimal import Decimal
from typing import Any

import pytest

from swarmkit.config.swarmconfig import SwarmConfig
from swarmkit.errors import StoreError
from swarmkit.record.carried import CarriedCall
from swarmkit.record.events import CallFinished, RunFinished, RunStarted
from swarmkit.record.modelcall import ChatRequest
from swarmkit.record.rows import CallRecord
from swarmkit.record.usage import Usage
from swarmkit.store import CallStore, Cassette, Player
from swarmkit.store.cassette import RecordedCall
from swarmkit.store.cassettebuilder import CassetteBuilder

_REQUEST = ChatRequest(model="gpt-4.1-mini", messages=({"role": "user", "content": "plan"},),
                       max_tokens=64, response_format={"type": "json_object"})


def _recorded(source: str = "live") -> RecordedCall:
    return RecordedCall(
        step="planner", role="planner", fingerprint=_REQUEST.fingerprint(), occurrence=0,
        request=_REQUEST.body(),
        response={"content": '{"tasks": ["a"]}', "usage": Usage(10, 5).to_dict(),
                  "tool_calls": [], "finish_reason": "stop", "model": "gpt-4.1-mini"},
        source=source, started=0.25, latency=0.5, attempts=2, cost_usd=Decimal("0.0001"))  # type: ignore[arg-type]


def _complete(store: CallStore, request: ChatRequest) -> Any:
    async def call() -> Any:
        return await store.complete(request, role=SwarmConfig().role("planner"),
                                    run_id="r", step="planner", emit=lambda event: None,
                                    clock=lambda: 9.0)
    return asyncio.run(call())


def test_a_carried_call_is_answered_as_recorded_and_noted_for_the_cassette() -> None:
    builder = CassetteBuilder()
    store = CallStore(None, recorder=builder)  # no provider: nothing may be sent
    store.carry([_recorded()])
    (carried,) = store.engine_options()["carried"]
    assert carried == CarriedCall("planner", "planner", carried.request)
    assert carried.request.fingerprint() == _REQUEST.fingerprint()
    outcome = _complete(store, carried.request)
    assert (outcome.source, outcome.started, outcome.latency, outcome.attempts) == (
        "live", 0.25, 0.5, 2)
    assert outcome.cost_recorded and outcome.cost_usd == Decimal("0.0001")
    assert outcome.response.content == '{"tasks": ["a"]}'
    # Noted for the cassette: the CallFinished the engine then emits records it.
    builder.on_event(RunStarted("r", "t", {}, "2026-01-01T00:00:00+00:00"))
    builder.on_event(CallFinished(CallRecord(
        "planner", "planner", "gpt-4.1-mini", "live", Usage(10, 5), Decimal("0.0001"),
        0.25, 0.5, 2, _REQUEST.fingerprint()), t=0.75))
    builder.on_event(RunFinished("completed", "x", None, duration=1.0, t=1.0))
    assert builder.cassette is not None
    assert [(c.step, c.source, c.response) for c in builder.cassette.calls] == [
        ("planner", "live", _recorded().response)]
    # A second identical request is not the carried one (its occurrence is 1): the store
    # would ask its provider, and has none.
    with pytest.raises(StoreError, match="no provider"):
        _complete(store, carried.request)


def test_replay_refuses_carried_calls_and_a_cassette_carries_only_given_tasks() -> None:
    run = {"run_id": "abc", "started_at": "2026-01-01T00:00:00+00:00", "task": "t",
           "duration": 1.0, "config": {"tasks": ["a"]}}
    cassette = Cassette(run=run, calls=(_recorded(),))
    assert [c.step for c in cassette.carried_calls()] == ["planner"]
    assert Cassette(run={**run, "config": {}}, calls=(_recorded(),)).carried_calls() == ()
    store = CallStore(player=Player(cassette))
    assert store.engine_options()["carried"] == cassette.carried_calls()
    with pytest.raises(StoreError, match="replay carries the calls its cassette holds"):
        store.carry([_recorded()])
