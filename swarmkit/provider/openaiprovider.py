"""The model call: the only module that imports ``openai``.

:class:`OpenAIProvider` sends a :class:`~swarmkit.record.modelcall.ChatRequest` to any
OpenAI-compatible endpoint, plain or streamed, with the ``X-Swarm-*`` headers on every
attempt. It retries what is worth retrying itself (the SDK's retries are off): 408, 409,
429, 5xx, dropped connections, timeouts, garbled bodies and cut streams, with full-jitter
exponential backoff that yields to ``Retry-After``. Whatever fails for good becomes a
one-line :class:`~swarmkit.errors.ProviderError`; a server that refuses
``response_format`` raises :class:`~swarmkit.errors.ResponseFormatUnsupported` at once.
Key values never appear in any message: only the names of their variables do. Replies
are scrubbed here too (``swarmkit.credentials.scrub``), see :meth:`OpenAIProvider._attempt`.
"""

from __future__ import annotations

import asyncio
import errno
import json
import math
import random
import re
import time
from collections.abc import Callable, Mapping
from typing import Any

from ..config.swarmconfig import RoleConfig, SwarmConfig
from ..config.wording import counted
from ..credentials.scrub import StreamScrubber, one_line, scrub, scrub_reply
from ..errors import ProviderError, ResponseFormatUnsupported
from ..record.events import CallRetried, CallStarted, Event, RateLimitWait
from ..record.modelcall import CallOutcome, ChatRequest, ChatResponse, worst_case_tokens
from .clients import Endpoint, EndpointClients
from .decode import (
    ServerSentEvents,
    StreamAccumulator,
    error_message,
    first_line,
    parse_completion,
    response_text,
    retry_after_seconds,
)
from .hints import HINT_DOWN, HINT_REFUSED, RETRYABLE_STATUS, http_hint, refuses_tools
from .ratelimits import RateLimits

__all__ = ["OpenAIProvider"]

# How servers word a refusal of response_format (their texts: swarmkit/ladder.py), e.g.
# llama-cpp-python's HTTP 500 "Input should be 'text' or 'json_object'", LM Studio's 400
# "'response_format.type' must be 'json_schema' or 'text'", vLLM's 400 "The provided JSON
# schema contains features not supported by xgrammar.".
_FORMAT_REFUSAL = re.compile(
    r"response_format|json[ _-]?schema|json_object|structured output|guided|grammar", re.I
)


