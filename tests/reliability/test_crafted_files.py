"""Crafted and damaged files: cassettes, Run JSON and history rows.

Whatever a file holds (wrong types, missing fields, ``1e400`` times, NaN, negative or
huge counts, unknown format numbers, JSON that is not an object, invalid UTF-8, a cut),
loading it gives either a record that every view, the history and a second round trip
accept, or one line from swarmkit's error tree naming the file and the field; never an
AttributeError, OverflowError, KeyError or TypeError from deep inside.
"""

from __future__ import annotations

import copy
import json
import math
import os
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from IPython.core.interactiveshell import InteractiveShell

import swarmkit
from swarmkit.api.result import Run
from swarmkit.display.history import RunDiff, RunListing
from swarmkit.errors import CassetteError, ExportError, RecordError, StoreError, SwarmError
from swarmkit.store import History
from swarmkit.store.cassette import Cassette
from swarmkit.store.replay import Player
from swarmkit.store.writethread import wait_for_writes
from swarmkit.testing import FakeServer, Fault, FaultRule, run_problems
from tests.support.fakekey import Options, swarm_line

ROOT = Path(__file__).resolve().parents[2]
FUZZ = settings(max_examples=120, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])


def _one_line(message: str) -> None:
    assert message and "\n" not in message and len(message) < 500
    assert "Traceback" not in message


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """(Run JSON, cassette text) of a real run with a retried call and a worker's failure."""
    folder = tmp_path_factory.mktemp("recorded")
    cassette = folder / "run.swarm.json"
    faults = [FaultRule(Fault.status(500), step="worker-1", attempts=1),
              FaultRule(Fault.status(400), step="worker-2")]
    with FakeServer(plan_tasks=3, faults=faults, lifetime=120) as server:
        os.environ["SWARMKIT_CRAFTED_KEY"] = "sk-crafted-files-key"
        try:
            run = swarmkit.run_sync("Compare three databases", model="gpt-4.1-mini",
                                    base_url=server.base_url, api_key_env="SWARMKIT_CRAFTED_KEY",
                                    backoff_base=0.001, backoff_max=0.01, history=False,
                                    record=str(cassette))
        finally:
            del os.environ["SWARMKIT_CRAFTED_KEY"]
    assert run.retries and any(w.status == "failed" for w in run.workers)
    return run.to_json(), cassette.read_text(encoding="utf-8")


# -- what a hostile value can be ------------------------------------------------------------

# Placeholders for JSON that json.dumps cannot write: swapped into the text afterwards.
_OVERFLOW, _HUGE_INT = "\x00overflow", "\x00huge-int"
HOSTILE = [None, True, "x", "1,127", -1, -1.5, 0.5, 10**30, 2**63, math.nan, math.inf,
           -math.inf, 1e308, [], {}, [1, 2], {"a": 1}, "\u202e", "\ud800", "NaN", "Infinity",
           _OVERFLOW, _HUGE_INT]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**30), 10**30) | st.floats() | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=24,
)


