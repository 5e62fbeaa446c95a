"""``FakeServer``: a real OpenAI-compatible HTTP server on 127.0.0.1 for tests and demos.

It runs aiohttp's web server on its own event loop in a daemon thread, so synchronous
tests, asyncio tests and notebooks can all point the real ``openai`` client at
``server.base_url``. It records every chat request, answers from a handler (or the
built-in script), injects faults by rule, and can enforce per-key request/token rates.
It always stops by itself after ``lifetime`` seconds or ``max_requests`` requests.
Its Batch API (``/v1/files``, ``/v1/batches``; ``batch_delay``, ``batch_expire_after``) is
``server.batches``, a :class:`swarmkit.testing.batches.FakeBatches`.
"""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import inspect
import json
import threading
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from aiohttp import web

from ._limits import RateLimiter
from ._responses import abort, fault_response, json_error
from .batches import FakeBatches
from .faults import Fault, FaultRule
from .replies import (
    FakeReply,
    FakeRequest,
    RecordedRequest,
    completion_body,
    default_reply,
    estimate_tokens,
    stream_chunks,
)

__all__ = ["FakeServer", "Handler"]

HandlerResult = FakeReply | Fault | str | None
# A handler may return None to fall back to the built-in script, or a str as the content.
Handler = Callable[[FakeRequest], HandlerResult | Awaitable[HandlerResult]]

_HOST = "127.0.0.1"


