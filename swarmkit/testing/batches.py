"""The FakeServer's Batch API: files, batches, their status, output and error files.

Endpoints (OpenAI's shapes, enough for the ``openai`` SDK): ``POST /v1/files``
(multipart, ``purpose=batch``), ``GET /v1/files/{id}/content``, ``POST /v1/batches``,
``GET /v1/batches/{id}``, ``POST /v1/batches/{id}/cancel``.

A batch goes ``validating`` → ``in_progress`` → ``finalizing`` → ``completed``, each
step after ``delay`` seconds, with ``request_counts`` as its lines are answered. Each
line is answered by the server's handler (or its default script) as a live request
would be, its step taken from the ``custom_id`` (``<run>/worker-3``): a reply is an
output line, a :class:`~swarmkit.testing.Fault` an error-file line with the fault's
status and body. With ``expire_after`` seconds, lines not answered by then are written
to the error file as ``batch_expired`` and the batch ends ``expired``. A cancel ends it
``cancelled`` (through ``cancelling``) with what was answered. A file that is not JSONL
of ``{"custom_id", "method", "url", "body"}`` lines with unique ids fails the batch.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from ._responses import json_error
from .faults import Fault
from .replies import FakeReply, FakeRequest, RecordedRequest, completion_body

# How the server answers one request (its handler or default script), and its latency.
Answer = Callable[[FakeRequest], Awaitable[FakeReply | Fault]]

__all__ = ["Answer", "FakeBatch", "FakeBatches"]

_ENDPOINT = "/v1/chat/completions"


@dataclass
class FakeBatch:
    """One batch as the fake server holds it."""

    id: str
    input_file_id: str
    metadata: dict[str, Any]
    lines: list[dict[str, Any]]
    created_at: int
    status: str = "validating"
    completed: int = 0
    failed: int = 0
    output: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    output_file_id: str | None = None
    error_file_id: str | None = None
    failure: str | None = None  # why validation failed
    cancel_requested: bool = False
    cancel: asyncio.Event = field(default_factory=asyncio.Event)  # set with cancel_requested

    def to_json(self) -> dict[str, Any]:
        errors = None if self.failure is None else {
            "object": "list", "data": [{"code": "invalid_file", "message": self.failure}]}
        return {
            "id": self.id, "object": "batch", "endpoint": _ENDPOINT, "errors": errors,
            "input_file_id": self.input_file_id, "completion_window": "24h",
            "status": self.status, "output_file_id": self.output_file_id,
            "error_file_id": self.error_file_id, "created_at": self.created_at,
            "request_counts": {"total": len(self.lines), "completed": self.completed,
                               "failed": self.failed},
            "metadata": self.metadata,
        }


class FakeBatches:
    """The batch endpoints of one :class:`~swarmkit.testing.FakeServer`: ``created``
    batches, the ids ``cancelled``, and ``requests``, every line answered (as the
    server's ``requests`` holds its live ones)."""

    def __init__(self, answer: Answer, latency: Callable[[], float], *, delay: float = 0.05,
                 expire_after: float | None = None) -> None:
        self.answer = answer
        self.latency = latency
        self.delay = delay
        self.expire_after = expire_after
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, FakeBatch] = {}
        self.cancelled: list[str] = []  # batch ids whose cancel was asked for
        self.requests: list[RecordedRequest] = []
        self._ids = itertools.count(1)
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def created(self) -> int:
        """How many batches were created."""
        return len(self.batches)

    def routes(self, app: web.Application) -> None:
        app.router.add_post("/v1/files", self._upload)
        app.router.add_get("/v1/files/{id}/content", self._content)
        app.router.add_post("/v1/batches", self._create)
        app.router.add_get("/v1/batches/{id}", self._retrieve)
        app.router.add_post("/v1/batches/{id}/cancel", self._cancel)

    def _file(self, data: bytes, purpose: str, name: str) -> dict[str, Any]:
        file_id = f"file-fake-{next(self._ids)}"
        self.files[file_id] = data
        return {"id": file_id, "object": "file", "bytes": len(data), "created_at": 0,
                "filename": name, "purpose": purpose, "status": "processed"}

    async def _upload(self, request: web.Request) -> web.Response:
        form = await request.post()
        upload, purpose = form.get("file"), form.get("purpose")
        if purpose != "batch" or not hasattr(upload, "file"):
            return json_error(400, "upload a file with purpose=batch")
        return web.json_response(self._file(upload.file.read(), "batch",  # type: ignore[union-attr]
                                            str(upload.filename)))  # type: ignore[union-attr]

    async def _content(self, request: web.Request) -> web.Response:
        data = self.files.get(request.match_info["id"])
        if data is None:
            return json_error(404, "no such file")
        return web.Response(body=data, content_type="application/octet-stream")

    async def _create(self, request: web.Request) -> web.Response:
        body = await request.json()
        data = self.files.get(str(body.get("input_file_id")))
        if data is None:
            return json_error(400, "input_file_id names no uploaded file")
        if body.get("endpoint") != _ENDPOINT or body.get("completion_window") != "24h":
            return json_error(400, f"endpoint must be {_ENDPOINT}, completion_window 24h")
        batch = FakeBatch(f"batch_fake_{next(self._ids)}", body["input_file_id"],
                          dict(body.get("metadata") or {}), [], int(time.time()))
        batch.lines, batch.failure = _parse(data)
        self.batches[batch.id] = batch
        task = asyncio.get_running_loop().create_task(self._process(batch))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return web.json_response(batch.to_json())

    async def _retrieve(self, request: web.Request) -> web.Response:
        batch = self.batches.get(request.match_info["id"])
        if batch is None:
            return json_error(404, "no such batch")
        return web.json_response(batch.to_json())

    async def _cancel(self, request: web.Request) -> web.Response:
        batch = self.batches.get(request.match_info["id"])
        if batch is None:
            return json_error(404, "no such batch")
        self.cancelled.append(batch.id)
        if batch.status in ("validating", "in_progress", "finalizing"):
            batch.cancel_requested, batch.status = True, "cancelling"
            batch.cancel.set()
        return web.json_response(batch.to_json())

    # -- running a batch ---------------------------------------------------------------

    async def _process(self, batch: FakeBatch) -> None:
        started = time.monotonic()
        await asyncio.sleep(self.delay)
        if batch.failure is not None:
            batch.status = "failed"
            return
        if not batch.cancel_requested:
            batch.status = "in_progress"
        expired = False
        for line in batch.lines:
            if batch.cancel_requested:
                break
            if self.expire_after is not None and time.monotonic() - started > self.expire_after:
                expired = True
                self._error(batch, line, 0, {"code": "batch_expired", "message": "This "
                            "request could not be executed before the completion window "
                            "expired."})
                continue
            await self._answer(batch, line)
        if not batch.cancel_requested:
            batch.status = "finalizing"
        await asyncio.sleep(self.delay)
        if batch.output:
            batch.output_file_id = self._file(_jsonl(batch.output), "batch_output",
                                              "output.jsonl")["id"]
        if batch.errors:
            batch.error_file_id = self._file(_jsonl(batch.errors), "batch_output",
                                             "errors.jsonl")["id"]
        batch.status = ("cancelled" if batch.cancel_requested
                        else "expired" if expired else "completed")

    async def _answer(self, batch: FakeBatch, line: dict[str, Any]) -> None:
        request_id = line["custom_id"]
        run_id, _, step = request_id.rpartition("/")
        fake = FakeRequest(body=line["body"], step=step, attempt=1,
                           headers={"x-swarm-batch": batch.id}, run_id=run_id or None)
        self.requests.append(RecordedRequest(
            step=step, attempt=1, run_id=fake.run_id, authorization=None, body=fake.body,
            arrived_at=time.monotonic(), headers=fake.headers))
        reply = await self.answer(fake)
        if isinstance(reply, Fault):
            try:
                error_body = json.loads(reply.error_body())
            except ValueError:
                error_body = {"error": {"message": reply.error_body()}}
            self._error(batch, line, reply.http_status or 500, None, error_body)
            return
        latency = reply.latency if reply.latency is not None else self.latency()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(batch.cancel.wait(), latency)
        if batch.cancel_requested:
            return  # a cancel drops the line in flight: it gets no answer
        body = completion_body(fake, reply, f"chatcmpl-fake-batch-{next(self._ids)}")
        batch.output.append(json.dumps({
            "id": f"batch_req_{next(self._ids)}", "custom_id": request_id,
            "response": {"status_code": 200, "request_id": "fake", "body": body},
            "error": None}))
        batch.completed += 1

    def _error(self, batch: FakeBatch, line: dict[str, Any], status: int,
               error: dict[str, Any] | None, body: dict[str, Any] | None = None) -> None:
        response = None if status == 0 else {"status_code": status, "request_id": "fake",
                                             "body": body}
        batch.errors.append(json.dumps({"id": f"batch_req_{next(self._ids)}",
                                        "custom_id": line["custom_id"], "response": response,
                                        "error": error}))
        batch.failed += 1


def _jsonl(lines: list[str]) -> bytes:
    return "".join(line + "\n" for line in lines).encode()


def _parse(data: bytes) -> tuple[list[dict[str, Any]], str | None]:
    """The lines of a batch input file, or why it is refused."""
    lines: list[dict[str, Any]] = []
    seen: set[str] = set()
    for number, text in enumerate(data.decode("utf-8", "replace").splitlines(), start=1):
        if not text.strip():
            continue
        try:
            line = json.loads(text)
        except ValueError:
            return [], f"line {number} is not JSON"
        if (not isinstance(line, dict) or not isinstance(line.get("custom_id"), str)
                or line.get("url") != _ENDPOINT or not isinstance(line.get("body"), dict)):
            return [], f"line {number} is not a {_ENDPOINT} request with a custom_id"
        if line["custom_id"] in seen:
            return [], f"line {number} repeats custom_id {line['custom_id']!r}"
        seen.add(line["custom_id"])
        lines.append(line)
    if not lines:
        return [], "the file has no requests"
    return lines, None

