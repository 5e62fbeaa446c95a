"""A key must appear in nothing swarmkit writes, shows or raises: not even 8 characters of it.

Every test uses a fresh random key, set in the environment and really sent (FakeServer
sees it). The server echoes it back the ways real gateways and relays do: in error bodies
(``Bearer``, raw, ``x-api-key:``/``api-key:`` headers, ``Basic`` base64 of ``user:key``),
cut across the 200-character limit of an error message, and inside successful replies.
Then every file the run produced (cassette, history database with its WAL, logs,
``.swarmkit/``, an exported notebook), the Run's JSON and tables, every event's repr,
every error message and every displayed output is searched for any 8 characters of it.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

import swarmkit
from swarmkit.api.result import Run
from swarmkit.errors import ConfigError
from swarmkit.record.events import Event
from swarmkit.store.writethread import wait_for_writes
from swarmkit.testing import FakeReply, FakeRequest, FakeServer, Fault, FaultRule, default_reply
from swarmkit.tools import tool
from tests.support.fakekey import run_options, swarm_line

KEY_ENV = "SWARMKIT_CANARY_KEY"
FRAGMENT = 8  # the shortest piece of a key that counts as a leak


def fragments(secret: str) -> set[str]:
    """Every piece of ``secret`` of FRAGMENT characters (a longer piece holds one)."""
    return {secret[i:i + FRAGMENT] for i in range(len(secret) - FRAGMENT + 1)}


def leaks(texts: list[str], *secret_values: str) -> list[str]:
    """The fragments of any ``secret_values`` found in any of ``texts``."""
    pieces = set().union(*(fragments(s) for s in secret_values))
    return sorted({p for text in texts for p in pieces if p in text})


def files_leaking(folder: Path, *secret_values: str) -> list[str]:
    wait_for_writes()  # the history is written in the background
    pieces = [p.encode() for p in set().union(*(fragments(s) for s in secret_values))]
    found = []
    for path in sorted(folder.rglob("*")):
        try:
            data = path.read_bytes() if path.is_file() else b""
        except FileNotFoundError:  # SQLite's -shm/-wal, removed as the database closed
            continue
        if any(p in data for p in pieces):
            found.append(str(path.relative_to(folder)))
    return found


def basic(user: str, password: str) -> str:
    return base64.b64encode(f"{user}:{password}".encode()).decode()


@pytest.fixture
def key(monkeypatch: pytest.MonkeyPatch) -> str:
    value = f"sk-canary-{secrets.token_hex(20)}"
    monkeypatch.setenv(KEY_ENV, value)
    return value


class Echo:
    """Answers normally, except that chosen steps get errors echoing the key in every form."""

    def __call__(self, request: FakeRequest) -> FakeReply | Fault:
        auth = request.headers.get("authorization", "")
        key = auth.removeprefix("Bearer ")
        if request.step == "worker-1":  # permanent 401; the key straddles the 200-char cut
            body = {"error": {"message": "x" * 185 + f" key: {key}",
                              "type": "invalid_request_error", "code": "invalid_api_key"}}
            return Fault.status(401, body=json.dumps(body))
        if request.step == "worker-2" and request.attempt == 1:  # a proxy's HTML page
            return Fault.status(502, body=f"<html><title>502 {auth}</title></html>")
        if request.step == "worker-3" and request.attempt == 1:  # headers echoed as text
            return Fault.status(500, body=f"upstream failed; x-api-key: {key}\napi-key: {key}")
        if request.step == "worker-5" and request.attempt == 1:
            return Fault.status(500, body=json.dumps(
                {"error": f"rejected Authorization: Basic {basic('team', key)}"}))
        if request.step == "reducer" and request.attempt == 1:
            return Fault.status(503, body=json.dumps({"error": f"overloaded ({auth})"}))
        if request.step == "worker-4" and not any(m.get("role") == "tool"
                                                  for m in request.messages):
            return FakeReply(tool_calls=[("lookup", {"order_id": "A-17"})])
        return default_reply(request, plan_tasks=5)


@tool
def lookup(order_id: str) -> dict[str, str]:
    """Look up an order by its id."""
    return {"order_id": order_id, "status": "shipped"}


class Reprs:
    """A sink that keeps the repr of every event."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    def on_event(self, event: Event) -> None:
        self.texts.append(repr(event))


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """cwd is a fresh folder with the default history (.swarmkit/) and a debug log."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SWARMKIT_HISTORY", raising=False)
    handler = logging.FileHandler(tmp_path / "debug.log", encoding="utf-8")
    handler.setLevel(logging.DEBUG)
    root = logging.getLogger()
    old_level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)  # every library's debug output, the SDK's included
    try:
        yield tmp_path
    finally:
        root.removeHandler(handler)
        root.setLevel(old_level)
        handler.close()


def texts_of(run: Run) -> list[str]:
    texts = [run.to_json(), repr(run), str(run), run._repr_html_(), run.tables().text()]
    texts += [w.error or "" for w in run.workers] + [w.output or "" for w in run.workers]
    texts += [c.error or "" for c in run.calls]
    texts += [r.error for r in run.retries]
    texts += [run.error or "", run.answer or ""]
    return texts


def shown(captured: object) -> list[str]:
    texts = [captured.stdout, captured.stderr]  # type: ignore[attr-defined]
    for output in captured.outputs:  # type: ignore[attr-defined]
        texts += [str(value) for value in output.data.values()]
    return texts


def test_the_key_in_every_error_form_appears_in_no_file_run_event_or_error(
    workdir: Path, key: str
) -> None:
    reprs = Reprs()
    with FakeServer(Echo()) as server:
        run = swarmkit.run_sync("Summarise five things", **run_options(
            server, key_env=KEY_ENV, backoff_base=0.001, backoff_max=0.01, max_attempts=3,
            record="run.swarm.json", sinks=[reprs], tools=[lookup]))
        sent = {r.authorization for r in server.requests}
    assert sent == {f"Bearer {key}"}  # the key really was used, and echoed back
    assert run.status == "partial"  # worker 1 failed for good; the rest retried and passed
    failed = run.worker(1)
    assert failed.error is not None and "HTTP 401" in failed.error
    assert " key: [redacte…" in failed.error  # scrubbed first, then cut at 200 characters
    assert f"${KEY_ENV}" in failed.error  # names, not values
    assert {r.step for r in run.retries} >= {"worker-2", "worker-3", "worker-5", "reducer"}
    assert [(t.tool, t.error) for t in run.tool_calls] == [("lookup", None)]
    assert all("[redacted]" in r.error for r in run.retries if r.step != "worker-1")
    # The files: cassette, history database (and its WAL), the debug log, .swarmkit/.
    assert (workdir / "run.swarm.json").exists() and (workdir / ".swarmkit").is_dir()
    assert (workdir / "debug.log").stat().st_size > 0
    assert files_leaking(workdir, key, basic("team", key)) == []
    assert leaks([*texts_of(run), *reprs.texts], key, basic("team", key)) == []
    assert KEY_ENV in run.to_json()  # the variable's name is what a run keeps


def test_the_key_appears_in_no_magic_output_or_file(
    workdir: Path, shell: InteractiveShell, key: str
) -> None:
    with FakeServer(Echo()) as server:
        line = swarm_line(server, "--record magic.swarm.json --out canary_run --tools lookup",
                          key_env=KEY_ENV)
        shell.user_ns["lookup"] = lookup
        with capture_output() as captured:
            shell.run_cell_magic("swarm", line, "Summarise five things")
            shell.run_line_magic("swarm", "history")
            shell.run_line_magic("swarm", "last")
    run = shell.user_ns["canary_run"]
    assert isinstance(run, Run) and run.worker(1).status == "failed"
    assert len(run.tool_calls) == 1
    assert len("".join(shown(captured))) > 0
    assert leaks([*shown(captured), *texts_of(run)], key, basic("team", key)) == []
    assert files_leaking(workdir, key, basic("team", key)) == []


def relay(request: FakeRequest) -> FakeReply:
    """A relay that echoes the key in its successful replies: a worker's and the
    reducer's (streamed in 12-character pieces, so the key is split across them)."""
    key = request.headers.get("authorization", "").removeprefix("Bearer ")
    if request.step == "worker-1":
        return FakeReply(content=f"debug: Authorization: Bearer {key}; raw {key}")
    if request.step == "reducer":
        return FakeReply(content=f"Merged. (relay note: your key is {key}, keep it safe)")
    return default_reply(request, plan_tasks=2)