def dumps(value: Any) -> str:
    text = json.dumps(value)
    return (text.replace(json.dumps(_OVERFLOW), "1e400")
            .replace(json.dumps(_HUGE_INT), "9" * 5000))


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in a JSON document, the root included."""
    found = [prefix]
    if isinstance(value, dict):
        for key, child in value.items():
            found += paths(child, (*prefix, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            found += paths(child, (*prefix, index))
    return found


def mutate(document: Any, path: tuple[Any, ...], delete: bool, value: Any) -> Any:
    """``document`` with the value at ``path`` deleted (or replaced by ``value``)."""
    if not path:
        return value
    copied = copy.deepcopy(document)
    parent = copied
    for step in path[:-1]:
        parent = parent[step]
    if delete:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    return copied


@st.composite
def mutations(draw: st.DrawFn, text: str) -> str:
    document = json.loads(text)
    changed = document
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(paths(changed)))
        delete = bool(path) and draw(st.booleans())
        value = draw(st.sampled_from(HOSTILE) | json_values)
        changed = mutate(changed, path, delete, value)
    return dumps(changed)


# -- what a loaded file must then survive ----------------------------------------------------


def check_run(run: Run, history: History) -> None:
    """A Run that loaded renders, round-trips and goes through the history unchanged."""
    assert Run.from_json(run.to_json()) == run
    assert str(run) and run._repr_html_() and repr(run)
    assert RunDiff(run, run).text() and RunDiff(run, run).html()
    history.save(run)
    assert history.load_run(run.run_id) == run
    history.calls(run.run_id)
    history.tool_calls(run.run_id)
    assert RunListing(history.recent(1)).text()


def check_cassette(cassette: Cassette) -> None:
    assert Cassette.loads(cassette.dumps()) == cassette
    Player(cassette)
    for call in cassette.calls:
        call.chat_response()


def load(read: Callable[[str | bytes, str], Any], text: str | bytes, error: type[SwarmError],
         check: Callable[[Any], None]) -> None:
    """``read(text, source)`` gives a value that passes ``check``, or one ``error`` line
    naming the source; any other exception fails the test."""
    try:
        value = read(text, "crafted.json")
    except SwarmError as exc:
        assert isinstance(exc, error)
        _one_line(str(exc))
        assert "crafted.json" in str(exc)
        event("refused")
        return
    event("loaded")
    check(value)


def load_run(text: str | bytes, history: History) -> None:
    load(Run.from_json, text, RecordError, lambda run: check_run(run, history))


def load_cassette(text: str | bytes) -> None:
    load(Cassette.loads, text, CassetteError, check_cassette)


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Iterator[History]:
    with History(tmp_path_factory.mktemp("fuzz") / "history.db") as history:
        yield history


# -- fuzz: any JSON, and valid files with parts deleted or replaced --------------------------


@FUZZ
@given(value=json_values)
def test_any_json_value_is_a_run_or_a_record_error(value: Any, scratch: History) -> None:
    load_run(dumps(value), scratch)
    load_cassette(dumps(value))


@FUZZ
@given(text=st.text(max_size=40) | st.binary(max_size=40).map(lambda b: b))
def test_any_text_or_bytes_is_a_run_or_a_record_error(text: str | bytes, scratch: History) -> None:
    load_run(text, scratch)
    load_cassette(text)


@FUZZ
@given(data=st.data())
def test_a_damaged_run_json_loads_whole_or_is_one_line_naming_the_field(
    data: st.DataObject, recorded: tuple[str, str], scratch: History
) -> None:
    load_run(data.draw(mutations(recorded[0])), scratch)


@FUZZ
@given(data=st.data())
def test_a_damaged_cassette_loads_whole_or_is_one_line_naming_the_field(
    data: st.DataObject, recorded: tuple[str, str]
) -> None:
    load_cassette(data.draw(mutations(recorded[1])))


# -- the classes of damage, one by one ------------------------------------------------------

RUN_DAMAGE: list[tuple[str, Callable[[dict[str, Any]], Any], str]] = [
    ("wrong type", lambda r: r["calls"][0].update(attempts="3"), r"calls\[0\]\.attempts"),
    ("bool for a count", lambda r: r["workers"][0].update(calls=True), r"workers\[0\]\.calls"),
    ("missing field", lambda r: r.pop("run_id"), "run_id: missing"),
    ("missing nested field", lambda r: r["calls"][0].pop("fingerprint"),
     r"calls\[0\]\.fingerprint: missing"),
    ("1e400 time", lambda r: r["calls"][0].update(started=_OVERFLOW),
     r"calls\[0\]\.started: .*finite"),
    ("NaN latency", lambda r: r["calls"][0].update(latency=math.nan),
     r"calls\[0\]\.latency: .*finite"),
    ("negative count", lambda r: r["workers"][0]["usage"].update(prompt_tokens=-5),
     r"workers\[0\]\.usage\.prompt_tokens: .*greater than or equal to 0"),
    ("huge count", lambda r: r["calls"][0]["usage"].update(completion_tokens=2**64),
     r"calls\[0\]\.usage\.completion_tokens: .*less than"),
    ("thousands of digits", lambda r: r.update(duration=_HUGE_INT), "not JSON"),
    ("NaN cost", lambda r: r["workers"][0].update(cost_usd="NaN"),
     r"workers\[0\]\.cost_usd: .*finite amount"),
    ("a billion-digit cost", lambda r: r["calls"][0].update(cost_usd="1e999999999"),
     r"calls\[0\]\.cost_usd: .*finite amount"),
    ("unknown status", lambda r: r.update(status="exploded"), "status: Input should be"),
    ("a role that is not an object", lambda r: r["config"].update(planner="gpt"),
     r"config\.planner: .*JSON object"),
    ("a list for the config", lambda r: r.update(config=[]), "config: .*JSON object"),
    ("format from the future", lambda r: r.update(format=2),
     r"has format 2; this swarmkit reads Run JSON format 1 only \(upgrade swarmkit\)"),
    ("format zero", lambda r: r.update(format=0), "has format 0; this swarmkit reads .*format 1"),
    ("format as text", lambda r: r.update(format="1"), "has format '1'; this swarmkit reads"),
    ("no format", lambda r: r.pop("format"), "has no 'format' field; this swarmkit reads"),
]


@pytest.mark.parametrize(("damage", "says"), [(d, s) for _, d, s in RUN_DAMAGE],
                         ids=[name for name, _, _ in RUN_DAMAGE])
def test_damaged_run_json_is_a_record_error_naming_the_field(
    recorded: tuple[str, str], damage: Callable[[dict[str, Any]], Any], says: str
) -> None:
    data = json.loads(recorded[0])
    damage(data)
    with pytest.raises(RecordError, match=says) as error:
        Run.from_json(dumps(data), "past-run.json")
    _one_line(str(error.value))
    assert str(error.value).startswith("past-run.json ")
    assert isinstance(error.value, ValueError)  # what from_json raised for bad text before


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("[1, 2]", "is not a Run: a JSON object was expected, not list"),
        ('"run"', "is not a Run: a JSON object was expected, not str"),
        ("null", "not NoneType"),
        ('{"format": 1, "run_id": "a"', r"is not JSON \(line 1, column 27: EOF"),
        (b'{"format": 1, "run_id": "\xff"}', "is not JSON .*invalid unicode code point"),
        ('{"format": 1, "run_id": "\\ud800"}', "is not JSON .*hex escape"),
        ("{\"format\": 1, \"run_id\": \"\ud800\"}", "is not JSON .*surrogates not allowed"),
        ("", "is not JSON"),
    ],
)
def test_run_json_that_is_not_a_run_object_is_one_line(text: str | bytes, says: str) -> None:
    with pytest.raises(RecordError, match=says) as error:
        Run.from_json(text, "past-run.json")
    _one_line(str(error.value))


CASSETTE_DAMAGE: list[tuple[str, Callable[[dict[str, Any]], Any], str]] = [
    ("1e400 latency", lambda c: c["calls"][0].update(latency=_OVERFLOW),
     r"calls\[0\]\.latency: .*finite"),
    ("NaN start", lambda c: c["calls"][0].update(started=math.nan), r"calls\[0\]\.started"),
    ("negative attempts", lambda c: c["calls"][0].update(attempts=-1), r"calls\[0\]\.attempts"),
    ("huge occurrence", lambda c: c["calls"][0].update(occurrence=10**30),
     r"calls\[0\]\.occurrence"),
    ("usage as text", lambda c: c["calls"][0]["response"].update(usage="lots"),
     r"calls\[0\]\.response\.usage"),
    ("negative tokens", lambda c: c["calls"][0]["response"]["usage"].update(prompt_tokens=-1),
     r"calls\[0\]\.response\.usage\.prompt_tokens"),
    ("tool call without a name",
     lambda c: c["calls"][0]["response"].update(tool_calls=[{"id": "1", "arguments": "{}"}]),
     r"calls\[0\]\.response\.tool_calls\[0\]\.name: missing"),
    ("unknown source", lambda c: c["calls"][0].update(source="cloud"), r"calls\[0\]\.source"),
    ("NaN inside a request", lambda c: c["calls"][0]["request"].update(temperature=math.nan),
     r"calls\[0\]\.request: holds the number nan"),
    ("1e400 in an unknown config key", lambda c: c["run"]["config"].update(later=_OVERFLOW),
     "run: holds the number inf"),
    ("a retry with NaN delay",
     lambda c: next(x for x in c["calls"] if x["retries"])["retries"][0].update(delay=math.nan),
     r"retries\[0\]\.delay"),
    ("run without a task", lambda c: c["run"].pop("task"), r"run\.task: missing"),
    ("a role that is a list", lambda c: c["run"]["config"].update(worker=[]),
     r"run\.config\.worker"),
    ("tools is an object", lambda c: c.update(tools={}), "tools: .*JSON array"),
    ("unknown format", lambda c: c.update(swarmkit_cassette=7),
     r"format 7 .*newer than this swarmkit reads \(format 1\)"),
    ("format as a float", lambda c: c.update(swarmkit_cassette=1.0),
     r"'swarmkit_cassette' is 1\.0, not a format number \(this swarmkit reads format 1\)"),
]


@pytest.mark.parametrize(("damage", "says"), [(d, s) for _, d, s in CASSETTE_DAMAGE],
                         ids=[name for name, _, _ in CASSETTE_DAMAGE])
def test_damaged_cassette_is_a_cassette_error_naming_the_file_and_field(
    recorded: tuple[str, str], tmp_path: Path, damage: Callable[[dict[str, Any]], Any],
    says: str
) -> None:
    data = json.loads(recorded[1])
    damage(data)
    path = tmp_path / "damaged.swarm.json"
    path.write_text(dumps(data), encoding="utf-8")
    with pytest.raises(CassetteError, match=says) as error:
        Cassette.load(path)
    _one_line(str(error.value))
    assert str(path) in str(error.value)


def test_a_cassette_with_invalid_utf8_inside_a_string_is_one_line(
    recorded: tuple[str, str], tmp_path: Path
) -> None:
    raw = recorded[1].encode("utf-8").replace(b"Compare three", b"Compare \xff\xfe three", 1)
    path = tmp_path / "bytes.swarm.json"
    path.write_bytes(raw)
    with pytest.raises(CassetteError, match="binary data") as error:
        Cassette.load(path)
    _one_line(str(error.value))


# -- history rows ---------------------------------------------------------------------------


@pytest.fixture
def history_file(recorded: tuple[str, str], tmp_path: Path) -> Path:
    path = tmp_path / "history.db"
    with History(path) as history:
        history.save(Run.from_json(recorded[0]))
    return path


def _tamper(path: Path, sql: str) -> None:
    # Another program (or a crafted file) writing the rows directly, once swarmkit's own
    # background writes to the file have landed (else they could land after, undoing it).
    wait_for_writes(path)
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.execute(sql)


ROW_DAMAGE = [
    ("UPDATE runs SET duration = 'slow'", "recent", r"duration: .*number \(got 'slow'\)"),
    ("UPDATE runs SET workers = -3", "recent", "workers: .*greater than or equal to 0"),
    ("UPDATE runs SET models = '{not json'", "recent", "models: .*JSON object"),
    ("UPDATE runs SET cost_usd = 'Infinity'", "recent", "cost_usd: .*finite amount"),
    ("UPDATE runs SET run_json = '[]'", "load_run", "is not a Run"),
    ("UPDATE runs SET run_json = '{\"format\": 9}'", "load_run", "has format 9"),
    ("UPDATE runs SET run_json = x'00ff'", "load_run", "is not JSON"),
    ("UPDATE calls SET prompt_tokens = 'many'", "calls", r"row 0\): usage\.prompt_tokens"),
    ("UPDATE calls SET started = 1e308 * 10", "calls", r"started: .*finite"),
    ("UPDATE calls SET source = 'elsewhere'", "calls", "source: Input should be"),
    ("UPDATE calls SET status = 'teapot'", "calls", "status: .*integer"),
    ("INSERT INTO tool_calls VALUES ((SELECT run_id FROM runs), 0, -1, 0, 'c', 'add', '{}', "
     "NULL, NULL, 0.0, 0.1, 'live')", "tool_calls", "worker: .*greater than or equal to 0"),
    # A table laid out by another program: a column missing or renamed.
    ("ALTER TABLE runs DROP COLUMN workers", "recent", "workers: missing"),
    ("ALTER TABLE calls DROP COLUMN model", "calls", "model: missing"),
    ("ALTER TABLE calls RENAME COLUMN seq TO n", "calls", "seq"),
]


@pytest.mark.parametrize(("sql", "query", "says"), ROW_DAMAGE,
                         ids=[sql[:40] for sql, _, _ in ROW_DAMAGE])
def test_a_damaged_history_row_is_one_line_naming_the_database_and_field(
    history_file: Path, sql: str, query: str, says: str
) -> None:
    _tamper(history_file, sql)
    with History(history_file) as history:
        run_id = str(history.db.query("SELECT run_id FROM runs")[0][0])
        with pytest.raises(StoreError, match=says) as error:
            if query == "recent":
                history.recent()
            else:
                getattr(history, query)(run_id)
    _one_line(str(error.value))
    assert str(history_file) in str(error.value)


def test_a_damaged_cache_row_is_a_miss_and_the_call_goes_live(
    tmp_path: Path, options: Options
) -> None:
    path = tmp_path / "cached.db"
    with FakeServer(plan_tasks=2, lifetime=120) as server:
        first = swarmkit.run_sync("task", **options(server, cache=True, history_path=str(path)))
        _tamper(path, "UPDATE cache SET response = "
                      "json_set(response, '$.usage.prompt_tokens', 'many')")
        server.clear()
        again = swarmkit.run_sync("task", **options(server, cache=True, history_path=str(path)))
        sent = server.count()
    assert first.status == again.status == "completed"
    assert sent == len(again.calls) and {c.source for c in again.calls} == {"live"}
    assert run_problems(again) == []


def test_rows_at_the_schema_limits_fit_the_history_and_the_views(
    recorded: tuple[str, str], tmp_path: Path
) -> None:
    from swarmkit.record.fileshapes import MAX_COUNT, MAX_SECONDS

    data = json.loads(recorded[0])
    for call in data["calls"]:
        call["usage"].update(prompt_tokens=MAX_COUNT, completion_tokens=MAX_COUNT)
        call.update(latency=MAX_SECONDS, cost_usd="1000000000")
    data.update(duration=MAX_SECONDS)
    run = Run.from_json(json.dumps(data))
    with History(tmp_path / "limits.db") as history:
        check_run(run, history)
        assert history.recent(1)[0].prompt_tokens == MAX_COUNT * len(run.calls)


# -- through the magic -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ('{"swarmkit_cassette": 1, "run": {"run_id": "a", "started_at": "s", "task": "t", '
         '"duration": 1e400}, "calls": []}', r"run\.duration: .*finite"),
        ('{"swarmkit_cassette": 3, "calls": []}', r"format 3 .*reads \(format 1\)"),
        ("[1e400]", "is not a swarmkit cassette"),
        ('{"swarmkit_cassette": 1, "run": {"run_id": "a"', "is not JSON"),
    ],
)
def test_replaying_a_garbled_file_in_a_shell_prints_one_usage_line_and_no_traceback(
    shell: InteractiveShell, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    content: str, says: str
) -> None:
    path = tmp_path / "garbled.swarm.json"
    path.write_text(content, encoding="utf-8")
    line = swarm_line("http://127.0.0.1:9/v1", f"--replay {path}")
    result = shell.run_cell(f"%%swarm {line}\nsome task")
    printed = capsys.readouterr()
    shown = printed.out + printed.err
    assert "Traceback" not in shown
    lines = [line for line in shown.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("UsageError: %%swarm: CassetteError:")
    assert str(path) in lines[0]
    import re

    assert re.search(says, lines[0])
    assert result.error_in_exec is not None


def test_history_with_a_garbled_row_is_one_usage_line_in_a_shell(
    shell: InteractiveShell, history_file: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SWARMKIT_HISTORY", str(history_file))
    _tamper(history_file, "UPDATE runs SET duration = 'slow'")
    shell.run_cell("%swarm history")
    printed = capsys.readouterr()
    shown = printed.out + printed.err
    assert "Traceback" not in shown
    lines = [line for line in shown.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("UsageError: %swarm history: RecordError:")
    assert "duration" in lines[0] and str(history_file) in lines[0]


# -- export never follows a path inside the JSON ----------------------------------------------


def test_exporting_a_run_from_json_leaves_a_database_named_inside_it_untouched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Run (and the history holding its cassette) come from another process, as a
    file someone sent would; the JSON's config names that history. Export must neither
    open it (it used to, and found the cassette there) nor create or change any file."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    named = elsewhere / "their-history.db"
    with FakeServer(plan_tasks=2, lifetime=120) as server:
        env = dict(os.environ, CRAFTED_KEY="sk-crafted-files-key", PYTHONPATH=str(ROOT),
                   SWARMKIT_HISTORY=str(named))
        done = subprocess.run(
            [sys.executable, "-m", "swarmkit", "run", "task", "--model", "gpt-4.1-mini",
             "--base-url", server.base_url, "--api-key-env", "CRAFTED_KEY", "--json"],
            capture_output=True, text=True, timeout=120, env=env, check=False,
        )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    data["config"]["history_path"] = str(named)
    missing = elsewhere / "not-there.db"
    before = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in elsewhere.iterdir()}
    assert "their-history.db" in before
    with History(named) as theirs:  # the cassette is really there to be found
        assert theirs.cassette(data["run_id"]) is not None
    before = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in elsewhere.iterdir()}

    monkeypatch.chdir(tmp_path)  # the default history (./.swarmkit) does not exist
    monkeypatch.setenv("SWARMKIT_HISTORY", str(tmp_path / "mine.db"))
    for path in (named, missing):
        data["config"]["history_path"] = str(path)
        data["history_file"] = str(path)  # not a field a file can set
        run = Run.from_json(json.dumps(data))
        assert run.history_file is None
        with pytest.raises(ExportError, match="no recording of run"):
            run.export(tmp_path / "out.ipynb")
    after = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in elsewhere.iterdir()}
    assert after == before
    assert not (tmp_path / "mine.db").exists() and not (tmp_path / "out.ipynb").exists()
