"""The model call: the only module that imports ``openai``.

:class:`OpenAIProvider` sends a :class:`~swarmkit.calls.ChatRequest` to any
OpenAI-compatible endpoint, plain or streamed, with the ``X-Swarm-*`` headers on every
attempt. It retries what is worth retrying itself (the SDK's retries are off): 408, 409,
429, 5xx, dropped connections, timeouts, garbled bodies and cut streams, with full-jitter
exponential backoff that yields to ``Retry-After``. Whatever fails for good becomes a
one-line :class:`~swarmkit.errors.ProviderError`; a server that refuses
``response_format`` raises :class:`~swarmkit.errors.ResponseFormatUnsupported` at once.
Key values never appear in any message: only the names of their variables do.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import importlib
import itertools
import json
import math
import os
import random
import re
import ssl
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlsplit

from .calls import ChatRequest, ChatResponse
from .config import ROLES, RoleConfig, SwarmConfig
from .decode import (
    StreamAccumulator,
    error_message,
    first_line,
    one_line,
    parse_completion,
    response_text,
    retry_after_seconds,
)
from .errors import ConfigError, ProviderError, ResponseFormatUnsupported
from .events import CallRetried, CallStarted, Event, RateLimitWait
from .limits import RateLimits, worst_case_tokens
from .store.secrets import MIN_SECRET_CHARS
from .urls import split_credentials

__all__ = ["OpenAIProvider", "Provider", "ProviderResult"]

OPENAI_BASE_URL = "https://api.openai.com/v1"
# Local servers (llama.cpp, Ollama, vLLM) ignore the key, but the SDK insists on one.
PLACEHOLDER_KEY = "swarmkit-no-key"
_RETRYABLE_STATUS = frozenset({408, 409, 429})
# httpcore's pool re-checks every one of its connections when a request arrives and when
# a response closes: O(connections) twice per call. One pool per this many calls in
# flight keeps that flat; at concurrency 100 it cut client CPU per call by ~20%.
_CALLS_PER_POOL = 32
# llama.cpp answers response_format json_schema with HTTP 500 and this validation text.
_LLAMA_CPP_FORMAT_REJECTION = "Input should be 'text' or 'json_object'"


@dataclass(frozen=True, slots=True)
class ProviderResult:
    response: ChatResponse
    attempts: int
    latency: float  # seconds for the whole logical call, retries included


class Provider(Protocol):
    """Serves one logical model call, retries included."""

    async def complete(
        self,
        request: ChatRequest,
        *,
        role: RoleConfig,
        run_id: str,
        step: str,
        emit: Callable[[Event], None],
        clock: Callable[[], float],
        on_delta: Callable[[str], None] | None = None,
    ) -> ProviderResult: ...

    async def aclose(self) -> None: ...


@dataclass(frozen=True, slots=True)
class _Endpoint:
    base_url: str
    key_env: str
    key: str

    @property
    def host(self) -> str:
        parts = urlsplit(self.base_url)
        host = parts.hostname or self.base_url
        return f"{host}:{parts.port}" if parts.port else host


class OpenAIProvider:
    """A :class:`Provider` over the ``openai`` SDK, with clients per endpoint and key."""

    def __init__(self, config: SwarmConfig, *, env: Mapping[str, str] | None = None) -> None:
        self.config = config
        self._env = os.environ if env is None else env
        # Per endpoint and key: clients with a connection pool each (see _CALLS_PER_POOL).
        self._clients: dict[tuple[str, str], list[Any]] = {}
        self._turns = itertools.count()
        self._secrets: set[str] = set()
        self._rng = random.Random()
        self._limits = RateLimits(config)

    # endpoints and clients -------------------------------------------------------------

    def _key_envs(self, role: RoleConfig) -> tuple[str, ...]:
        """The variables whose keys this role may use: every one of its names that is set.

        With several, each attempt goes to the least-loaded key (see ``swarmkit.limits``).
        """
        return tuple(name for name in role.api_key_env if self._env.get(name))

    def _endpoint(self, role: RoleConfig, key_env: str | None = None) -> _Endpoint:
        """Where ``role`` sends its calls (with ``key_env``'s key, default: the first set);
        a ConfigError when its key is missing."""
        names = self._key_envs(role)
        name = key_env if key_env in names else next(iter(names), None)
        base_url = role.base_url or self._env.get("OPENAI_BASE_URL") or OPENAI_BASE_URL
        if name is not None:
            key = self._env[name]
            if len(key.strip()) >= MIN_SECRET_CHARS:
                # Shorter values are placeholders ("x", "ollama"): scrubbing them would
                # mangle every message that happens to contain those letters.
                self._secrets.add(key.strip())
            return _Endpoint(base_url, name, key)
        if role.base_url is None:
            names_text = " or ".join(role.api_key_env) or "OPENAI_API_KEY"
            raise ConfigError(
                f"{names_text} is not set; export it or pass api_key_env=/--api-key-env "
                "naming the variable that holds your key"
            )
        first = role.api_key_env[0] if role.api_key_env else ""
        return _Endpoint(base_url, first, PLACEHOLDER_KEY)

    def check_keys(self) -> None:
        """Raise ConfigError now if any role lacks its key (instead of at its first call)."""
        for name in ROLES:
            self._endpoint(self.config.role(name))

    async def _client(self, endpoint: _Endpoint) -> Any:
        """A client for ``endpoint``: one of its pools, in turn."""
        pools = self._clients.get((endpoint.base_url, endpoint.key_env))
        if pools is None:
            if not all(name in sys.modules for name in _HTTP_STACK):
                await asyncio.to_thread(_import_http_stack)
            import openai

            tls = _plain_http_tls(endpoint.base_url) or await asyncio.to_thread(_tls_context)
            base_url, userinfo_auth, password = split_credentials(endpoint.base_url)
            if password is not None and len(password) >= MIN_SECRET_CHARS:
                self._secrets.add(password)
            count = max(1, math.ceil(self.config.concurrency / _CALLS_PER_POOL))
            pools = self._clients.setdefault(
                (endpoint.base_url, endpoint.key_env),
                [
                    openai.AsyncOpenAI(
                        api_key=endpoint.key,
                        base_url=base_url,
                        default_headers=userinfo_auth or None,
                        max_retries=0,
                        timeout=self.config.call_timeout,
                        http_client=openai.DefaultAsyncHttpxClient(verify=tls),
                    )
                    for _ in range(count)
                ],
            )
        return pools[next(self._turns) % len(pools)]

    async def aclose(self) -> None:
        clients, self._clients = list(self._clients.values()), {}
        for pools in clients:
            for client in pools:
                await client.close()

    # the call --------------------------------------------------------------------------

    async def complete(
        self,
        request: ChatRequest,
        *,
        role: RoleConfig,
        run_id: str,
        step: str,
        emit: Callable[[Event], None],
        clock: Callable[[], float],
        on_delta: Callable[[str], None] | None = None,
    ) -> ProviderResult:
        endpoint = self._endpoint(role)  # a missing key fails before anything waits
        key_envs = self._key_envs(role) or (endpoint.key_env,)
        tokens = worst_case_tokens(request, role)
        started = time.monotonic()
        max_attempts = max(1, self.config.max_attempts)
        attempt = 0
        while True:
            attempt += 1
            # Admitted per attempt: a retry waits its turn and may use another key.
            admission = await self._limits.admit(
                endpoint.base_url, key_envs, tokens, step=step, emit=emit, clock=clock
            )
            try:
                endpoint = self._endpoint(role, admission.key_env)
                client = await self._client(endpoint)
                emit(CallStarted(step=step, attempt=attempt, model=request.model, t=clock()))
                headers = {"X-Swarm-Run": run_id, "X-Swarm-Step": step,
                           "X-Swarm-Attempt": str(attempt)}
                response = await self._attempt(client, endpoint, request, headers, on_delta)
            except _DeltaFailed as failure:
                admission.abandon()
                raise failure.original from None  # the caller's own bug: not a server fault
            except ProviderError as exc:
                retry = exc.retryable and attempt < max_attempts
                delay = self._delay(attempt, exc.retry_after) if retry else 0.0
                admission.failed(exc.status, emit, clock, pause=delay)
                if not retry:
                    raise self._final(exc, attempt, endpoint) from None
                emit(CallRetried(step=step, attempt=attempt, error=str(exc), delay=delay,
                                 status=exc.status, t=clock()))
                await self._back_off(delay, step, exc.status == 429, emit, clock)
                continue
            except BaseException:
                admission.abandon()
                raise
            admission.succeeded(response.usage.total_tokens, emit, clock)
            return ProviderResult(response, attempt, time.monotonic() - started)

    @staticmethod
    async def _back_off(
        delay: float, step: str, rate_limited: bool, emit: Callable[[Event], None],
        clock: Callable[[], float],
    ) -> None:
        """Sleep before a retry; after a 429 the call shows as waiting on a rate limit."""
        if not rate_limited:
            await asyncio.sleep(delay)
            return
        emit(RateLimitWait(step=step, waiting=True, t=clock()))
        try:
            await asyncio.sleep(delay)
        finally:
            emit(RateLimitWait(step=step, waiting=False, t=clock()))

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.config.backoff_max)
        ceiling = min(self.config.backoff_max, self.config.backoff_base * 2 ** (attempt - 1))
        return self._rng.uniform(0, ceiling)

    def _final(self, exc: ProviderError, attempts: int, endpoint: _Endpoint) -> ProviderError:
        """The error the caller sees: what happened, how often, and what to do."""
        message = str(exc)
        if exc.retryable:
            message += f" (gave up after {attempts} attempts)"
        hint = exc.hint if isinstance(exc, _AttemptError) else ""
        if hint:
            message += f"; {hint.format(key_env=endpoint.key_env)}"
        error_type = (
            ResponseFormatUnsupported if isinstance(exc, ResponseFormatUnsupported)
            else ProviderError
        )
        return error_type(
            self._scrub(message), status=exc.status, retryable=exc.retryable,
            retry_after=exc.retry_after, attempts=attempts,
        )

    async def _attempt(
        self,
        client: Any,
        endpoint: _Endpoint,
        request: ChatRequest,
        headers: dict[str, str],
        on_delta: Callable[[str], None] | None,
    ) -> ChatResponse:
        import openai

        body = request.body()
        try:
            if request.stream:
                return await self._streamed(client, endpoint, body, headers, on_delta)
            # Not chat.completions.create(): it re-walks the body against the SDK's typed
            # params and builds pydantic models of the reply, about 40% of a call's CPU
            # (benchmarks/README.md). The body is plain JSON already; decode reads JSON.
            completion = await client.post(
                "/chat/completions", body=body, cast_to=object,
                options={"headers": headers, "security": {"bearer_auth": True}},
            )
            response = parse_completion(completion)
            if response is None:
                raise _malformed(endpoint, "no choices")
            return response
        except openai.APIStatusError as exc:
            raise self._status_error(exc, endpoint, request) from None
        except openai.APITimeoutError:
            raise _AttemptError(
                f"no answer from {endpoint.host} within {self.config.call_timeout:g}s",
                hint=_HINT_DOWN, retryable=True,
            ) from None
        except openai.APIConnectionError as exc:
            detail = one_line(str(exc.__cause__ or exc), 120)
            raise _AttemptError(
                self._scrub(f"connection dropped by {endpoint.host} ({detail})"),
                hint=_HINT_DOWN, retryable=True,
            ) from None
        except openai.APIResponseValidationError:
            raise _malformed(endpoint, "not a chat completion") from None
        except openai.APIError as exc:  # an error event inside a stream
            message = one_line(exc.message, 200)
            raise _AttemptError(
                self._scrub(f"error from {endpoint.host} mid-answer: {message}"),
                hint=_HINT_DOWN, retryable=True,
            ) from None
        except (json.JSONDecodeError, UnicodeDecodeError):
            # The SDK decodes bodies as it reads them: garbage surfaces as a decoding error.
            raise _malformed(endpoint, "body is not valid JSON") from None

    async def _streamed(
        self,
        client: Any,
        endpoint: _Endpoint,
        body: dict[str, Any],
        headers: dict[str, str],
        on_delta: Callable[[str], None] | None,
    ) -> ChatResponse:
        import openai
        from openai.types.chat import ChatCompletionChunk

        # post(), not create(), for the same reason as in _attempt; the first create() of
        # a process also pays ~25 ms to warm the SDK's type caches.
        stream = await client.post(
            "/chat/completions",
            body={**body, "stream": True, "stream_options": {"include_usage": True}},
            cast_to=ChatCompletionChunk, stream=True,
            stream_cls=openai.AsyncStream[ChatCompletionChunk],
            options={"headers": headers, "security": {"bearer_auth": True}},
        )
        accumulator = StreamAccumulator()
        async with stream:
            async for chunk in stream:
                text = accumulator.add(chunk)
                if text and on_delta is not None:
                    _deliver(on_delta, text)
        if accumulator.finish_reason is None:
            # Without a finish reason the answer may be missing its end; ask again.
            raise _AttemptError(
                f"stream from {endpoint.host} ended before the answer finished",
                hint=_HINT_DOWN, retryable=True,
            )
        return accumulator.response()

    def _status_error(
        self, exc: Any, endpoint: _Endpoint, request: ChatRequest
    ) -> ProviderError:
        status = int(exc.status_code)
        raw = response_text(exc.response)
        detail = one_line(error_message(exc.body), 200) or one_line(first_line(raw), 120)
        detail = detail or one_line(exc.message, 120)
        message = self._scrub(f"HTTP {status} from {endpoint.host}: {detail}")
        retry_after = retry_after_seconds(exc.response.headers)
        if request.response_format is not None and (
            (status in (400, 422) and re.search(r"response_format|json_schema", detail, re.I))
            or (status >= 500 and _LLAMA_CPP_FORMAT_REJECTION in raw)
        ):
            kind = request.response_format.get("type", "this")
            return ResponseFormatUnsupported(
                self._scrub(f"{endpoint.host} does not accept response_format {kind!r} "
                            f"(HTTP {status}: {one_line(detail, 120)}); use a simpler format"),
                status=status,
            )
        retryable = status in _RETRYABLE_STATUS or status >= 500
        return _AttemptError(message, hint=_hint(status), status=status, retryable=retryable,
                             retry_after=retry_after)

    def _scrub(self, text: str) -> str:
        for secret in self._secrets:
            if secret:
                text = text.replace(secret, "[redacted]")
        return text


# The SDK, and what it imports only on the first client and the first request: ~0.4 s
# plus ~40 ms, all of it kept off the event loop by importing it in a thread up front.
_HTTP_STACK = ("openai", "httpcore2", "h11", "anyio._backends._asyncio")


def _import_http_stack() -> None:
    for name in _HTTP_STACK:
        with contextlib.suppress(ImportError):  # a layout change only loses the head start
            importlib.import_module(name)


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """One verifying TLS context per process, shared by every client.

    Each new client would otherwise load the CA bundle again (30-60 ms), and there is a
    new client per endpoint for every run.
    """
    import httpx2

    return httpx2.create_ssl_context()


def _plain_http_tls(base_url: str) -> ssl.SSLContext | None:
    """For an ``http://`` endpoint reached without a proxy: a context that trusts nothing.

    Such an endpoint (a local server) never does TLS, so loading the CA bundle is wasted
    time on the first call. The context still demands a verified certificate, so a
    redirect to ``https://`` fails instead of being trusted blindly.
    """
    from urllib.request import getproxies

    if urlsplit(base_url).scheme != "http" or getproxies():
        return None
    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)


class _AttemptError(ProviderError):
    """One failed attempt; ``hint`` is added only to the final error the caller sees."""

    def __init__(self, message: str, *, hint: str, **details: Any) -> None:
        super().__init__(message, **details)
        self.hint = hint


class _DeltaFailed(Exception):
    """Carries an exception raised by ``on_delta`` past the transport error handling."""

    def __init__(self, original: Exception) -> None:
        super().__init__(str(original))
        self.original = original


def _deliver(on_delta: Callable[[str], None], text: str) -> None:
    try:
        on_delta(text)
    except Exception as exc:
        raise _DeltaFailed(exc) from exc


def _malformed(endpoint: _Endpoint, detail: str) -> _AttemptError:
    return _AttemptError(
        f"malformed response from {endpoint.host} ({detail})",
        hint="check that base_url points at an OpenAI-compatible /v1 endpoint", retryable=True,
    )


_HINT_DOWN = "the server may be down or overloaded; try again later"


def _hint(status: int) -> str:
    """What to do about an HTTP error; ``{key_env}`` is filled in with the key's name."""
    if status in (401, 403):
        return "check the key in ${key_env} and that it may use this model"
    if status == 404:
        return "check the model name and base_url"
    if status == 429:
        return "lower concurrency, set rpm/tpm, or try again later"
    if status >= 500 or status in _RETRYABLE_STATUS:
        return _HINT_DOWN
    return "the request was refused as sent; check the model's options"