class FakeServer:
    """An OpenAI-compatible server on 127.0.0.1 with an ephemeral port.

    Use it as a context manager, or call :meth:`start` and :meth:`stop`::

        with FakeServer(latency=0.05, faults=[FaultRule(Fault.rate_limit(0.1), attempts=1)]) as s:
            client = openai.OpenAI(base_url=s.base_url, api_key="test")
    """

    def __init__(
        self,
        handler: Handler | None = None,
        *,
        latency: float = 0.0,
        plan_tasks: int = 4,
        faults: Iterable[FaultRule | Fault] = (),
        max_requests: int = 100_000,
        lifetime: float = 900.0,
        rpm_limit: int | None = None,
        tpm_limit: int | None = None,
        window: float = 60.0,
        port: int = 0,
        models: Iterable[str] = ("fake-model",),
        keep_requests: bool = True,
        batch_delay: float = 0.05, batch_expire_after: float | None = None,
    ) -> None:
        self.handler = handler
        # A long benchmark sends hundreds of thousands of requests: kept, they grow the
        # server's heap, and its garbage collector's pauses show up as latency.
        self.keep_requests = keep_requests
        self.latency = latency
        self.plan_tasks = plan_tasks
        self.max_requests = max_requests
        self.lifetime = lifetime
        self._limiter = RateLimiter(rpm_limit, tpm_limit, window)
        self.models = tuple(models)
        self.port = port
        self.handler_errors: list[BaseException] = []
        self.rejected_429 = 0
        self.models_requests = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self._rules: list[FaultRule] = [self._as_rule(f) for f in faults]
        self._records: list[RecordedRequest] = []
        self._served = 0  # chat requests received, kept or not
        self._lock = threading.Lock()
        self._total = 0
        self._headerless_attempts: Counter[str] = Counter()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        self._closing = False
        self._tasks: set[asyncio.Task[None]] = set()
        self._stopped = threading.Event()
        self.batches = FakeBatches(self._reply, lambda: self.latency, delay=batch_delay,
                                   expire_after=batch_expire_after)

    # lifecycle -------------------------------------------------------------------------

    def start(self) -> FakeServer:
        if self._thread is not None:
            raise RuntimeError("this FakeServer was already started; create a new one")
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._run_loop, name="swarmkit-fake-server", daemon=True
        )
        self._thread.start()
        future = asyncio.run_coroutine_threadsafe(self._serve(), self._loop)
        self.port = future.result(timeout=10)
        return self

    def stop(self) -> None:
        """Stop serving and join the server thread (idempotent)."""
        if self._thread is None or self._loop is None or self._stopped.is_set():
            return
        with contextlib.suppress(RuntimeError):  # the loop closed on its own meanwhile
            asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop)
        self._thread.join(timeout=10)

    @property
    def running(self) -> bool:
        return self._thread is not None and not self._stopped.is_set()

    def wait_stopped(self, timeout: float | None = None) -> bool:  # by itself or stop()
        return self._stopped.wait(timeout)

    def __enter__(self) -> FakeServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        return f"http://{_HOST}:{self.port}/v1"

    @property
    def address(self) -> tuple[str, int]:
        """The (host, port) the server listens on, as the socket reports it."""
        if self._runner is None or not self._runner.addresses:
            raise RuntimeError("the FakeServer is not listening; call start() first")
        host, port = self._runner.addresses[0][:2]
        return str(host), int(port)

    # scripting and inspection ----------------------------------------------------------

    def add_fault(self, rule: FaultRule | Fault) -> None:
        with self._lock:
            self._rules.append(self._as_rule(rule))

    def clear_faults(self) -> None:
        with self._lock:
            self._rules.clear()

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._records)

    def count(self, step_glob: str = "*") -> int:
        with self._lock:
            return sum(1 for r in self._records if fnmatch.fnmatchcase(r.step, step_glob))

    def counts_by_step(self) -> Counter[str]:
        with self._lock:
            return Counter(r.step for r in self._records)

    def clear(self) -> None:
        """Forget recorded requests and counters (faults and limits stay)."""
        with self._lock:
            self._records.clear()
            self._headerless_attempts.clear()
            self._limiter.clear()
            self.rejected_429 = 0
            self.max_in_flight = self.in_flight

    def default_reply(self, request: FakeRequest) -> FakeReply:
        """The built-in script's answer (see :func:`swarmkit.testing.default_reply`)."""
        return default_reply(request, plan_tasks=self.plan_tasks)

    # internals -------------------------------------------------------------------------

    @staticmethod
    def _as_rule(rule: FaultRule | Fault) -> FaultRule:
        return rule if isinstance(rule, FaultRule) else FaultRule(rule)

    def _run_loop(self) -> None:
        assert self._loop is not None
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_forever()
            pending = [t for t in asyncio.all_tasks(self._loop) if not t.done()]
            for task in pending:
                task.cancel()
            if pending:
                self._loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            self._loop.run_until_complete(self._loop.shutdown_asyncgens())
        finally:
            self._loop.close()
            self._stopped.set()

    async def _serve(self) -> int:
        app = web.Application()
        app.router.add_get("/v1/models", self._handle_models)
        app.router.add_post("/v1/chat/completions", self._handle_chat)
        self.batches.routes(app)
        self._runner = web.AppRunner(app, handle_signals=False, access_log=None,
                                     handler_cancellation=True, shutdown_timeout=0.5)
        await self._runner.setup()
        site = web.TCPSite(self._runner, _HOST, self.port)
        await site.start()
        asyncio.get_running_loop().call_later(self.lifetime, self._begin_shutdown)
        return int(self._runner.addresses[0][1])

    def _begin_shutdown(self) -> None:
        task = asyncio.get_running_loop().create_task(self._shutdown())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _shutdown(self) -> None:
        if self._closing:
            return
        self._closing = True
        if self._runner is not None:
            await self._runner.cleanup()
        asyncio.get_running_loop().stop()

    def _admit(self) -> bool:
        """Count one HTTP request; False once the server has served its share."""
        with self._lock:
            self._total += 1
            return self._total <= self.max_requests and not self._closing

    def _after_request(self) -> None:
        if self._total >= self.max_requests and not self._closing:
            self._begin_shutdown()

    async def _handle_models(self, request: web.Request) -> web.Response:
        if not self._admit():
            return json_error(503, "fake server is shutting down", "server_error")
        self.models_requests += 1
        self._after_request()
        data = [{"id": m, "object": "model", "created": 0, "owned_by": "swarmkit"}
                for m in self.models]
        return web.json_response({"object": "list", "data": data})

    async def _handle_chat(self, request: web.Request) -> web.StreamResponse:
        if not self._admit():
            return json_error(503, "fake server is shutting down", "server_error")
        arrived = time.monotonic()
        try:
            body = await request.json()
        except ValueError:
            body = None
        if not isinstance(body, dict):
            self._after_request()
            return json_error(400, "request body must be a JSON object")
        fake = self._record(request, body, arrived)
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            return await self._answer(request, fake)
        finally:
            self.in_flight -= 1
            self._after_request()

    def _record(self, request: web.Request, body: dict[str, Any], arrived: float) -> FakeRequest:
        headers = {k.lower(): v for k, v in request.headers.items()}
        step = headers.get("x-swarm-step", "")
        raw_attempt = headers.get("x-swarm-attempt", "")
        attempt = int(raw_attempt) if raw_attempt.strip().isdigit() else None
        with self._lock:
            self._served += 1
            if self.keep_requests:
                self._records.append(RecordedRequest(
                    step=step, attempt=attempt, run_id=headers.get("x-swarm-run"),
                    authorization=headers.get("authorization"), body=body, arrived_at=arrived,
                    headers=headers,
                ))
            if attempt is None:
                # Without the header, the n-th request of a step counts as attempt n.
                self._headerless_attempts[step] += 1
                attempt = self._headerless_attempts[step]
        return FakeRequest(body=body, step=step, attempt=attempt, headers=headers,
                           run_id=headers.get("x-swarm-run"))

    async def _answer(self, request: web.Request, fake: FakeRequest) -> web.StreamResponse:
        retry_after = None
        if self._limiter.active:
            tokens = estimate_tokens(fake.prompt_chars()) + (fake.max_tokens or 0)
            key = fake.headers.get("authorization", "")
            retry_after = self._limiter.admit(key, tokens, time.monotonic())
        if retry_after is not None:
            self.rejected_429 += 1
            response = json_error(429, "fake rate limit reached", "rate_limit_exceeded")
            response.headers["Retry-After"] = f"{retry_after:.3f}"
            return response
        with self._lock:
            rules = list(self._rules)
        fault = next((r.fault for r in rules if r.applies(fake.step, fake.attempt)), None)
        if fault is not None and fault.kind != "stall":
            await asyncio.sleep(self.latency)
            return await self._send_fault(request, fake, fault)
        if fault is not None:
            await asyncio.sleep(fault.seconds)
        reply = await self._reply(fake)
        if isinstance(reply, Fault):
            await asyncio.sleep(self.latency)
            return await self._send_fault(request, fake, reply)
        await asyncio.sleep(self.latency if reply.latency is None else reply.latency)
        return await self._send_reply(request, fake, reply, cut=False)

    async def _reply(self, fake: FakeRequest) -> FakeReply | Fault:
        if self.handler is None:
            return self.default_reply(fake)
        try:
            result = self.handler(fake)
            if inspect.isawaitable(result):
                result = await result
        except Exception as exc:
            self.handler_errors.append(exc)
            return Fault.status(500, body=json.dumps({"error": {
                "message": f"fake server handler raised {type(exc).__name__}: {exc}",
                "type": "server_error",
            }}))
        if result is None:
            return self.default_reply(fake)
        if isinstance(result, str):
            return FakeReply(content=result)
        return result

    def _completion_id(self) -> str:
        with self._lock:
            return f"chatcmpl-fake-{self._served}"

    async def _send_reply(
        self, request: web.Request, fake: FakeRequest, reply: FakeReply, *, cut: bool
    ) -> web.StreamResponse:
        completion_id = self._completion_id()
        if fake.stream:
            chunks = stream_chunks(fake, reply, completion_id)
            if not cut:
                return await _send_events(request, chunks)
            await _send_events(request, chunks[: max(1, len(chunks) // 2)], end=False)
            return abort(request)
        data = json.dumps(completion_body(fake, reply, completion_id)).encode()
        if not cut:
            return web.Response(body=data, content_type="application/json")
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        response.content_length = len(data)
        await response.prepare(request)
        await response.write(data[: len(data) // 2])
        return abort(request)

    async def _send_fault(
        self, request: web.Request, fake: FakeRequest, fault: Fault
    ) -> web.StreamResponse:
        if fault.http_status == 429:
            self.rejected_429 += 1
        if fault.kind == "drop":
            return abort(request)
        if fault.kind == "stream_cut":
            return await self._send_reply(request, fake, await self._reply(fake), cut=True)
        if fault.kind == "stream_error" and fake.stream:
            return await self._send_stream_error(request, fake, fault)
        return fault_response(fault, stream=fake.stream)

    async def _send_stream_error(
        self, request: web.Request, fake: FakeRequest, fault: Fault
    ) -> web.StreamResponse:
        reply = await self._reply(fake)
        content = reply.content if isinstance(reply, FakeReply) else None
        first = stream_chunks(fake, FakeReply(content=content or "partial"),
                              self._completion_id())[:2]  # the role, then some text
        error = json.dumps({"error": {"message": fault.body, "type": "server_error"}})
        return await _send_events(request, [*first, error])


async def _send_events(
    request: web.Request, payloads: list[str], *, end: bool = True
) -> web.StreamResponse:
    """Server-sent events, one ``data:`` line each; ``end=False`` leaves the body open."""
    response = web.StreamResponse(
        headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
    )
    await response.prepare(request)
    for payload in payloads:
        await response.write(f"data: {payload}\n\n".encode())
    if end:
        await response.write_eof()
    return response
