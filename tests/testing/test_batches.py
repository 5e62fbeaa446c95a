"""FakeServer's Batch API, driven by the real openai client: upload, create, the status
sequence with request_counts, the output and error files, expiry, cancel, a bad file."""

from __future__ import annotations

import json
import time
from typing import Any

import openai
import pytest

from swarmkit.testing import FakeReply, FakeRequest, FakeServer, Fault


def line(custom_id: str, text: str = "hello") -> dict[str, Any]:
    return {"custom_id": custom_id, "method": "POST", "url": "/v1/chat/completions",
            "body": {"model": "fake-model", "messages": [{"role": "user", "content": text}]}}


def jsonl(lines: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(item) + "\n" for item in lines).encode()


def submit(client: openai.OpenAI, data: bytes) -> str:
    upload = client.files.create(file=("in.jsonl", data, "application/jsonl"), purpose="batch")
    batch = client.batches.create(input_file_id=upload.id, endpoint="/v1/chat/completions",
                                  completion_window="24h")
    return batch.id


def finished(client: openai.OpenAI, batch_id: str) -> tuple[Any, list[str]]:
    """The ended batch and every status it was seen in, in order."""
    seen: list[str] = []
    deadline = time.monotonic() + 20
    while True:
        batch = client.batches.retrieve(batch_id)
        if not seen or seen[-1] != batch.status:
            seen.append(batch.status)
        if batch.status in ("completed", "failed", "expired", "cancelled"):
            return batch, seen
        assert time.monotonic() < deadline, f"batch stuck in {batch.status}"
        time.sleep(0.01)


def lines_of(client: openai.OpenAI, file_id: str | None) -> dict[str, dict[str, Any]]:
    if file_id is None:
        return {}
    text = client.files.content(file_id).text
    return {item["custom_id"]: item for item in map(json.loads, text.splitlines())}


@pytest.fixture
def client_for() -> Any:
    clients: list[openai.OpenAI] = []

    def make(server: FakeServer) -> openai.OpenAI:
        client = openai.OpenAI(base_url=server.base_url, api_key="sk-test", max_retries=0)
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.close()


def test_a_batch_goes_through_every_status_and_answers_each_line(client_for: Any) -> None:
    def handler(request: FakeRequest) -> FakeReply | Fault | None:
        if request.step == "worker-2":
            return Fault.status(429)
        return FakeReply(content=f"{request.step} of run {request.run_id}", latency=0.05)

    with FakeServer(handler, batch_delay=0.1) as server:
        client = client_for(server)
        batch_id = submit(client, jsonl([line(f"run1/worker-{i}") for i in (1, 2, 3)]))
        batch, seen = finished(client, batch_id)
        output = lines_of(client, batch.output_file_id)
        errors = lines_of(client, batch.error_file_id)
    assert seen == ["validating", "in_progress", "finalizing", "completed"]
    counts = batch.request_counts
    assert (counts.total, counts.completed, counts.failed) == (3, 2, 1)
    assert set(output) == {"run1/worker-1", "run1/worker-3"}
    answer = output["run1/worker-3"]["response"]
    assert answer["status_code"] == 200
    assert answer["body"]["choices"][0]["message"]["content"] == "worker-3 of run run1"
    assert answer["body"]["usage"]["prompt_tokens"] > 0
    error = errors["run1/worker-2"]["response"]
    assert error["status_code"] == 429 and "429" in error["body"]["error"]["message"]
    assert [r.step for r in server.batches.requests] == ["worker-1", "worker-2", "worker-3"]
    assert server.count() == 0  # batch lines are not live chat requests


def test_lines_past_the_expiry_come_back_batch_expired(client_for: Any) -> None:
    def handler(request: FakeRequest) -> FakeReply:
        return FakeReply(content="done", latency=0.3)

    with FakeServer(handler, batch_expire_after=0.1) as server:
        client = client_for(server)
        batch, _ = finished(client, submit(client, jsonl([line("r/worker-1"),
                                                          line("r/worker-2")])))
        output = lines_of(client, batch.output_file_id)
        errors = lines_of(client, batch.error_file_id)
    assert batch.status == "expired"
    assert list(output) == ["r/worker-1"]
    assert errors["r/worker-2"]["error"]["code"] == "batch_expired"


def test_a_cancel_ends_the_batch_cancelled_with_what_was_answered(client_for: Any) -> None:
    def handler(request: FakeRequest) -> FakeReply:
        return FakeReply(content="slow", latency=0.05 if request.step == "worker-1" else 30)

    with FakeServer(handler) as server:
        client = client_for(server)
        batch_id = submit(client, jsonl([line("r/worker-1"), line("r/worker-2")]))
        deadline = time.monotonic() + 10
        while client.batches.retrieve(batch_id).request_counts.completed < 1:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert client.batches.cancel(batch_id).status == "cancelling"
        batch, _ = finished(client, batch_id)
        output = lines_of(client, batch.output_file_id)
    assert batch.status == "cancelled" and list(output) == ["r/worker-1"]
    assert server.batches.cancelled == [batch_id]


def test_a_file_that_is_not_batch_jsonl_fails_the_batch(client_for: Any) -> None:
    with FakeServer() as server:
        client = client_for(server)
        bad = jsonl([line("r/worker-1"), line("r/worker-1")])  # a repeated custom_id
        batch, _ = finished(client, submit(client, bad))
        with pytest.raises(openai.BadRequestError):
            client.files.create(file=("x.jsonl", b"{}", "application/jsonl"),
                                purpose="fine-tune")
    assert batch.status == "failed"
    assert "repeats custom_id" in batch.errors.data[0].message
    assert server.batches.requests == []