def test_a_reply_that_echoes_the_key_is_scrubbed_from_run_history_and_cassette(
    workdir: Path, key: str
) -> None:
    reprs = Reprs()
    with FakeServer(relay) as server:
        run = swarmkit.run_sync("Summarise two things", **run_options(
            server, key_env=KEY_ENV, record="echo.swarm.json", sinks=[reprs]))
    assert run.status == "completed"
    streamed = [e for e in reprs.texts if e.startswith("ReducerDelta(")]
    assert len(streamed) > 1  # the live view got the answer in pieces, scrubbed as they came
    assert run.worker(1).output == "debug: Authorization: Bearer [redacted]; raw [redacted]"
    assert run.answer == "Merged. (relay note: your key is [redacted], keep it safe)"
    assert (workdir / "echo.swarm.json").exists()  # written, because it holds no key now
    assert leaks([*texts_of(run), *reprs.texts], key) == []
    assert files_leaking(workdir, key) == []
    # The scrubbed cassette replays the same run.
    again = swarmkit.run_sync("Summarise two things", model="gpt-4.1-mini",
                              replay="echo.swarm.json", history=False)
    assert again.answer == run.answer and again.tables().text() == run.tables().text()


def test_a_reply_that_echoes_the_key_is_not_in_the_cell_output(
    workdir: Path, shell: InteractiveShell, key: str
) -> None:
    """text/plain and text/html are what the .ipynb saves."""
    with FakeServer(relay) as server, capture_output() as captured:
        shell.run_cell_magic("swarm", swarm_line(server, "--out relayed", key_env=KEY_ENV),
                             "Summarise two things")
    run = shell.user_ns["relayed"]
    assert "[redacted]" in (run.answer or "")
    bundles = [o.data for o in captured.outputs]
    assert any("text/html" in b and "text/plain" in b for b in bundles)
    assert leaks(shown(captured), key) == []
    assert files_leaking(workdir, key) == []


