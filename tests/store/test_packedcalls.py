"""A recording run keeps its calls compressed (store/packedcalls): they read back as
the very calls recorded, and the cassette, its file, the history's copy, the export and
the replay are what they were when the calls were kept as a tuple (FakeServer, the real
openai client, real SQLite)."""

from __future__ import annotations

from decimal import Decimal
from functools import partial
from pathlib import Path
from typing import Any

import pytest

import swarmkit
from swarmkit.store import Cassette, RecordedCall
from swarmkit.store.history import History
from swarmkit.store.packedcalls import BLOCK_CALLS, RecordedCalls
from swarmkit.store.recent import recent_recording
from tests.support.fakekey import QUICK_RETRIES, run_options

options = partial(run_options, **QUICK_RETRIES)


def _call(i: int, **changes: Any) -> RecordedCall:
    fields: dict[str, Any] = {
        "step": f"worker-{i}", "role": "worker", "fingerprint": f"{i:064x}", "occurrence": 0,
        "request": {"model": "m", "messages": [{"role": "user", "content": f"task {i} ü"}],
                    "temperature": 0.25, "tools": [{"type": "function"}]},
        "response": {"content": f"answer {i}", "usage": {"prompt_tokens": i,
                                                           "completion_tokens": None},
                     "tool_calls": [], "finish_reason": "stop", "model": "m"},
        "source": "live", "started": i / 7, "latency": 0.1, "attempts": 1,
        "cost_usd": Decimal("0.000123") * i,
    }
    return RecordedCall(**{**fields, **changes})


def _odd_calls() -> list[RecordedCall]:
    """Calls with every field a recording may hold, spread over several blocks."""
    calls = [_call(i) for i in range(2 * BLOCK_CALLS + 17)]
    calls[3] = _call(3, response=None, error="HTTP 500", error_type="ProviderError",
                     status=500, attempts=3, cost_usd=Decimal(0),
                     retries=({"step": "worker-3", "attempt": 1, "error": "HTTP 500",
                               "delay": 0.5, "status": 500, "t": 1.25},))
    calls[BLOCK_CALLS] = _call(BLOCK_CALLS, cost_usd=None, source="cache")
    calls[BLOCK_CALLS + 1] = _call(BLOCK_CALLS + 1, cost_usd=Decimal("1E+1"))
    # A lone surrogate from a model's junk, a tuple where JSON would make a list, -0.0.
    calls[5] = _call(5, response={"content": "bad \udcff byte", "usage": {}},
                     request={"messages": ({"role": "user", "content": "t"},)}, started=-0.0)
    return calls


def test_the_calls_read_back_equal_in_order_by_index_and_by_slice() -> None:
    calls = _odd_calls()
    kept = RecordedCalls(calls)
    assert len(kept) == len(calls) and list(kept) == calls
    assert kept == tuple(calls) and tuple(calls) == kept and kept != tuple(calls[:-1])
    assert kept[0] == calls[0] and kept[-1] == calls[-1]
    assert kept[BLOCK_CALLS] == calls[BLOCK_CALLS]
    edge = slice(BLOCK_CALLS - 2, BLOCK_CALLS + 3)
    assert kept[edge] == tuple(calls[edge])
    assert str(kept[BLOCK_CALLS + 1].cost_usd) == "1E+1"  # not 10: as recorded
    assert isinstance(kept[5].request["messages"], tuple)
    assert str(kept[5].started) == "-0.0"
    with pytest.raises(IndexError):
        kept[len(calls)]
    sealed = kept.sealed()
    assert sealed == kept and list(sealed) == calls
    with pytest.raises(TypeError, match="sealed"):
        sealed.append(calls[0])
    kept.append(calls[0])  # the builder's own copy goes on; the sealed one does not change
    assert len(kept) == len(sealed) + 1


def test_a_call_marshal_cannot_keep_is_kept_as_it_is() -> None:
    class Opaque:
        pass

    odd = _call(1, request={"model": "m", "extra": Opaque()})
    calls = [_call(0), odd, *(_call(i) for i in range(2, BLOCK_CALLS + 3))]
    kept = RecordedCalls(calls).sealed()
    assert kept[1] is odd and list(kept) == calls


def test_the_cassette_of_calls_kept_compressed_writes_the_text_of_a_tuple_of_them() -> None:
    calls = _odd_calls()
    run = {"run_id": "r1", "started_at": "2026-01-01T00:00:00", "task": "t", "duration": 1.0}
    compact = Cassette(run=run, calls=RecordedCalls(calls).sealed(), swarmkit_version="1")
    plain = Cassette(run=run, calls=tuple(calls), swarmkit_version="1")
    assert compact.dumps() == plain.dumps()
    assert "".join(compact.json_parts()) == "".join(plain.json_parts())
    assert compact == plain


def test_a_run_of_several_blocks_records_saves_exports_and_replays_as_it_ran(
        tmp_path: Path, fake_key: str) -> None:
    history, file = tmp_path / "history.db", tmp_path / "run.swarm.json"
    tasks = [f"Name river {i}" for i in range(1, BLOCK_CALLS + 40)]
    with swarmkit.testing.FakeServer() as server:
        run = swarmkit.run_sync("Name rivers", **options(server, history_path=str(history)),
                                tasks=tasks, record=str(file))
    assert run.status == "completed" and len(run.workers) == len(tasks)
    # This process's recording, the file and the history's copy are the same cassette.
    recorded = Cassette.load(file)
    assert len(recorded.calls) == len(run.calls) == len(tasks) + 1
    in_memory = recent_recording(run.run_id)
    assert in_memory is not None and in_memory == recorded
    with History(history) as kept:
        saved = kept.cassette(run.run_id)
    assert saved == recorded and saved.dumps() == recorded.dumps()
    replayed = swarmkit.run_sync("Name rivers", replay=str(file), history=False)
    assert str(replayed) == str(run) and replayed._repr_html_() == run._repr_html_()
