"""The SQLite history: what it stores, queries, two writers at once, corruption, no keys."""

from __future__ import annotations

import json
import logging
import sqlite3
import subprocess
import sys
from contextlib import closing
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

import swarmkit
from swarmkit.api.result import Run
from swarmkit.display import RunDiff, RunListing
from swarmkit.errors import CassetteError, StoreError
from swarmkit.record.rows import CallRecord, ToolCallRecord, WorkerRecord
from swarmkit.record.usage import Usage
from swarmkit.store import History, HistorySink
from swarmkit.testing import FakeServer
from tests.support.fakekey import FAKE_KEY, KEY_ENV, run_options

ROOT = Path(__file__).resolve().parents[2]
TASK = "Compare five vector databases for a small team"


def swarm(server: FakeServer, tmp_path: Path, task: str = TASK, **options: Any) -> Run:
    return swarmkit.run_sync(task, **run_options(server, **{
        "model": "fake-model", "workers": 3, "history_path": str(tmp_path / "history.db"),
        "env": {KEY_ENV: FAKE_KEY}, **options}))


def made_run(run_id: str, *, answer: str = "done", cost: str = "0.01") -> Run:
    call = CallRecord(step="worker-1", role="worker", model="m", source="live",
                      usage=Usage(10, 5, 0, 0, 1), cost_usd=Decimal(cost), started=0.1,
                      latency=0.2, attempts=2, fingerprint="f" * 64, error=None)
    tool = ToolCallRecord(worker=1, hop=1, call_id="c1", tool="lookup", arguments="{}",
                          result="ok", error=None, started=0.15, duration=0.01)
    worker = WorkerRecord(index=1, task="sub", status="completed", output=answer,
                          usage=call.usage, cost_usd=call.cost_usd, calls=1)
    return Run(run_id=run_id, task="task", config={"worker": {"model": "m"}},
               started_at="2026-01-01T00:00:00+00:00", status="completed", plan=["sub"],
               workers=[worker], calls=[call], tool_calls=[tool], answer=answer,
               duration=1.25)


def test_every_run_call_and_tool_call_is_stored_and_queryable(tmp_path: Path) -> None:
    with History(tmp_path / "deep" / "history.db") as history:  # folders made on first use
        history.save(made_run("aaa111"))
        history.save(made_run("bbb222", answer="other"))
        recent = history.recent(5)
        assert [r.run_id for r in recent] == ["bbb222", "aaa111"]
        assert (recent[0].calls, recent[0].prompt_tokens, recent[0].cost_usd) == (
            1, 10, Decimal("0.01"))
        loaded = history.load_run("aaa")
        assert loaded.to_dict() == made_run("aaa111").to_dict()
        assert history.calls("aaa111") == made_run("aaa111").calls
        assert history.tool_calls("bbb") == made_run("bbb222").tool_calls
        with pytest.raises(StoreError, match="no run 'zzz' in history"):
            history.load_run("zzz")
        history.save(made_run("aaa999"))
        with pytest.raises(StoreError, match=r"'aaa' is ambiguous .*give more characters"):
            history.load_run("aaa")
        assert history.cassette("aaa111") is None