def test_a_tool_result_holding_the_key_is_scrubbed_before_it_is_cut(
    workdir: Path, key: str
) -> None:
    @tool
    def env_dump(name: str) -> str:
        """A careless tool that reads the environment (its result is cut at 100 chars)."""
        return "x" * 90 + os.environ.get(name, "")

    def model(request: FakeRequest) -> FakeReply:
        if request.step == "worker-1" and not any(m.get("role") == "tool"
                                                  for m in request.messages):
            return FakeReply(tool_calls=[("env_dump", {"name": KEY_ENV})])
        return default_reply(request, plan_tasks=2)

    with FakeServer(model) as server:
        run = swarmkit.run_sync("Summarise two things", **run_options(
            server, key_env=KEY_ENV, record="tool.swarm.json", tools=[env_dump],
            max_tool_result_chars=100))
        sent_back = [m.get("content", "") for r in server.requests
                     for m in r.body.get("messages", []) if m.get("role") == "tool"]
    assert run.status == "completed"
    assert [t.result for t in run.tool_calls] == ["x" * 90 + "[redacted]"]
    assert sent_back == ["x" * 90 + "[redacted]"]  # the model got the same clean text
    assert leaks([*texts_of(run), *sent_back], key) == []
    assert files_leaking(workdir, key) == []


