"""OpenAIProvider: the real openai client against FakeServer, retries and error mapping."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from swarmkit.config.swarmconfig import SwarmConfig
from swarmkit.errors import ConfigError, ProviderError, ResponseFormatUnsupported
from swarmkit.provider import OpenAIProvider
from swarmkit.record.events import CallRetried, CallStarted, Event
from swarmkit.record.modelcall import CallOutcome, ChatRequest, ToolCallRequest
from swarmkit.record.usage import Usage
from swarmkit.testing import FakeReply, FakeRequest, FakeServer, Fault, FaultRule, wait_until
from swarmkit.testing.faults import FORMAT_REFUSALS

ROOT = Path(__file__).resolve().parents[2]
KEY = "sk-test-SECRET-4242-must-not-leak"
MESSAGES = ({"role": "user", "content": "Name three rivers"},)
REQUEST = ChatRequest(model="fake-model", messages=MESSAGES, max_tokens=64)
STREAMED = ChatRequest(model="fake-model", messages=MESSAGES, max_tokens=64, stream=True)
PLAN_FORMAT = {"type": "json_schema", "json_schema": {"name": "swarm_plan", "schema": {}}}


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer(lifetime=60) as fake:
        yield fake


def config_for(base_url: str | None, **options: Any) -> SwarmConfig:
    settings: dict[str, Any] = {
        "model": "fake-model", "backoff_base": 0.001, "backoff_max": 0.05,
        "max_attempts": 3, "call_timeout": 2.0,
    }
    if base_url is not None:
        settings["base_url"] = base_url
    return SwarmConfig.from_options(env={}, **{**settings, **options})


def complete(
    server: FakeServer | None,
    request: ChatRequest = REQUEST,
    *,
    events: list[Event] | None = None,
    step: str = "worker-1",
    env: dict[str, str] | None = None,
    on_delta: Callable[[str], None] | None = None,
    **options: Any,
) -> CallOutcome:
    """One logical call through a fresh provider, closed afterwards."""
    config = config_for(server.base_url if server else None, **options)
    sink: list[Event] = [] if events is None else events

    async def go() -> CallOutcome:
        provider = OpenAIProvider(config, env={"OPENAI_API_KEY": KEY} if env is None else env)
        try:
            return await provider.complete(
                request, role=config.worker, run_id="run-7", step=step, emit=sink.append,
                clock=time.monotonic, on_delta=on_delta,
            )
        finally:
            await provider.aclose()

    return asyncio.run(go())


def retries(events: list[Event]) -> list[CallRetried]:
    return [e for e in events if isinstance(e, CallRetried)]




# successful calls ------------------------------------------------------------------------


def test_plain_call_maps_content_and_usage() -> None:
    usage = Usage(prompt_tokens=11, completion_tokens=7, cached_tokens=5, reasoning_tokens=3)
    events: list[Event] = []
    with FakeServer(handler=lambda req: FakeReply("Nile, Amazon, Yangtze", usage=usage)) as fake:
        result = complete(fake, events=events)
    assert result.response.content == "Nile, Amazon, Yangtze"
    assert result.response.usage == Usage(11, 7, 5, 3, requests=1)
    assert result.response.finish_reason == "stop"
    assert result.response.model == "fake-model"
    assert result.attempts == 1
    assert result.latency > 0
    assert [(e.step, e.attempt, e.model) for e in events if isinstance(e, CallStarted)] == [
        ("worker-1", 1, "fake-model")
    ]
    sent = {k: v for k, v in fake.requests[0].body.items() if k != "stream"}
    assert sent == REQUEST.body()


def test_usage_without_details_counts_zero_cached_and_reasoning() -> None:
    raw = {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}
    with FakeServer(handler=lambda req: FakeReply("x", usage=raw)) as fake:
        assert complete(fake).response.usage == Usage(3, 2, 0, 0, requests=1)


def test_missing_usage_is_unknown_not_zero() -> None:
    with FakeServer(handler=lambda req: FakeReply("x", usage=False)) as fake:
        usage = complete(fake).response.usage
    assert usage == Usage(None, None, None, None, requests=1)
    assert usage.total_tokens is None


def test_streamed_call_delivers_deltas_and_usage(server: FakeServer) -> None:
    deltas: list[str] = []
    result = complete(server, STREAMED, on_delta=deltas.append)
    content = result.response.content
    assert content == "Result for: Name three rivers"
    assert len(deltas) > 1 and "".join(deltas) == content
    assert result.response.usage.completion_tokens == -(-len(content) // 4)
    assert result.response.usage.requests == 1
    body = server.requests[0].body
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}


def test_streamed_call_without_a_usage_chunk_has_unknown_usage() -> None:
    # llama.cpp sends no usage chunk even when asked.
    with FakeServer(handler=lambda req: FakeReply("some words", usage=False)) as fake:
        result = complete(fake, STREAMED)
    assert result.response.content == "some words"
    assert result.response.usage == Usage(None, None, None, None, requests=1)


@pytest.mark.parametrize("request_", [REQUEST, STREAMED], ids=["plain", "streamed"])
def test_tool_calls_are_parsed(request_: ChatRequest) -> None:
    reply = FakeReply(tool_calls=[("lookup", {"order_id": "A1"}), ("search", '{"q": "x"}')])
    with FakeServer(handler=lambda req: reply) as fake:
        response = complete(fake, request_).response
    assert response.tool_calls == (
        ToolCallRequest(id="call_0_0", name="lookup", arguments='{"order_id": "A1"}'),
        ToolCallRequest(id="call_0_1", name="search", arguments='{"q": "x"}'),
    )
    assert response.finish_reason == "tool_calls"
    assert response.content in (None, "")


def test_custom_base_url_without_a_key_uses_a_placeholder(server: FakeServer) -> None:
    complete(server, env={})
    assert server.requests[0].authorization == "Bearer swarmkit-no-key"


def test_the_first_set_key_variable_is_used(server: FakeServer) -> None:
    complete(server, env={"SECOND_KEY": "sk-second"}, api_key_env="FIRST_KEY,SECOND_KEY")
    assert server.requests[0].authorization == "Bearer sk-second"


def test_each_endpoint_gets_its_own_client() -> None:
    with FakeServer() as planner_server, FakeServer() as worker_server:
        config = config_for(worker_server.base_url, planner_base_url=planner_server.base_url)

        async def go() -> None:
            provider = OpenAIProvider(config, env={"OPENAI_API_KEY": KEY})
            try:
                for role, step in ((config.planner, "planner"), (config.worker, "worker-1")):
                    await provider.complete(REQUEST, role=role, run_id="r", step=step,
                                            emit=lambda e: None, clock=time.monotonic)
            finally:
                await provider.aclose()

        asyncio.run(go())
    assert planner_server.counts_by_step() == {"planner": 1}
    assert worker_server.counts_by_step() == {"worker-1": 1}


def test_importing_swarmkit_does_not_import_openai() -> None:
    code = "import sys, swarmkit, swarmkit.provider; print('openai' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": ""}, check=True)
    assert out.stdout.strip() == "False"


# headers and retries ---------------------------------------------------------------------


def test_headers_keep_the_step_and_count_attempts(server: FakeServer) -> None:
    server.add_fault(FaultRule(Fault.status(503), step="worker-3", attempts=2))
    result = complete(server, step="worker-3")
    assert result.attempts == 3
    recorded = server.requests
    assert [r.attempt for r in recorded] == [1, 2, 3]
    assert {r.step for r in recorded} == {"worker-3"}
    assert {r.run_id for r in recorded} == {"run-7"}
    assert {r.authorization for r in recorded} == {f"Bearer {KEY}"}


TRANSIENT = [
    (Fault.rate_limit(), 429),
    (Fault.status(500), 500),
    (Fault.status(503), 503),
    (Fault.status(408), 408),
    (Fault.html(502), 502),
    (Fault.drop(), None),
    (Fault.malformed(), None),
    (Fault.status(200, body='{"object": "chat.completion"}'), None),  # no choices
    (Fault.stream_cut(), None),
    (Fault.stall(10), None),  # past call_timeout
]


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
@pytest.mark.parametrize(("fault", "status"), TRANSIENT, ids=lambda v: getattr(v, "kind", v))
def test_transient_fault_is_retried_until_it_passes(
    fault: Fault, status: int | None, stream: bool
) -> None:
    events: list[Event] = []
    request = STREAMED if stream else REQUEST
    with FakeServer(faults=[FaultRule(fault, attempts=2)]) as fake:
        result = complete(fake, request, events=events, max_attempts=4, call_timeout=0.3)
        assert fake.count() == 3
    assert result.attempts == 3
    assert result.response.content == "Result for: Name three rivers"
    retried = retries(events)
    assert [(e.step, e.attempt, e.status) for e in retried] == [
        ("worker-1", 1, status), ("worker-1", 2, status)
    ]
    assert all(0 <= e.delay <= 0.05 and "\n" not in e.error for e in retried)
    assert [e.attempt for e in events if isinstance(e, CallStarted)] == [1, 2, 3]


PERMANENT = [
    (Fault.rate_limit(), 429, "HTTP 429"),
    (Fault.status(500), 500, "HTTP 500"),
    (Fault.html(502), 502, "HTTP 502"),
    (Fault.drop(), None, "connection dropped by 127.0.0.1"),
    (Fault.malformed(), None, "malformed response from 127.0.0.1"),
    (Fault.stream_cut(), None, "connection dropped by 127.0.0.1"),
    (Fault.stall(10), None, "no answer from 127.0.0.1"),
]


@pytest.mark.parametrize(("fault", "status", "says"), PERMANENT,
                         ids=lambda v: getattr(v, "kind", v))
def test_permanent_fault_gives_a_readable_error(
    fault: Fault, status: int | None, says: str
) -> None:
    events: list[Event] = []
    with FakeServer(faults=[fault]) as fake, pytest.raises(ProviderError) as caught:
        complete(fake, events=events, call_timeout=0.3)
    error = caught.value
    assert type(error) is ProviderError
    assert error.status == status
    assert error.retryable
    assert error.attempts == 3 == fake.count()
    message = str(error)
    assert says in message
    assert "gave up after 3 attempts" in message
    assert "\n" not in message and "<" not in message
    assert len(retries(events)) == 2


def test_retry_after_header_sets_the_delay(server: FakeServer) -> None:
    server.add_fault(FaultRule(Fault.rate_limit(retry_after=0.2), attempts=1))
    events: list[Event] = []
    complete(server, events=events, backoff_max=5.0)
    assert [e.delay for e in retries(events)] == [0.2]


def test_retry_after_is_capped_at_backoff_max(server: FakeServer) -> None:
    server.add_fault(FaultRule(Fault.rate_limit(retry_after=30), attempts=1))
    events: list[Event] = []
    complete(server, events=events, backoff_max=0.01)
    assert [e.delay for e in retries(events)] == [0.01]


def test_a_429_relayed_by_litellm_is_retried_no_sooner_than_its_llm_provider_retry_after(
    server: FakeServer,
) -> None:
    # LiteLLM's proxy moves the upstream's Retry-After to llm_provider-retry-after.
    server.add_fault(FaultRule(Fault.litellm_rate_limit(retry_after=1.5), attempts=1))
    events: list[Event] = []
    result = complete(server, events=events, backoff_max=5.0)
    assert result.attempts == 2
    assert [(e.status, e.delay) for e in retries(events)] == [(429, 1.5)]
    first, second = server.requests
    assert second.arrived_at - first.arrived_at >= 1.5


def test_litellms_no_connected_db_400_points_at_the_key_not_the_request(
    server: FakeServer,
) -> None:
    server.add_fault(Fault.litellm_no_db())
    with pytest.raises(ProviderError) as caught:
        complete(server)
    message = str(caught.value)
    assert message == (
        f"HTTP 400 from 127.0.0.1:{server.port}: No connected db.; the proxy could not check "
        "the key in $OPENAI_API_KEY (LiteLLM: 'No connected db.'); check the key, or the "
        "proxy's master_key or database"
    )
    assert "refused as sent" not in message
    assert KEY not in message


def test_another_400_still_says_the_request_was_refused(server: FakeServer) -> None:
    server.add_fault(Fault.status(400))
    with pytest.raises(ProviderError, match="the request was refused as sent"):
        complete(server)


def test_backoff_without_retry_after_stays_under_the_exponential_ceiling(
    server: FakeServer,
) -> None:
    server.add_fault(FaultRule(Fault.status(503), attempts=4))
    events: list[Event] = []
    complete(server, events=events, max_attempts=5, backoff_base=0.002, backoff_max=0.01)
    delays = [e.delay for e in retries(events)]
    ceilings = [0.002, 0.004, 0.008, 0.01]
    assert len(delays) == 4
    assert all(0 <= d <= c for d, c in zip(delays, ceilings, strict=True))


def test_html_502_message_is_its_title_without_tags(server: FakeServer) -> None:
    server.add_fault(Fault.html(502))
    with pytest.raises(ProviderError) as caught:
        complete(server)
    message = str(caught.value)
    assert message.startswith(f"HTTP 502 from 127.0.0.1:{server.port}: 502 Bad Gateway")
    assert "<" not in message and ">" not in message


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
def test_client_errors_are_not_retried(server: FakeServer, status: int) -> None:
    server.add_fault(Fault.status(status))
    events: list[Event] = []
    with pytest.raises(ProviderError) as caught:
        complete(server, events=events)
    assert caught.value.status == status
    assert not caught.value.retryable
    assert caught.value.attempts == 1 == server.count()
    assert retries(events) == []
    assert f"HTTP {status} from" in str(caught.value)


def test_unauthorized_names_the_key_variable_not_the_key(server: FakeServer) -> None:
    server.add_fault(Fault.status(401))
    with pytest.raises(ProviderError, match=r"\$OPENAI_API_KEY"):
        complete(server)


# response_format rejection ---------------------------------------------------------------


def test_llama_cpp_json_schema_500_is_response_format_unsupported(server: FakeServer) -> None:
    server.add_fault(Fault.llama_cpp_json_schema())
    request = ChatRequest(model="m", messages=MESSAGES, response_format=PLAN_FORMAT)
    with pytest.raises(ResponseFormatUnsupported) as caught:
        complete(server, request)
    assert caught.value.status == 500
    assert caught.value.attempts == 1 == server.count()
    assert "json_schema" in str(caught.value)


def test_400_about_response_format_is_response_format_unsupported(server: FakeServer) -> None:
    body = '{"error": {"message": "response_format json_schema is not supported"}}'
    server.add_fault(Fault.status(400, body=body))
    request = ChatRequest(model="m", messages=MESSAGES, response_format=PLAN_FORMAT)
    with pytest.raises(ResponseFormatUnsupported):
        complete(server, request)
    assert server.count() == 1


@pytest.mark.parametrize("name", list(FORMAT_REFUSALS))
def test_each_servers_refusal_of_response_format_is_unsupported_at_once(
    server: FakeServer, name: str
) -> None:
    server.add_fault(Fault.format_refusal(name))
    request = ChatRequest(model="m", messages=MESSAGES, response_format=PLAN_FORMAT)
    with pytest.raises(ResponseFormatUnsupported) as caught:
        complete(server, request)
    assert caught.value.status == FORMAT_REFUSALS[name][0]
    assert caught.value.attempts == 1 == server.count()  # a 500 here is not retried
    assert "\n" not in str(caught.value)


def test_the_same_refusal_without_response_format_is_an_ordinary_error(
    server: FakeServer,
) -> None:
    server.add_fault(Fault.format_refusal("lm-studio"))
    with pytest.raises(ProviderError) as caught:
        complete(server)
    assert not isinstance(caught.value, ResponseFormatUnsupported)
    assert caught.value.status == 400


def test_a_500_that_does_not_name_the_format_is_retried(server: FakeServer) -> None:
    server.add_fault(FaultRule(Fault.status(500), attempts=1))
    request = ChatRequest(model="m", messages=MESSAGES, response_format=PLAN_FORMAT)
    assert complete(server, request).attempts == 2


# keys --------------------------------------------------------------------------------------


def test_missing_key_without_base_url_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="OPENAI_API_KEY is not set"):
        complete(None, env={})


def test_the_key_never_appears_in_errors_or_events() -> None:
    def echo_key(req: FakeRequest) -> Fault:
        # A careless server that quotes the key back in its error.
        body = f'{{"error": {{"message": "bad key {req.headers["authorization"]}"}}}}'
        return Fault.status(500 if req.attempt == 1 else 401, body=body)

    events: list[Event] = []
    with FakeServer(handler=echo_key) as fake, pytest.raises(ProviderError) as caught:
        complete(fake, events=events)
    assert KEY not in str(caught.value)
    assert "[redacted]" in str(caught.value)
    assert all(KEY not in repr(e) for e in events)
    assert len(retries(events)) == 1


# cancellation and callbacks ----------------------------------------------------------------


@pytest.mark.parametrize("request_", [REQUEST, STREAMED], ids=["plain", "streamed"])
def test_cancellation_propagates_and_closes_the_request(request_: ChatRequest) -> None:
    with FakeServer(latency=30) as fake:
        config = config_for(fake.base_url, call_timeout=60)

        async def go() -> None:
            provider = OpenAIProvider(config, env={})
            task = asyncio.create_task(provider.complete(
                request_, role=config.worker, run_id="r", step="worker-1",
                emit=lambda e: None, clock=time.monotonic,
            ))
            assert await asyncio.to_thread(wait_until, lambda: fake.in_flight == 1)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            # Closed by the cancellation itself, before the client is closed.
            assert await asyncio.to_thread(wait_until, lambda: fake.in_flight == 0)
            await provider.aclose()

        asyncio.run(go())
        assert fake.count() == 1


def test_an_on_delta_error_propagates_unretried(server: FakeServer) -> None:
    def broken(text: str) -> None:
        raise ValueError("display broke")

    with pytest.raises(ValueError, match="display broke"):
        complete(server, STREAMED, on_delta=broken)
    assert server.count() == 1


# TLS contexts ------------------------------------------------------------------------------


def test_plain_http_endpoints_get_a_context_that_trusts_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import ssl

    from swarmkit.provider.clients import _plain_http_tls, _tls_context

    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy",
                 "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    context = _plain_http_tls("http://127.0.0.1:8080/v1")
    assert context is not None
    # A redirect to https would fail verification rather than be trusted.
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    assert context.cert_store_stats()["x509_ca"] == 0
    assert _plain_http_tls("https://api.openai.com/v1") is None
    monkeypatch.setenv("HTTPS_PROXY", "https://proxy.invalid:3128")
    assert _plain_http_tls("http://127.0.0.1:8080/v1") is None
    # https endpoints share one verifying context per process.
    assert _tls_context() is _tls_context()
    assert _tls_context().verify_mode == ssl.CERT_REQUIRED
