"""The Batch API seam (``--batch``): what the engine asks of a batch service, and the
values that cross it.

A batch is one JSONL file of requests, one line each (``{"custom_id", "method", "url",
"body"}``), run by the server within a completion window; its answers come back as an
output file and an error file, keyed by ``custom_id``, in no fixed order. The engine
builds the lines (:func:`batch_line`: the body is exactly the live request's) and reads
:class:`BatchAnswer`s; ``swarmkit.provider.batchclient`` speaks to the server through the
``openai`` SDK. The format is OpenAI's, also served by other providers and gateways.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from ..config.swarmconfig import RoleConfig
from ..record.modelcall import ChatRequest, ChatResponse, canonical_json

__all__ = [
    "ENDPOINT",
    "MAX_BYTES",
    "MAX_REQUESTS",
    "TERMINAL",
    "BatchAnswer",
    "BatchService",
    "BatchState",
    "batch_line",
    "custom_id",
    "step_of",
]

# Published by OpenAI and Azure: at most this many requests and bytes in one batch file;
# a larger fan-out is several batches.
MAX_REQUESTS = 50_000
MAX_BYTES = 200 * 1024 * 1024
ENDPOINT = "/v1/chat/completions"
# The statuses a batch ends in; validating, in_progress, finalizing and cancelling do not.
TERMINAL = frozenset({"completed", "failed", "expired", "cancelled"})


def custom_id(run_id: str, step: str) -> str:
    """A request's id in the batch: the run and the step (``3f2a.../worker-7``)."""
    return f"{run_id}/{step}"


def step_of(request_id: str) -> str:
    """The step a ``custom_id`` names (``worker-7``)."""
    return request_id.rsplit("/", 1)[-1]


def batch_line(request_id: str, request: ChatRequest) -> bytes:
    """One JSONL line of a batch file: the request's live body under its ``custom_id``."""
    line = {"custom_id": request_id, "method": "POST", "url": ENDPOINT,
            "body": request.body()}
    return (canonical_json(line) + "\n").encode()


@dataclass(frozen=True, slots=True)
class BatchState:
    """A batch as the server last reported it (``request_counts`` as the three counts)."""

    batch_id: str
    status: str
    total: int = 0
    completed: int = 0
    failed: int = 0
    output_file_id: str | None = None
    error_file_id: str | None = None
    error: str | None = None  # why a batch failed as a whole (its validation errors)

    @property
    def done(self) -> bool:
        return self.status in TERMINAL


@dataclass(frozen=True, slots=True)
class BatchAnswer:
    """One line of a batch's output or error file: a response, or an error (scrubbed,
    one line) with the HTTP status when there was one."""

    custom_id: str
    response: ChatResponse | None = None
    error: str | None = None
    status: int | None = None
    expired: bool = False  # not run: the batch's completion window ended first


class BatchService(Protocol):
    """A Batch API at the workers' endpoint (``role``: its base URL and key). Each
    method raises a one-line ``ProviderError`` when the server refuses or fails."""

    async def submit(self, jsonl: bytes, *, role: RoleConfig, run_id: str) -> str:
        """Upload ``jsonl`` and create its batch; returns the batch id."""
        ...

    async def retrieve(self, batch_id: str, *, role: RoleConfig) -> BatchState: ...

    async def answers(self, state: BatchState, *, role: RoleConfig) -> list[BatchAnswer]:
        """Every line of an ended batch's output and error files."""
        ...

    async def cancel(self, batch_id: str, *, role: RoleConfig) -> None: ...

    async def aclose(self) -> None: ...