@pytest.mark.kernel
def test_an_exported_notebook_and_its_cassette_hold_no_key(workdir: Path, key: str) -> None:
    def both(request: FakeRequest) -> FakeReply | Fault:
        reply = Echo()(request)
        return relay(request) if request.step == "reducer" and request.attempt > 1 else reply

    with FakeServer(both) as server:
        run = swarmkit.run_sync("Summarise five things", **run_options(
            server, key_env=KEY_ENV, backoff_base=0.001, backoff_max=0.01, max_attempts=3,
            tools=[lookup]))
    assert run.worker(1).status == "failed" and len(run.tool_calls) == 1
    assert "[redacted]" in (run.answer or "")
    result = run.export(workdir / "canary.ipynb")
    notebook = json.loads(result.notebook.read_text(encoding="utf-8"))
    outputs = [o for c in notebook["cells"] for o in c.get("outputs", [])]
    assert outputs and "[redacted]" in json.dumps(outputs)  # the replayed tables show errors
    assert result.cassettes and all(p.exists() for p in result.cassettes)
    assert files_leaking(workdir, key, basic("team", key)) == []


@pytest.mark.parametrize("userinfo", ["gateway:{secret}", "{secret}", "{secret}:"],
                         ids=["password", "key-as-user", "key-as-user-empty-password"])
def test_credentials_in_the_base_url_are_kept_out_of_every_record(
    workdir: Path, userinfo: str
) -> None:
    """Gateways take a user and password in the URL, relays the key as the user; both
    are sent as Basic auth, which the server here echoes back in an error."""
    secret = f"gw-{secrets.token_hex(16)}"
    user, _, password = userinfo.format(secret=secret).partition(":")
    token = basic(user, password)
    reprs = Reprs()

    def echo(request: FakeRequest) -> FakeReply | Fault:
        if request.step == "worker-1" and request.attempt == 1:
            auth = request.headers.get("authorization")
            return Fault.status(500, body=f"bad gateway auth: {auth}")
        return default_reply(request, plan_tasks=2)

    faults = [FaultRule(Fault.rate_limit(), step="worker-2", attempts=1)]  # adapts concurrency
    with FakeServer(echo, faults=faults) as server:
        url = server.base_url.replace("http://", f"http://{userinfo.format(secret=secret)}@")
        run = swarmkit.run_sync("Summarise two things", **run_options(
            url, key_env=KEY_ENV, backoff_base=0.001, backoff_max=0.01, record="gw.swarm.json",
            sinks=[reprs]))
        assert {r.authorization for r in server.requests} == {f"Basic {token}"}
    assert run.status == "completed"
    assert run.config["worker"]["base_url"] == server.base_url.replace("http://", "http://***@")
    assert any("concurrency_changed" in text for text in reprs.texts)
    assert any("[redacted]" in r.error for r in run.retries)
    assert leaks([*texts_of(run), *reprs.texts], secret, token) == []
    # The debug log included: the SDK never saw the userinfo in a URL.
    assert files_leaking(workdir, secret, token) == []


def test_the_config_table_and_errors_mask_a_base_url_userinfo(
    shell: InteractiveShell, key: str
) -> None:
    with capture_output() as captured:
        table = shell.run_line_magic(
            "swarm", f"config base_url=https://{key}@relay.example/v1")
        try:
            texts = [repr(table), table._repr_html_()]
        finally:
            shell.run_line_magic("swarm", "config reset")
    assert any("https://***@relay.example/v1" in t for t in texts)
    assert leaks([*texts, *shown(captured)], key) == []


def test_a_refused_base_url_does_not_quote_its_userinfo(
    key: str, shell: InteractiveShell
) -> None:
    url = "ftp://{key}@relay.example/v1"
    with pytest.raises(ConfigError) as refused:
        swarmkit.run_sync("Summarise two things", base_url=url.format(key=key), history=False)
    assert "***@" in str(refused.value) and leaks([str(refused.value)], key) == []
    with pytest.raises(UsageError) as magic:
        shell.run_cell_magic("swarm", f"--base-url {url.format(key=key)}", "Summarise")
    assert leaks([str(magic.value)], key) == []
