"""FakeServer: endpoints, recording, scripting, faults, limits and bounds, over real HTTP."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2
import openai
import pytest

from swarmkit.record.modelcall import ToolCallRequest
from swarmkit.record.usage import Usage
from swarmkit.testing import (
    FakeReply,
    FakeRequest,
    FakeServer,
    Fault,
    FaultRule,
    default_reply,
    role_of_step,
    wait_until,
)

ROOT = Path(__file__).resolve().parents[2]
USER = [{"role": "user", "content": "Compare five vector databases for a small team"}]


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer(lifetime=60) as fake:
        yield fake


def chat(
    fake: FakeServer, *, step: str = "worker-1", attempt: int | None = 1, timeout: float = 5,
    **body: object,
) -> httpx2.Response:
    headers = {"Authorization": "Bearer test-key", "X-Swarm-Step": step, "X-Swarm-Run": "run-1"}
    if attempt is not None:
        headers["X-Swarm-Attempt"] = str(attempt)
    payload = {"model": "fake-model", "messages": USER, **body}
    return httpx2.post(
        f"{fake.base_url}/chat/completions", json=payload, headers=headers, timeout=timeout
    )


def sse_payloads(text: str) -> list[str]:
    return [line[len("data: "):] for line in text.splitlines() if line.startswith("data: ")]




# lifecycle and endpoints -----------------------------------------------------------------


def test_listens_on_loopback_only_with_an_ephemeral_port(server: FakeServer) -> None:
    host, port = server.address
    assert host == "127.0.0.1"
    assert port > 0
    assert server.base_url == f"http://127.0.0.1:{port}/v1"


def test_models_endpoint_lists_the_models() -> None:
    with FakeServer(models=("a", "b")) as fake:
        data = httpx2.get(f"{fake.base_url}/models").json()
    assert [m["id"] for m in data["data"]] == ["a", "b"]
    assert fake.models_requests == 1
    assert fake.requests == []  # only chat requests are recorded


def test_stop_is_idempotent_and_refuses_connections_afterwards() -> None:
    fake = FakeServer().start()
    url = fake.base_url
    fake.stop()
    fake.stop()
    assert not fake.running
    with pytest.raises(httpx2.ConnectError):
        httpx2.get(f"{url}/models")


def test_a_server_cannot_be_started_twice(server: FakeServer) -> None:
    with pytest.raises(RuntimeError, match="already started"):
        server.start()


def test_stops_by_itself_after_its_lifetime() -> None:
    fake = FakeServer(lifetime=0.2).start()
    assert fake.wait_stopped(timeout=10)
    assert not fake.running


def test_stops_by_itself_after_max_requests() -> None:
    fake = FakeServer(max_requests=2).start()
    try:
        assert chat(fake).status_code == 200
        assert chat(fake).status_code == 200
        assert fake.wait_stopped(timeout=10)
        with pytest.raises(httpx2.ConnectError):
            chat(fake)
    finally:
        fake.stop()


def test_non_json_request_body_is_a_400(server: FakeServer) -> None:
    response = httpx2.post(f"{server.base_url}/chat/completions", content=b"not json")
    assert response.status_code == 400
    assert "JSON object" in response.json()["error"]["message"]


# the default script ----------------------------------------------------------------------


def test_default_worker_reply_with_computed_usage(server: FakeServer) -> None:
    client = openai.OpenAI(base_url=server.base_url, api_key="test-key", max_retries=0)
    response = client.chat.completions.create(
        model="fake-model", messages=USER, extra_headers={"X-Swarm-Step": "worker-2"}
    )
    client.close()
    content = response.choices[0].message.content
    assert content == f"Result for: {USER[0]['content']}"
    assert response.usage is not None
    assert response.usage.prompt_tokens == -(-len(USER[0]["content"]) // 4)
    assert response.usage.completion_tokens == -(-len(content) // 4)
    assert response.usage.prompt_tokens_details.cached_tokens == 0
    assert response.choices[0].finish_reason == "stop"


def test_default_planner_returns_the_plan_json_even_for_json_schema() -> None:
    schema = {"type": "json_schema", "json_schema": {"name": "swarm_plan", "schema": {}}}
    with FakeServer(plan_tasks=3) as fake:
        body = chat(fake, step="planner", response_format=schema).json()
    plan = json.loads(body["choices"][0]["message"]["content"])
    head = USER[0]["content"][:40]
    assert plan == {"tasks": [f"Sub-task {i} of {head}" for i in (1, 2, 3)]}


def test_any_response_format_gets_json_whatever_the_step(server: FakeServer) -> None:
    body = chat(server, step="", response_format={"type": "json_object"}).json()
    assert "tasks" in json.loads(body["choices"][0]["message"]["content"])


def test_default_reducer_counts_worker_lines(server: FakeServer) -> None:
    prompt = "Task: x\n\nWorker 1 said:\nA\n\n## Worker 2 said:\nB\nWorkers are great\n"
    body = chat(server, step="reducer", messages=[{"role": "user", "content": prompt}]).json()
    assert body["choices"][0]["message"]["content"] == "Final answer merging 2 results"


def test_role_of_step() -> None:
    assert role_of_step("worker-3") == "worker"
    assert role_of_step("planner") == "planner"
    assert role_of_step("reducer") == "reducer"
    assert role_of_step("") == "worker"


def test_completion_tokens_never_exceed_max_tokens(server: FakeServer) -> None:
    body = chat(server, max_tokens=2).json()
    assert body["usage"]["completion_tokens"] == 2


# streaming -------------------------------------------------------------------------------


def test_stream_sends_chunks_a_usage_chunk_and_done(server: FakeServer) -> None:
    response = chat(server, stream=True, stream_options={"include_usage": True})
    assert response.headers["content-type"].startswith("text/event-stream")
    payloads = sse_payloads(response.text)
    assert payloads[-1] == "[DONE]"
    chunks = [json.loads(p) for p in payloads[:-1]]
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
    assert text == f"Result for: {USER[0]['content']}"
    assert chunks[-1]["choices"] == []
    assert chunks[-1]["usage"]["completion_tokens"] == -(-len(text) // 4)


def test_stream_without_include_usage_has_no_usage_chunk(server: FakeServer) -> None:
    payloads = sse_payloads(chat(server, stream=True).text)
    chunks = [json.loads(p) for p in payloads[:-1]]
    assert all(c["choices"] and "usage" not in c for c in chunks)


def test_streamed_reply_through_the_openai_client() -> None:
    with FakeServer(handler=lambda req: FakeReply("one two three four five six")) as fake:
        client = openai.OpenAI(base_url=fake.base_url, api_key="k", max_retries=0)
        stream = client.chat.completions.create(
            model="m", messages=USER, stream=True, stream_options={"include_usage": True}
        )
        chunks = list(stream)
        client.close()
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "one two three four five six"
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == 7


# recording -------------------------------------------------------------------------------


def test_records_headers_body_and_counts(server: FakeServer) -> None:
    chat(server, step="planner")
    chat(server, step="worker-1", attempt=1)
    chat(server, step="worker-1", attempt=2)
    chat(server, step="worker-2", attempt=None)
    first = server.requests[0]
    assert first.step == "planner"
    assert first.attempt == 1
    assert first.run_id == "run-1"
    assert first.authorization == "Bearer test-key"
    assert first.body["messages"] == USER
    assert first.headers["x-swarm-step"] == "planner"
    assert server.requests[3].attempt is None
    assert [r.arrived_at for r in server.requests] == sorted(r.arrived_at for r in server.requests)
    assert server.count() == 4
    assert server.count("worker-*") == 3
    assert server.counts_by_step() == {"planner": 1, "worker-1": 2, "worker-2": 1}
    server.clear()
    assert server.count() == 0


def test_a_server_that_keeps_no_requests_still_answers_and_counts_toward_max() -> None:
    with FakeServer(keep_requests=False, max_requests=3) as server:
        ids = [chat(server, step=f"worker-{i}").json()["id"] for i in range(3)]
        assert server.requests == [] and server.count() == 0
        assert len(set(ids)) == 3  # completion ids stay distinct without the records
        assert wait_until(lambda: not server.running)  # the third request was its last


def test_in_flight_and_max_in_flight_under_concurrency() -> None:
    arrived: list[FakeRequest] = []
    all_here = asyncio.Event()  # binds to the server's loop on first use

    async def hold_until_all_arrive(req: FakeRequest) -> None:
        # Each request waits for the others, so the peak is exact whatever the machine load.
        arrived.append(req)
        if len(arrived) == 12:
            all_here.set()
        await asyncio.wait_for(all_here.wait(), timeout=10)

    async def burst(url: str) -> list[int]:
        async with httpx2.AsyncClient(timeout=20) as client:
            payload = {"model": "m", "messages": USER}
            tasks = [client.post(f"{url}/chat/completions", json=payload) for _ in range(12)]
            return [r.status_code for r in await asyncio.gather(*tasks)]

    with FakeServer(handler=hold_until_all_arrive) as fake:
        assert asyncio.run(burst(fake.base_url)) == [200] * 12
        assert fake.max_in_flight == 12
        assert fake.in_flight == 0


# scripting -------------------------------------------------------------------------------


def test_sync_handler_sees_the_request_and_scripts_tool_calls() -> None:
    seen: list[FakeRequest] = []

    def handler(req: FakeRequest) -> FakeReply:
        seen.append(req)
        return FakeReply(
            tool_calls=[("lookup", {"order_id": "A1"}), ("search", '{"q": "x"}'),
                        ToolCallRequest(id="given", name="other", arguments="{}")],
        )

    tools = [{"type": "function", "function": {"name": "lookup", "parameters": {}}}]
    with FakeServer(handler=handler) as fake:
        body = chat(fake, step="worker-4", attempt=2, tools=tools).json()
    request = seen[0]
    assert (request.role, request.step, request.attempt, request.model) == (
        "worker", "worker-4", 2, "fake-model"
    )
    assert request.messages == USER
    assert request.tools == tools
    assert request.headers["x-swarm-run"] == "run-1"
    choice = body["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    calls = choice["message"]["tool_calls"]
    assert [c["id"] for c in calls] == ["call_0_0", "call_0_1", "given"]
    assert json.loads(calls[0]["function"]["arguments"]) == {"order_id": "A1"}
    assert calls[1]["function"]["arguments"] == '{"q": "x"}'


def test_streamed_tool_calls_reassemble() -> None:
    reply = FakeReply(tool_calls=[("lookup", {"order_id": "A1"})])
    with FakeServer(handler=lambda req: reply) as fake:
        client = openai.OpenAI(base_url=fake.base_url, api_key="k", max_retries=0)
        chunks = list(client.chat.completions.create(model="m", messages=USER, stream=True))
        client.close()
    arguments = "".join(
        c.choices[0].delta.tool_calls[0].function.arguments or ""
        for c in chunks if c.choices and c.choices[0].delta.tool_calls
    )
    assert json.loads(arguments) == {"order_id": "A1"}
    assert chunks[-1].choices[0].finish_reason == "tool_calls"


def test_async_handler_str_none_and_given_usage() -> None:
    async def handler(req: FakeRequest) -> FakeReply | str | None:
        await asyncio.sleep(0)
        if req.role == "planner":
            return None  # falls back to the built-in script
        if req.step == "worker-1":
            return "plain text"
        return FakeReply("x", usage=Usage(prompt_tokens=10, completion_tokens=3, cached_tokens=4,
                                          reasoning_tokens=2))

    with FakeServer(handler=handler) as fake:
        plan = chat(fake, step="planner").json()["choices"][0]["message"]["content"]
        text = chat(fake, step="worker-1").json()["choices"][0]["message"]["content"]
        usage = chat(fake, step="worker-2").json()["usage"]
    assert "tasks" in json.loads(plan)
    assert text == "plain text"
    assert usage["prompt_tokens_details"]["cached_tokens"] == 4
    assert usage["completion_tokens_details"]["reasoning_tokens"] == 2
    assert usage["total_tokens"] == 13


def test_reply_without_usage() -> None:
    with FakeServer(handler=lambda req: FakeReply("hi", usage=False)) as fake:
        assert "usage" not in chat(fake).json()
        streamed = chat(fake, stream=True, stream_options={"include_usage": True})
    payloads = sse_payloads(streamed.text)
    assert all("usage" not in json.loads(p) for p in payloads[:-1])


def test_handler_returning_a_fault() -> None:
    with FakeServer(handler=lambda req: Fault.status(503)) as fake:
        assert chat(fake).status_code == 503


def test_handler_exception_becomes_a_500_and_is_kept() -> None:
    def handler(req: FakeRequest) -> FakeReply:
        raise ValueError("script bug")

    with FakeServer(handler=handler) as fake:
        response = chat(fake)
    assert response.status_code == 500
    assert "ValueError: script bug" in response.json()["error"]["message"]
    assert isinstance(fake.handler_errors[0], ValueError)


def test_default_reply_is_reusable_by_handlers() -> None:
    request = FakeRequest(body={"messages": USER}, step="planner", attempt=1, headers={})
    plan = json.loads(default_reply(request, plan_tasks=2).content or "")
    assert len(plan["tasks"]) == 2


# faults ----------------------------------------------------------------------------------


def test_rate_limit_fault_with_retry_after(server: FakeServer) -> None:
    server.add_fault(Fault.rate_limit(retry_after=1.5))
    response = chat(server)
    assert response.status_code == 429
    assert response.headers["retry-after"] == "1.5"
    assert response.json()["error"]["type"] == "rate_limit_exceeded"
    assert server.rejected_429 == 1


def test_rate_limit_fault_without_retry_after(server: FakeServer) -> None:
    server.add_fault(Fault.rate_limit())
    response = chat(server)
    assert response.status_code == 429
    assert "retry-after" not in response.headers


def test_a_fault_sends_the_headers_it_is_given(server: FakeServer) -> None:
    server.add_fault(FaultRule(Fault.status(503, headers={"x-litellm-attempted-retries": "2"}),
                               step="worker-1"))
    server.add_fault(FaultRule(Fault.html(502, headers={"Via": "1.1 gateway"}), step="w-2"))
    response = chat(server)
    assert response.status_code == 503
    assert response.headers["x-litellm-attempted-retries"] == "2"
    page = chat(server, step="w-2")
    assert (page.status_code, page.headers["via"]) == (502, "1.1 gateway")


def test_a_litellm_rate_limit_names_its_wait_only_under_the_relays_prefix(
    server: FakeServer,
) -> None:
    server.add_fault(Fault.litellm_rate_limit(retry_after=1.5))
    response = chat(server)
    assert response.status_code == 429
    assert response.headers["llm_provider-retry-after"] == "1.5"
    assert "retry-after" not in response.headers


@pytest.mark.parametrize("status", [500, 503])
def test_status_fault_is_a_json_error(server: FakeServer, status: int) -> None:
    server.add_fault(Fault.status(status))
    response = chat(server)
    assert response.status_code == status
    assert str(status) in response.json()["error"]["message"]


def test_status_fault_with_a_custom_body(server: FakeServer) -> None:
    server.add_fault(Fault.llama_cpp_json_schema())
    response = chat(server)
    assert response.status_code == 500
    assert "Input should be 'text' or 'json_object'" in response.text
    server.clear_faults()
    server.add_fault(Fault.status(500, body="plain words"))
    response = chat(server)
    assert response.text == "plain words"
    assert response.headers["content-type"].startswith("text/plain")


def test_html_fault_sends_a_proxy_error_page(server: FakeServer) -> None:
    server.add_fault(Fault.html(502))
    response = chat(server)
    assert response.status_code == 502
    assert response.headers["content-type"].startswith("text/html")
    assert response.text.startswith("<html>\r\n<head><title>502 Bad Gateway</title>")


def test_stream_error_fault_sends_an_error_event_mid_stream(server: FakeServer) -> None:
    server.add_fault(Fault.stream_error("The model is overloaded"))
    streamed = chat(server, stream=True)
    assert streamed.status_code == 200
    payloads = sse_payloads(streamed.text)
    assert json.loads(payloads[-1]) == {
        "error": {"message": "The model is overloaded", "type": "server_error"}
    }
    assert "[DONE]" not in payloads and len(payloads) == 3  # role, some text, the error
    plain = chat(server)  # not streamed: a plain server error
    assert plain.status_code == 500
    assert plain.json()["error"]["message"] == "The model is overloaded"


def test_drop_fault_closes_without_a_response(server: FakeServer) -> None:
    server.add_fault(Fault.drop())
    with pytest.raises(httpx2.RemoteProtocolError):
        chat(server)
    assert wait_until(lambda: server.in_flight == 0)


def test_stall_fault_outlasts_the_client_timeout(server: FakeServer) -> None:
    server.add_fault(FaultRule(Fault.stall(30), attempts=1))
    with pytest.raises(httpx2.ReadTimeout):
        chat(server, timeout=0.2)
    # The server notices the client went away and stops handling the request.
    assert wait_until(lambda: server.in_flight == 0)
    assert chat(server, attempt=2).status_code == 200


def test_short_stall_then_a_normal_answer(server: FakeServer) -> None:
    server.add_fault(Fault.stall(0.05))
    assert chat(server).json()["choices"][0]["message"]["content"].startswith("Result for")


def test_malformed_fault_is_a_garbled_200(server: FakeServer) -> None:
    server.add_fault(Fault.malformed())
    response = chat(server)
    assert response.status_code == 200
    with pytest.raises(ValueError):
        json.loads(response.content)
    streamed = chat(server, stream=True)
    with pytest.raises(ValueError):
        json.loads(sse_payloads(streamed.text)[0])


def test_stream_cut_fault_aborts_midway(server: FakeServer) -> None:
    server.add_fault(Fault.stream_cut())
    received = []
    with pytest.raises(httpx2.RemoteProtocolError), httpx2.stream(
        "POST", f"{server.base_url}/chat/completions",
        json={"model": "m", "messages": USER, "stream": True},
    ) as response:
        for line in response.iter_lines():
            received.append(line)
    assert any(line.startswith("data: {") for line in received)
    assert "data: [DONE]" not in received
    with pytest.raises(httpx2.RemoteProtocolError):
        chat(server)  # not streamed: half the body, then the connection closes


def test_transient_rule_faults_only_the_first_attempts(server: FakeServer) -> None:
    server.add_fault(FaultRule(Fault.status(503), step="worker-*", attempts=2))
    assert chat(server, step="worker-1", attempt=1).status_code == 503
    assert chat(server, step="worker-1", attempt=2).status_code == 503
    assert chat(server, step="worker-1", attempt=3).status_code == 200
    assert chat(server, step="planner", attempt=1).status_code == 200


def test_transient_rule_counts_attempts_per_step_without_the_header(server: FakeServer) -> None:
    server.add_fault(FaultRule(Fault.status(500), attempts=1))
    codes = [chat(server, step=s, attempt=None).status_code for s in ("a", "a", "b", "b")]
    assert codes == [500, 200, 500, 200]


def test_permanent_rule_faults_every_attempt() -> None:
    with FakeServer(faults=[FaultRule(Fault.status(500), step="worker-2")]) as fake:
        assert [chat(fake, step="worker-2", attempt=a).status_code for a in (1, 5, 9)] == [500] * 3
        assert chat(fake, step="worker-1").status_code == 200


def test_probability_rule_is_reproducible_with_a_seed() -> None:
    def pattern() -> list[int]:
        rule = FaultRule(Fault.status(503), probability=0.5, seed=7)
        with FakeServer(faults=[rule]) as fake:
            return [chat(fake, step=f"worker-{i}").status_code for i in range(12)]

    first = pattern()
    assert first == pattern()
    assert 503 in first and 200 in first


def test_first_matching_rule_wins_and_a_bare_fault_is_a_permanent_rule() -> None:
    faults = [FaultRule(Fault.status(503), step="planner"), Fault.status(500)]
    with FakeServer(faults=faults) as fake:
        assert chat(fake, step="planner").status_code == 503
        assert chat(fake, step="worker-1").status_code == 500


def test_fault_rule_rejects_bad_values() -> None:
    with pytest.raises(ValueError, match="probability"):
        FaultRule(Fault.drop(), probability=2)
    with pytest.raises(ValueError, match="attempts"):
        FaultRule(Fault.drop(), attempts=-1)


# rate limits -----------------------------------------------------------------------------


def test_rpm_limit_per_key_over_a_sliding_window() -> None:
    payload = {"model": "m", "messages": USER}
    with FakeServer(rpm_limit=2, window=1.0) as fake, httpx2.Client(timeout=5) as client:
        url = f"{fake.base_url}/chat/completions"

        def send(key: str = "test-key") -> httpx2.Response:
            return client.post(url, json=payload, headers={"Authorization": f"Bearer {key}"})

        assert [send().status_code for _ in range(3)] == [200, 200, 429]
        refused = send()
        assert 0 < float(refused.headers["retry-after"]) <= 1.0
        assert send("other-key").status_code == 200
        assert fake.rejected_429 == 2
        time.sleep(float(refused.headers["retry-after"]) + 0.05)
        assert send().status_code == 200


def test_tpm_limit_counts_prompt_estimate_plus_max_tokens() -> None:
    prompt_tokens = -(-len(USER[0]["content"]) // 4)
    with FakeServer(tpm_limit=2 * (prompt_tokens + 10), window=30) as fake:
        assert chat(fake, max_tokens=10).status_code == 200
        assert chat(fake, max_tokens=10).status_code == 200
        assert chat(fake, max_tokens=1).status_code == 429
        assert fake.rejected_429 == 1


# the command line ------------------------------------------------------------------------


@contextlib.contextmanager
def cli(*args: str, stdin: int = subprocess.PIPE) -> Iterator[subprocess.Popen[str]]:
    command = [sys.executable, "-m", "swarmkit.testing", *args]
    with subprocess.Popen(
        command, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": ""},
    ) as process:
        try:
            yield process
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()


def _planner_tasks(url: str) -> int:
    response = httpx2.post(
        f"{url}/chat/completions", json={"model": "m", "messages": USER},
        headers={"X-Swarm-Step": "planner"},
    )
    return len(json.loads(response.json()["choices"][0]["message"]["content"])["tasks"])


def test_cli_serves_until_terminated() -> None:
    with cli("--port", "0", "--latency", "0.01", "--plan-tasks", "2", "--lifetime", "60") as proc:
        assert proc.stdout is not None and proc.stderr is not None
        line = proc.stdout.readline().strip()
        assert line.startswith("READY http://127.0.0.1:")
        assert _planner_tasks(line.split(" ", 1)[1]) == 2
        proc.terminate()
        assert proc.wait(timeout=10) == 0
        assert proc.stderr.read() == ""  # signalled: nothing to explain


def test_cli_says_why_it_stops_when_stdin_closes() -> None:
    with cli("--port", "0", stdin=subprocess.DEVNULL) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        assert proc.stdout.readline().startswith("READY ")
        assert proc.wait(timeout=10) == 0
        assert proc.stderr.read() == ("stdin closed: stopping (use --ignore-stdin to keep "
                                      "serving)\n")


def test_cli_stops_quietly_when_its_parent_closes_the_pipe_on_its_stdin() -> None:
    # The expected end (benchmarks and kernel tests stop it so): nothing to explain.
    with cli("--port", "0") as proc:
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        assert proc.stdout.readline().startswith("READY ")
        proc.stdin.close()
        assert proc.wait(timeout=10) == 0
        assert proc.stderr.read() == ""


def test_cli_with_ignore_stdin_serves_with_stdin_closed_until_sigterm() -> None:
    with cli("--port", "0", "--ignore-stdin", "--plan-tasks", "3", "--lifetime", "60",
             stdin=subprocess.DEVNULL) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        url = proc.stdout.readline().strip().split(" ", 1)[1]
        assert _planner_tasks(url) == 3
        assert _planner_tasks(url) == 3
        assert proc.poll() is None
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0
        assert proc.stderr.read() == ""


def test_cli_with_ignore_stdin_still_stops_when_its_lifetime_runs_out() -> None:
    with cli("--port", "0", "--ignore-stdin", "--lifetime", "0.5",
             stdin=subprocess.DEVNULL) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        assert proc.stdout.readline().startswith("READY ")
        assert proc.wait(timeout=20) == 0
        assert proc.stderr.read() == "--lifetime of 0.5s ran out: stopping\n"


def test_wait_until_returns_as_soon_as_the_condition_holds_and_false_when_it_never_does() -> None:
    calls = iter([False, False, True])
    assert wait_until(lambda: next(calls), timeout=5, interval=0.001)
    assert not wait_until(lambda: False, timeout=0.05, interval=0.01)