class OpenAIProvider:
    """A :class:`~swarmkit.engine.modelcaller.ModelCaller` over the ``openai`` SDK, with clients
    per endpoint and key. Every call it serves is ``live``."""

    def __init__(self, config: SwarmConfig, *, env: Mapping[str, str] | None = None) -> None:
        self.config = config
        self._endpoints = EndpointClients(config, env)
        self._rng = random.Random()
        self._limits = RateLimits(config)

    async def aclose(self) -> None:
        await self._endpoints.aclose()

    def check_keys(self) -> None:
        """Raise, before the run starts, the ConfigError that a role's first call would
        (a key variable that is not set): a refusal, so no run is recorded, rather than
        a run that fails at its first call. Only the roles the run will call."""
        config = self.config
        roles = [name for name, calls in (("planner", not config.tasks), ("worker", True),
                                          ("reducer", config.reduce)) if calls]
        for name in (*roles, *(("judge",) if config.judge is not None else ())):
            self._endpoints.endpoint(config.role(name))

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
    ) -> CallOutcome:
        endpoint = self._endpoints.endpoint(role)  # a missing key fails before anything waits
        key_envs = self._endpoints.key_envs(role) or (endpoint.key_env,)
        # Only a TPM window counts tokens; sizing the request is per-call work otherwise.
        tokens = worst_case_tokens(request, role) if self.config.tpm is not None else 0
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
                endpoint = self._endpoints.endpoint(role, admission.key_env)
                client = await self._endpoints.client(endpoint)
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
            return CallOutcome(response, "live", attempt, time.monotonic() - started)

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
        # A server's Retry-After is honoured within 0 .. backoff_max: an hour's quota reset
        # must not hold the run, and decode already dropped NaN, inf and words.
        if retry_after is not None and math.isfinite(retry_after):
            return min(max(retry_after, 0.0), self.config.backoff_max)
        ceiling = min(self.config.backoff_max, self.config.backoff_base * 2 ** (attempt - 1))
        return self._rng.uniform(0, ceiling)

    def _final(self, exc: ProviderError, attempts: int, endpoint: Endpoint) -> ProviderError:
        """The error the caller sees: what happened, how often, and what to do."""
        message = str(exc)
        if exc.retryable:
            message += f" (gave up after {counted(attempts, 'attempt')})"
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
        endpoint: Endpoint,
        request: ChatRequest,
        headers: dict[str, str],
        on_delta: Callable[[str], None] | None,
    ) -> ChatResponse:
        import openai

        body = request.body()
        # A relay may echo the key in a reply. It is scrubbed here, where it enters, not
        # by each writer: every copy (cache, cassette, Run, history, the cell's display,
        # the next turn's request) then holds the same text, so a replay matches it and
        # the live view (scrubbed piece by piece) shows exactly the answer that is kept.
        try:
            if request.stream:
                return await self._streamed(client, endpoint, body, headers, on_delta)
            # Not chat.completions.create(): it re-walks the body against the SDK's typed
            # params and builds pydantic models of the reply, a large share of a call's
            # CPU (benchmarks/README.md). The body is plain JSON already; decode reads JSON.
            completion = await client.post(
                "/chat/completions", body=body, cast_to=object,
                options={"headers": headers, "security": {"bearer_auth": True}},
            )
            response = parse_completion(completion)
            if response is None:
                raise _malformed(endpoint, "no choices")
            return scrub_reply(response, extra=self._endpoints.secrets)
        except openai.APIStatusError as exc:
            raise self._status_error(exc, endpoint, request) from None
        except openai.APIConnectionError as exc:  # APITimeoutError is one too
            root = _root_cause(exc)
            if isinstance(root, TimeoutError) or (
                isinstance(exc, openai.APITimeoutError) and root in (exc, exc.__cause__)
            ):
                raise _AttemptError(
                    f"no answer from {endpoint.host} within {self.config.call_timeout:g}s",
                    hint=HINT_DOWN, retryable=True,
                ) from None
            if _refused(exc):  # nothing listens there: a wrong URL, or a server not up
                raise _AttemptError(f"connection refused by {endpoint.host}", hint=HINT_REFUSED,
                                    retryable=True) from None
            # The aiohttp transport reports a dropped connection as a connect timeout;
            # the exception it wraps says what really happened.
            message = getattr(root, "message", None)  # aiohttp's, without its pseudo-status
            text = message if isinstance(message, str) else str(root)
            text = _AIOHTTP_REPR.sub(r"\1", text).strip().rstrip(".")
            detail = self._line(text or type(root).__name__, 120)
            raise _AttemptError(
                f"connection dropped by {endpoint.host} ({detail})",
                hint=HINT_DOWN, retryable=True,
            ) from None
        except openai.APIResponseValidationError:
            raise _malformed(endpoint, "not a chat completion") from None
        except openai.APIError as exc:  # any other error the SDK reports
            raise self._mid_answer(endpoint, exc.message) from None
        except (json.JSONDecodeError, UnicodeDecodeError):
            # The SDK decodes bodies as it reads them: garbage surfaces as a decoding error.
            raise _malformed(endpoint, "body is not valid JSON") from None

    async def _streamed(
        self,
        client: Any,
        endpoint: Endpoint,
        body: dict[str, Any],
        headers: dict[str, str],
        on_delta: Callable[[str], None] | None,
    ) -> ChatResponse:
        import httpx2
        import openai

        # post(), not create(), for the same reason as in _attempt. The SDK checks the
        # status; the events are read here, from the response, to the body's end: the
        # SDK's own iterator stops at [DONE] and leaves a chain of half-read generators
        # for the event loop to finalize in later turns.
        stream = await client.post(
            "/chat/completions",
            body={**body, "stream": True, "stream_options": {"include_usage": True}},
            cast_to=object, stream=True, stream_cls=openai.AsyncStream[object],
            options={"headers": headers, "security": {"bearer_auth": True}},
        )
        response = stream.response
        accumulator = StreamAccumulator()
        events = ServerSentEvents()
        scrubber, shown = StreamScrubber(), list[str]()

        def show(text: str) -> None:
            shown.append(text)
            if text and on_delta is not None:
                _deliver(on_delta, text)

        done = False

        def take(data: str | None) -> None:
            nonlocal done
            if data is None or done:
                return
            if data.startswith("[DONE]"):
                done = True  # the rest of the body is still read: the connection is reused
                return
            chunk = json.loads(data)
            if isinstance(chunk, dict) and chunk.get("error"):
                raise self._mid_answer(endpoint, error_message(chunk) or "error event")
            text = accumulator.add(chunk)
            if text:
                show(scrubber.feed(text))

        try:
            async for line in response.aiter_lines():
                take(events.feed(line))
            take(events.end())  # a body that ends without a blank line after its last event
        except httpx2.TimeoutException as exc:
            raise openai.APITimeoutError(request=response.request) from exc
        except httpx2.TransportError as exc:
            raise openai.APIConnectionError(request=response.request) from exc
        finally:
            await response.aclose()
        if accumulator.finish_reason is None:
            # Without a finish reason the answer may be missing its end; ask again.
            raise _AttemptError(
                f"stream from {endpoint.host} ended before the answer finished",
                hint=HINT_DOWN, retryable=True,
            )
        show(scrubber.flush())
        return scrub_reply(accumulator.response(), "".join(shown), self._endpoints.secrets)

    def _mid_answer(self, endpoint: Endpoint, message: str) -> _AttemptError:
        """An error event the server sent inside its answer (retried: it may pass)."""
        return _AttemptError(
            f"error from {endpoint.host} mid-answer: {self._line(message, 200)}",
            hint=HINT_DOWN, retryable=True,
        )

    def _status_error(
        self, exc: Any, endpoint: Endpoint, request: ChatRequest
    ) -> ProviderError:
        status = int(exc.status_code)
        raw = response_text(exc.response)
        # Scrubbed before it is cut: a key straddling the cut would leave a fragment.
        detail = self._line(error_message(exc.body), 200) or self._line(first_line(raw), 120)
        detail = detail or self._line(exc.message, 120)
        message = f"HTTP {status} from {endpoint.host}: {detail}"
        retry_after = retry_after_seconds(exc.response.headers)
        # A 4xx or 5xx that names structured output is a refusal: the planner takes the
        # next rung at once (retrying a 500 from llama.cpp does not help).
        if (
            request.response_format is not None
            and (status in (400, 415, 422) or status >= 500)
            and _FORMAT_REFUSAL.search(f"{detail}\n{raw}")
        ):
            kind = request.response_format.get("type", "this")
            return ResponseFormatUnsupported(
                f"{endpoint.host} does not accept response_format {kind!r} "
                f"(HTTP {status}: {one_line(detail, 120)}); use a simpler format",
                status=status,
            )
        retryable = status in RETRYABLE_STATUS or status >= 500
        if request.tools and refuses_tools(status, f"{detail}\n{raw}"):
            retryable = False  # it says so every time (a tree's worker: no split)
        return _AttemptError(message, hint=http_hint(status, detail), status=status,
                             retryable=retryable,
                             retry_after=retry_after)

    def _scrub(self, text: str) -> str:
        return scrub(text, self._endpoints.secrets)

    def _line(self, text: str, limit: int) -> str:
        """Scrubbed first, then made one line and cut: never the other way round."""
        return one_line(self._scrub(text), limit)


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


# aiohttp's exceptions quote others as <ContentLengthError: 400, message='...'>.
_AIOHTTP_REPR = re.compile(r"<\w+: \d+, message='([^']*)'>")


def _refused(exc: BaseException) -> bool:
    """Whether the connection was refused (ECONNREFUSED), anywhere in the chain the SDK
    and its transport wrap it in."""
    seen: BaseException | None = exc
    for _ in range(16):  # a chain is short; a cycle must not hang the call
        if seen is None:
            return False
        os_error = getattr(seen, "os_error", None)  # aiohttp's ClientConnectorError
        if isinstance(seen, ConnectionRefusedError) or isinstance(os_error,
                                                                  ConnectionRefusedError):
            return True
        if isinstance(seen, OSError) and seen.errno == errno.ECONNREFUSED:
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _root_cause(exc: BaseException) -> BaseException:
    while exc.__cause__ is not None:
        exc = exc.__cause__
    return exc


def _malformed(endpoint: Endpoint, detail: str) -> _AttemptError:
    return _AttemptError(
        f"malformed response from {endpoint.host} ({detail})",
        hint="check that base_url points at an OpenAI-compatible /v1 endpoint", retryable=True,
    )