def test_a_real_run_is_kept_with_its_cassette_and_survives_a_process_restart(
    server: FakeServer, tmp_path: Path
) -> None:
    run = swarm(server, tmp_path)
    script = (
        "import json, sys, swarmkit\nfrom swarmkit.store import History\n"
        "run = swarmkit.load_run(sys.argv[2], sys.argv[1])\n"
        "with History(sys.argv[1]) as h:\n"
        "    print(run.tables().text(), end='')\n"
        "    print(json.dumps([c.step for c in h.calls(sys.argv[2])]))\n"
        "    print(len(h.cassette(sys.argv[2]).calls))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "history.db"), run.run_id[:5]],
        capture_output=True, text=True, timeout=60, cwd=tmp_path,
        env={"PYTHONPATH": str(ROOT), "PATH": ""},
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "\n".join(lines[:-2]) + "\n" == run.tables().text()
    assert sorted(json.loads(lines[-2])) == sorted(c.step for c in run.calls)
    assert lines[-1] == "5"


def test_history_is_off_with_history_false_and_on_by_default(
    server: FakeServer, tmp_path: Path
) -> None:
    swarm(server, tmp_path, history=False)
    assert not (tmp_path / "history.db").exists()
    run = swarm(server, tmp_path)
    with History(tmp_path / "history.db") as history:
        assert [r.run_id for r in history.recent()] == [run.run_id]


def test_two_processes_writing_at_once_do_not_corrupt_the_database(tmp_path: Path) -> None:
    path = tmp_path / "history.db"
    script = (
        "import sys\nsys.path.insert(0, sys.argv[3])\n"
        "from tests.store.test_history import made_run\n"
        "from swarmkit.store import History, ResponseCache\n"
        "from swarmkit.record.modelcall import ChatResponse, Usage\n"
        "import pathlib, time\n"
        "h = History(sys.argv[1]); cache = ResponseCache(h.db)\n"
        "gate = pathlib.Path(sys.argv[1]).parent\n"
        "(gate / f'ready-{sys.argv[2]}').touch()\n"
        "deadline = time.monotonic() + 30\n"  # start writing together, not one after another
        "while len(list(gate.glob('ready-*'))) < 2 and time.monotonic() < deadline:\n"
        "    time.sleep(0.005)\n"
        "for i in range(40):\n"
        "    h.save(made_run(f'{sys.argv[2]}-{i}'))\n"
        "    cache.put(f'{sys.argv[2]}{i}', 0, 'm', ChatResponse('x', Usage()))\n"
        "h.close()\n"
    )
    writers = [
        subprocess.Popen([sys.executable, "-c", script, str(path), name, str(ROOT)],
                         cwd=tmp_path, stderr=subprocess.PIPE, text=True,
                         env={"PYTHONPATH": str(ROOT), "PATH": ""})
        for name in ("kernel-a", "kernel-b")
    ]
    for writer in writers:
        _, err = writer.communicate(timeout=120)
        assert writer.returncode == 0, err
    with closing(sqlite3.connect(path)) as conn, conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 80
        assert conn.execute("SELECT COUNT(*) FROM calls").fetchone()[0] == 80
        assert conn.execute("SELECT COUNT(*) FROM tool_calls").fetchone()[0] == 80
        assert conn.execute("SELECT COUNT(*) FROM cache").fetchone()[0] == 80
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_corrupt_database_gives_a_clear_error_and_reset_moves_it_aside(
    server: FakeServer, tmp_path: Path
) -> None:
    path = tmp_path / "history.db"
    path.write_bytes(b"this is not a database, it is a shopping list\n" * 200)
    with pytest.raises(StoreError) as caught:
        History(path)
    message = str(caught.value)
    assert "is corrupt" in message and f"History.reset({str(path)!r})" in message
    assert "\n" not in message
    # A run goes ahead with the history off (tests/store/test_damaged_history.py).
    assert swarm(server, tmp_path).config["history"] is False

    moved = History.reset(path)

    assert moved.name == "history.db.corrupt-1" and moved.exists() and not path.exists()
    run = swarm(server, tmp_path)
    with History(path) as history:
        assert history.load_run(run.run_id).answer == run.answer
    path.write_bytes(b"garbage" * 100)
    assert History.reset(path).name == "history.db.corrupt-2"


def _open_descriptors(path: Path) -> list[str]:
    """This process's file descriptors on ``path`` or its -wal/-shm companions."""
    names = {str(path.resolve()) + suffix for suffix in ("", "-wal", "-shm")}
    fds = Path("/proc/self/fd")
    found = []
    for fd in fds.iterdir():
        try:
            target = str(fd.readlink())
        except OSError:  # closed while listing (the listing's own descriptor)
            continue
        if target in names:
            found.append(target)
    return found


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc")
def test_a_run_the_engine_refuses_closes_the_history_it_opened(
    server: FakeServer, tmp_path: Path
) -> None:
    with pytest.raises(swarmkit.ConfigError, match="my-finetune") as caught:
        swarm(server, tmp_path, model="my-finetune", budget=1)
    # The traceback keeps every frame's locals (the store among them) alive, so an
    # unclosed connection would still hold the file here.
    assert caught.traceback
    assert (tmp_path / "history.db").exists()
    assert _open_descriptors(tmp_path / "history.db") == []


def test_a_database_from_a_newer_swarmkit_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "history.db"
    History(path).close()
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema'")
    with pytest.raises(StoreError, match=r"written by a newer swarmkit .*upgrade swarmkit"):
        History(path)


def test_a_failing_history_write_never_breaks_the_run(
    server: FakeServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    history = History(tmp_path / "other.db")
    sink = HistorySink(history)
    history.close()  # every write now fails
    with caplog.at_level(logging.WARNING, logger="swarmkit"):
        run = swarm(server, tmp_path, history=False, sinks=[sink])
    assert run.status == "completed"
    assert isinstance(sink.error, StoreError)
    warnings = [r.getMessage() for r in caplog.records if "history" in r.getMessage()]
    assert warnings == [f"swarmkit: history not saved: {sink.error}"]


def test_no_key_value_reaches_the_cassette_history_or_cache(
    server: FakeServer, tmp_path: Path
) -> None:
    cassette = tmp_path / "run.swarm.json"
    swarm(server, tmp_path, cache=True, record=str(cassette))
    swarm(server, tmp_path, cache=True, reducer_prompt="again")
    # A key pasted into the task: the cassette is refused, the run is kept out of history,
    # and responses echoing it are not cached.
    with pytest.raises(CassetteError, match=f"value of \\${KEY_ENV}") as refused:
        swarm(server, tmp_path, f"{FAKE_KEY} leaked into the prompt", cache=True,
              record=str(tmp_path / "leak.swarm.json"))
    assert refused.value.run is not None and refused.value.run.status == "completed"
    assert not (tmp_path / "leak.swarm.json").exists()
    files = [p for p in tmp_path.iterdir() if p.is_file()]
    assert {p.name for p in files} >= {"run.swarm.json", "history.db"}
    # history.db last: a -wal or -shm file may vanish while this reads (the writer's last
    # connection closing checkpoints it into history.db), and then its pages are there.
    for path in sorted(files, key=lambda p: p.name == "history.db"):
        try:
            content = path.read_bytes()
        except FileNotFoundError:
            assert path.name.startswith("history.db-"), path.name
            continue
        assert FAKE_KEY.encode() not in content, path.name
    with History(tmp_path / "history.db") as history:
        assert len(history.recent()) == 2


def test_listing_and_diff_render_text_and_html(tmp_path: Path) -> None:
    with History(tmp_path / "history.db") as history:
        assert "no runs yet" in RunListing(history.recent()).text()
        history.save(made_run("aaa111"))
        history.save(made_run("bbb222", answer="a different answer", cost="0.02"))
        listing = RunListing(history.recent(), str(history.path))
        a, b = history.load_run("aaa111"), history.load_run("bbb222")
    text = listing.text()
    assert text.splitlines()[0].startswith("2 recent runs in")
    assert "bbb222" in text and "$0.010000" in text and "2026-01-01 00:00:00" in text
    assert "<table>" in listing.html() and "aaa111" in listing.html()

    diff = RunDiff(a, b)
    text = diff.text()
    assert text.startswith("run aaa111 (A) vs run bbb222 (B)")
    assert "differs" in text and "$0.020000" in text and "a different answer" in text
    html = diff.html()
    assert html.count("<table>") == 4 and "a different answer" in html


def test_a_relative_history_path_is_kept_where_the_run_was_made_after_a_cd(
    server: FakeServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The history is written by a background thread; a %cd right after the run must not
    send the write to another folder."""
    made, elsewhere = tmp_path / "made", tmp_path / "elsewhere"
    made.mkdir()
    elsewhere.mkdir()
    monkeypatch.chdir(made)
    run = swarm(server, tmp_path, history_path=".swarmkit/history.db")
    monkeypatch.chdir(elsewhere)
    with History(made / ".swarmkit" / "history.db") as history:
        assert history.load_run(run.run_id).run_id == run.run_id
    assert not (elsewhere / ".swarmkit").exists()
