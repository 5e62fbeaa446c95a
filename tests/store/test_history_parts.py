"""A large run and its cassette go to the history in parts (json_parts): read back equal,
saved again without stale parts, scanned for keys across part boundaries, and a run saved
whole by an earlier swarmkit still reads."""

from __future__ import annotations

import json
import sqlite3
from decimal import Decimal
from pathlib import Path

import pytest

from swarmkit.credentials.secrets import find_secret_in_chunks
from swarmkit.errors import CassetteError, StoreError
from swarmkit.record.jsontext import chunks
from swarmkit.record.rows import CallRecord, WorkerRecord
from swarmkit.record.runrecord import RunRecord
from swarmkit.record.usage import Usage
from swarmkit.store import Cassette, History, RecordedCall
from swarmkit.store.history import PART_CHARS
from swarmkit.store.recent import IN_MEMORY_CALLS, recent_recording, remember_recording
from swarmkit.store.writethread import wait_for_writes

KEY_ENV = "SWARMKIT_PARTS_TEST_KEY"
KEY = "sk-parts-test-RECOGNISABLE-0123456789"
SECRETS = {KEY_ENV: KEY}


def large_run(run_id: str, workers: int, output: str = "an answer with ünïcode") -> RunRecord:
    """A run whose JSON is several parts long."""
    usage = Usage(120, 30, 0, 0, 1, Decimal("0.0001"))
    calls = [CallRecord(step=f"worker-{i}", role="worker", model="m", source="live",
                        usage=usage, cost_usd=Decimal("0.0001"), started=i / 1000,
                        latency=0.1, attempts=1, fingerprint=f"{i:064x}", error=None)
             for i in range(1, workers + 1)]
    records = [WorkerRecord(index=i, task=f"sub-task {i}", status="completed",
                            output=f"{output} {i}", usage=usage, cost_usd=usage.cost, calls=1)
               for i in range(1, workers + 1)]
    return RunRecord(run_id=run_id, task="a large task", config={"worker": {"model": "m"}},
                     started_at="2026-12-01T00:00:00+00:00", status="completed",
                     plan=[w.task for w in records], workers=records, calls=calls,
                     answer="merged", duration=12.5)


def large_cassette(run: RunRecord) -> Cassette:
    calls = tuple(
        RecordedCall(step=c.step, role=c.role, fingerprint=c.fingerprint, occurrence=0,
                     request={"model": "m", "messages": [{"role": "user", "content": w.task}]},
                     response={"content": w.output, "usage": {"prompt_tokens": 120}},
                     source="live", started=c.started, latency=c.latency, attempts=1,
                     cost_usd=c.cost_usd)
        for c, w in zip(run.calls, run.workers, strict=True))
    return Cassette(run={"run_id": run.run_id, "started_at": run.started_at, "task": run.task,
                         "duration": run.duration, "status": "completed"},
                    calls=calls, swarmkit_version="test")


def part_counts(path: Path) -> dict[str, int]:
    conn = sqlite3.connect(path)
    try:
        return dict(conn.execute("SELECT kind, count(*) FROM json_parts GROUP BY kind"))
    finally:
        conn.close()


def test_the_parts_are_the_text_of_the_whole() -> None:
    run = large_run("r1", 50)
    assert "".join(run.json_parts()) == run.to_json(indent=None)
    cassette = large_cassette(run)
    assert "".join(cassette.json_parts()) == cassette.dumps(indent=None)
    empty = RunRecord("r0", "t")
    assert "".join(empty.json_parts()) == empty.to_json(indent=None)
    given = {"tasks": [f"task {i}: ünïcode \"quoted\"" for i in range(200)], "nested": {
        "empty": {}, "numbers": {1: "int key"}, "list": [], "tuple": tuple(range(100)),
        "floats": [0.1, 1e300, -0.0] * 30, "none": None}}
    configured = RunRecord("r2", "t", config=given)
    assert "".join(configured.json_parts()) == configured.to_json(indent=None)
    assert list(chunks(iter(()), 10)) == [""]
    assert list(chunks(iter(["ab", "cd", "e"]), 3)) == ["abcd", "e"]
    assert list(chunks(iter(["abc"]), 3)) == ["abc"]


