"""A recognisable fake key must appear in nothing swarmkit writes, shows or raises.

The key is set in the environment and really sent (FakeServer sees it). Every error the
server sends back echoes the ``Authorization`` header, as some gateways do, so the
provider's scrubbing is exercised on text that truly holds the key. Then every file the
run produced (cassette, history database with its WAL, logs, ``.swarmkit/``), the Run's
JSON and tables, every event's repr and every error message is searched for it.
"""

from __future__ import annotations

import base64
import json
import logging
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

import swarmkit
from swarmkit.errors import CassetteError
from swarmkit.events import Event
from swarmkit.run import Run
from swarmkit.testing import FakeReply, FakeRequest, FakeServer, Fault, FaultRule, default_reply
from swarmkit.tools import tool

KEY_ENV = "SWARMKIT_CANARY_KEY"
KEY = "sk-swarmkit-CANARY-5b1e0d7c4a9f2e83"
KEY_BYTES = KEY.encode()


class Echo:
    """Answers normally, except that chosen steps get errors echoing the Authorization."""

    def __call__(self, request: FakeRequest) -> FakeReply | Fault:
        auth = request.headers.get("authorization", "")
        if request.step == "worker-1":  # permanent: a 401 quoting the key it was sent
            body = {"error": {"message": f"Incorrect API key provided: {auth}",
                              "type": "invalid_request_error", "code": "invalid_api_key"}}
            return Fault.status(401, body=json.dumps(body))
        if request.step == "worker-2" and request.attempt == 1:  # a proxy's HTML page
            return Fault.status(502, body=f"<html><title>502 {auth}</title></html>")
        if request.step == "worker-3" and request.attempt == 1:  # plain text 500
            return Fault.status(500, body=f"upstream failed for {auth}\nretry later")
        if request.step == "reducer" and request.attempt == 1:
            return Fault.status(503, body=json.dumps({"error": f"overloaded ({auth})"}))
        if request.step == "worker-4" and not any(m.get("role") == "tool"
                                                  for m in request.messages):
            return FakeReply(tool_calls=[("lookup", {"order_id": "A-17"})])
        return default_reply(request, plan_tasks=4)


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
    monkeypatch.setenv(KEY_ENV, KEY)
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


def _files_holding_the_key(folder: Path) -> list[str]:
    found = []
    for path in sorted(folder.rglob("*")):
        if path.is_file() and KEY_BYTES in path.read_bytes():
            found.append(str(path.relative_to(folder)))
    return found


def _texts_of(run: Run) -> list[str]:
    texts = [run.to_json(), repr(run), str(run), run._repr_html_()]
    texts += [w.error or "" for w in run.workers]
    texts += [c.error or "" for c in run.calls]
    texts += [r.error for r in run.retries]
    texts.append(run.error or "")
    return texts


def test_the_key_appears_in_no_file_run_event_or_error(workdir: Path) -> None:
    reprs = Reprs()
    with FakeServer(Echo()) as server:
        run = swarmkit.run_sync(
            "Summarise four things", model="gpt-4.1-mini", base_url=server.base_url,
            api_key_env=KEY_ENV, backoff_base=0.001, backoff_max=0.01, max_attempts=3,
            record="run.swarm.json", sinks=[reprs], tools=[lookup],
        )
        sent = {r.authorization for r in server.requests}
    assert sent == {f"Bearer {KEY}"}  # the key really was used, and echoed back
    assert run.status == "partial"  # worker 1 failed for good; the rest retried and passed
    failed = run.worker(1)
    assert failed.error is not None and "HTTP 401" in failed.error
    assert "[redacted]" in failed.error and f"${KEY_ENV}" in failed.error  # names, not values
    assert {r.step for r in run.retries} >= {"worker-2", "worker-3", "reducer"}
    assert [(t.tool, t.error) for t in run.tool_calls] == [("lookup", None)]
    assert all("[redacted]" in r.error for r in run.retries if r.step != "worker-1")
    # The files: cassette, history database (and its WAL), the debug log, .swarmkit/.
    assert (workdir / "run.swarm.json").exists() and (workdir / ".swarmkit").is_dir()
    assert (workdir / "debug.log").stat().st_size > 0
    assert _files_holding_the_key(workdir) == []
    for text in [*_texts_of(run), *reprs.texts]:
        assert KEY not in text
    assert KEY_ENV in run.to_json()  # the variable's name is what a run keeps


def test_the_key_appears_in_no_magic_output_or_file(
    workdir: Path, shell: InteractiveShell
) -> None:
    with FakeServer(Echo()) as server:
        line = (f"--model gpt-4.1-mini --base-url {server.base_url} --api-key-env {KEY_ENV} "
                "--record magic.swarm.json --out canary_run --tools lookup")
        shell.user_ns["lookup"] = lookup
        with capture_output() as captured:
            shell.run_cell_magic("swarm", line, "Summarise four things")
            shell.run_line_magic("swarm", "history")
            shell.run_line_magic("swarm", "last")
    run = shell.user_ns["canary_run"]
    assert isinstance(run, Run) and run.worker(1).status == "failed"
    assert len(run.tool_calls) == 1
    shown = [captured.stdout, captured.stderr]
    for output in captured.outputs:
        shown += [str(value) for value in output.data.values()]
    assert len("".join(shown)) > 0
    for text in [*shown, *_texts_of(run)]:
        assert KEY not in text
    assert _files_holding_the_key(workdir) == []


def test_a_reply_that_echoes_the_key_is_never_written(workdir: Path) -> None:
    """A relay that puts the key into an answer: the cassette and history refuse it."""

    def echo(request: FakeRequest) -> FakeReply:
        if request.step == "worker-1":
            return FakeReply(content=f"debug: {request.headers.get('authorization')}")
        return default_reply(request, plan_tasks=2)

    with FakeServer(echo) as server, pytest.raises(CassetteError) as error:
        swarmkit.run_sync(
            "Summarise two things", model="gpt-4.1-mini", base_url=server.base_url,
            api_key_env=KEY_ENV, record="echo.swarm.json",
        )
    assert f"would contain the value of ${KEY_ENV}" in str(error.value)
    assert KEY not in str(error.value)
    assert not (workdir / "echo.swarm.json").exists()
    assert _files_holding_the_key(workdir) == []


def test_a_tool_result_holding_the_key_is_never_written(workdir: Path) -> None:
    @tool
    def env_dump(name: str) -> str:
        """A careless tool that reads the environment."""
        return os.environ.get(name, "")

    def model(request: FakeRequest) -> FakeReply:
        if request.step == "worker-1" and not any(m.get("role") == "tool"
                                                  for m in request.messages):
            return FakeReply(tool_calls=[("env_dump", {"name": KEY_ENV})])
        return default_reply(request, plan_tasks=2)

    with FakeServer(model) as server, pytest.raises(CassetteError) as error:
        swarmkit.run_sync(
            "Summarise two things", model="gpt-4.1-mini", base_url=server.base_url,
            api_key_env=KEY_ENV, record="tool.swarm.json", tools=[env_dump],
        )
    assert f"would contain the value of ${KEY_ENV}" in str(error.value)
    assert not (workdir / "tool.swarm.json").exists()
    assert _files_holding_the_key(workdir) == []


@pytest.mark.kernel
def test_an_exported_notebook_and_its_cassette_hold_no_key(workdir: Path) -> None:
    with FakeServer(Echo()) as server:
        run = swarmkit.run_sync(
            "Summarise four things", model="gpt-4.1-mini", base_url=server.base_url,
            api_key_env=KEY_ENV, backoff_base=0.001, backoff_max=0.01, max_attempts=3,
            tools=[lookup],
        )
    assert run.worker(1).status == "failed" and len(run.tool_calls) == 1
    result = run.export(workdir / "canary.ipynb")
    notebook = json.loads(result.notebook.read_text(encoding="utf-8"))
    outputs = [o for c in notebook["cells"] for o in c.get("outputs", [])]
    assert outputs and "[redacted]" in json.dumps(outputs)  # the replayed tables show errors
    assert result.cassettes and all(p.exists() for p in result.cassettes)
    assert _files_holding_the_key(workdir) == []


def test_a_password_in_the_base_url_is_kept_out_of_every_record(workdir: Path) -> None:
    """Gateways may take credentials in the URL's userinfo (sent as Basic auth)."""
    password = "gw-CANARY-pass-93e1f0"
    reprs = Reprs()
    faults = [FaultRule(Fault.rate_limit(), step="worker-1", attempts=1)]  # adapts concurrency
    with FakeServer(plan_tasks=2, faults=faults) as server:
        url = server.base_url.replace("http://", f"http://gateway:{password}@")
        run = swarmkit.run_sync(
            "Summarise two things", model="gpt-4.1-mini", base_url=url, api_key_env=KEY_ENV,
            backoff_base=0.001, backoff_max=0.01, record="gw.swarm.json", sinks=[reprs],
        )
        assert {r.authorization for r in server.requests} == {
            "Basic " + base64.b64encode(f"gateway:{password}".encode()).decode()}
    assert run.status == "completed"
    assert run.config["worker"]["base_url"] == url.replace(password, "***")
    assert any("concurrency_changed" in text for text in reprs.texts)
    for text in [*_texts_of(run), *reprs.texts]:
        assert password not in text
    leaked = [p for p in workdir.rglob("*") if p.is_file() and password.encode() in p.read_bytes()]
    assert leaked == []  # the debug log included: the SDK never saw it in a URL