def test_a_large_run_and_its_cassette_are_saved_in_parts_and_load_back_equal(
    tmp_path: Path,
) -> None:
    run = large_run("big111", 3000)
    cassette = large_cassette(run)
    assert len(run.to_json(indent=None)) > 3 * PART_CHARS  # else this tests no parts
    path = tmp_path / "history.db"
    with History(path) as history:
        history.save_later(run, SECRETS)
        history.save_cassette_later(cassette, SECRETS)
    wait_for_writes(path)
    counts = part_counts(path)
    assert counts["run"] >= 3 and counts["cassette"] >= 3
    with History(path) as history:
        loaded = history.load_run("big")
        assert loaded == run and loaded.to_dict() == run.to_dict()
        assert history.calls("big111") == run.calls
        assert history.cassette("big111") == cassette
        [summary] = history.recent(1)
        assert (summary.workers, summary.calls, summary.prompt_tokens) == (3000, 3000, 360000)
        assert summary.cost_usd == Decimal("0.3")


def test_saving_a_run_again_replaces_its_parts(tmp_path: Path) -> None:
    path = tmp_path / "history.db"
    with History(path) as history:
        history.save(large_run("again1", 3000))
        assert part_counts(path)["run"] >= 3
        small = large_run("again1", 2)  # the plan's save, then the end's: no stale parts
        history.save(small)
        assert part_counts(path) == {}
        assert history.load_run("again1") == small


def test_a_key_in_a_later_part_refuses_the_whole_save(tmp_path: Path) -> None:
    run = large_run("leak11", 3000)
    run.workers[-1] = WorkerRecord(index=3000, task="t", status="completed",
                                   output=f"the key is {KEY}", usage=Usage(), calls=1)
    text = run.to_json(indent=None)
    assert text.index(KEY) > PART_CHARS  # not in part 0
    path = tmp_path / "history.db"
    errors: list[StoreError] = []
    with History(path) as history:
        history.save(large_run("kept11", 1))
        with pytest.raises(StoreError, match=rf"run leak11 not saved .*value of \${KEY_ENV}"):
            history.save(run, SECRETS)
        history.save_later(run, SECRETS, errors.append)
        history.save_cassette_later(large_cassette(run), SECRETS, errors.append)
    wait_for_writes(path)
    assert [type(e) for e in errors] == [StoreError, CassetteError]
    assert "cassette of run leak11 not saved" in str(errors[1])
    assert part_counts(path) == {}  # nothing of the refused run, not even its first parts
    with History(path) as history:
        assert [s.run_id for s in history.recent(5)] == ["kept11"]
    assert KEY.encode() not in path.read_bytes()


@pytest.mark.parametrize("cut", range(1, len(KEY)))
def test_a_key_split_across_two_parts_is_found(cut: int) -> None:
    parts = ["x" * 50 + KEY[:cut], KEY[cut:] + "y" * 50]
    with pytest.raises(StoreError, match=rf"\${KEY_ENV}"):
        list(find_secret_in_chunks(parts, SECRETS, lambda what: StoreError(what)))
    escaped = json.dumps(KEY)[1:-1]
    assert list(find_secret_in_chunks(["a" * 10, "b" * 10], SECRETS, StoreError)) == [
        "a" * 10, "b" * 10]
    assert escaped == KEY  # a plain key: the raw and the escaped forms are one


def test_a_key_with_escaped_characters_split_across_parts_is_found() -> None:
    key = 'pass"word\\with-quotes-0123'
    escaped = json.dumps(key)[1:-1]
    secrets = {"the password in the worker base_url": key}
    for cut in range(1, len(escaped)):
        parts = ["x" * 5 + escaped[:cut], escaped[cut:]]
        with pytest.raises(StoreError, match="the password in the worker base_url"):
            list(find_secret_in_chunks(parts, secrets, StoreError))


def test_a_large_recording_the_history_keeps_is_read_back_from_it(tmp_path: Path) -> None:
    path = tmp_path / "history.db"
    run = large_run("rec111", IN_MEMORY_CALLS + 1)
    cassette = large_cassette(run)
    with History(path) as history:
        history.save(run)
        history.save_cassette_later(cassette, SECRETS)
        remember_recording(cassette, path)
    found = recent_recording("rec111")
    assert found == cassette and found is not cassette  # read back, not kept
    small = large_cassette(large_run("rec222", IN_MEMORY_CALLS))
    remember_recording(small, path)
    assert recent_recording("rec222") is small  # small enough to keep
    unsaved = large_cassette(large_run("rec333", IN_MEMORY_CALLS + 1))
    remember_recording(unsaved, path)  # its save refused or failed: no recording
    assert recent_recording("rec333") is None
    remember_recording(unsaved, tmp_path / "gone.db")
    assert recent_recording("rec333") is None and not (tmp_path / "gone.db").exists()
    remember_recording(unsaved)  # no history: kept whatever its size
    assert recent_recording("rec333") is unsaved
