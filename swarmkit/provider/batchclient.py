"""``BatchClient``: the Batch API through the ``openai`` SDK (``--batch``).

It uploads a JSONL file (``files.create(purpose="batch")``), creates its batch on the
chat-completions endpoint with a 24 h window, reads its status (``batches.retrieve``),
its output and error files (``files.content``), and cancels it. The endpoint and key are
the workers' (the same ``EndpointClients`` as a live call). Every failure is one
scrubbed ``ProviderError`` line; answers are scrubbed like live ones.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..config.swarmconfig import RoleConfig, SwarmConfig
from ..credentials.scrub import one_line, scrub, scrub_reply
from ..engine.batchservice import ENDPOINT, BatchAnswer, BatchState
from ..errors import ProviderError
from .clients import EndpointClients
from .decode import error_message, parse_completion

__all__ = ["BatchClient"]

COMPLETION_WINDOW = "24h"


def _field(value: Any, name: str) -> Any:
    return value.get(name) if isinstance(value, dict) else getattr(value, name, None)


class BatchClient:
    """A :class:`~swarmkit.engine.batchservice.BatchService` over the ``openai`` SDK."""

    def __init__(self, config: SwarmConfig, *, env: Mapping[str, str] | None = None) -> None:
        self._endpoints = EndpointClients(config, env)

    async def aclose(self) -> None:
        await self._endpoints.aclose()

    async def _client(self, role: RoleConfig) -> tuple[Any, str]:
        endpoint = self._endpoints.endpoint(role)
        return await self._endpoints.client(endpoint), endpoint.host

    def _line(self, text: str, limit: int = 200) -> str:
        return one_line(scrub(text, self._endpoints.secrets), limit)

    def _error(self, what: str, host: str, exc: Exception) -> ProviderError:
        import openai

        status = getattr(exc, "status_code", None)
        if isinstance(exc, openai.APIStatusError):
            detail = error_message(exc.body) or exc.message
            return ProviderError(f"batch {what}: HTTP {status} from {host}: "
                                 f"{self._line(detail)}", status=status)
        return ProviderError(f"batch {what}: {host} unreachable: {self._line(str(exc))}")

    async def submit(self, jsonl: bytes, *, role: RoleConfig, run_id: str) -> str:
        import openai

        client, host = await self._client(role)
        try:
            upload = await client.files.create(
                file=(f"swarmkit-{run_id}.jsonl", jsonl, "application/jsonl"),
                purpose="batch")
            batch = await client.batches.create(
                input_file_id=upload.id, endpoint=ENDPOINT,
                completion_window=COMPLETION_WINDOW, metadata={"swarmkit_run": run_id})
        except openai.OpenAIError as exc:
            raise self._error("submit", host, exc) from None
        return str(batch.id)

    async def retrieve(self, batch_id: str, *, role: RoleConfig) -> BatchState:
        import openai

        client, host = await self._client(role)
        try:
            batch = await client.batches.retrieve(batch_id)
        except openai.OpenAIError as exc:
            raise self._error(f"{batch_id} status", host, exc) from None
        counts = batch.request_counts
        errors = [self._line(str(_field(e, "message") or ""), 120)
                  for e in (_field(batch.errors, "data") or [])]
        return BatchState(
            batch_id=batch_id, status=str(batch.status),
            total=int(_field(counts, "total") or 0),
            completed=int(_field(counts, "completed") or 0),
            failed=int(_field(counts, "failed") or 0),
            output_file_id=batch.output_file_id, error_file_id=batch.error_file_id,
            error="; ".join(e for e in errors if e) or None)

    async def answers(self, state: BatchState, *, role: RoleConfig) -> list[BatchAnswer]:
        import openai

        client, host = await self._client(role)
        answers: list[BatchAnswer] = []
        for file_id in (state.output_file_id, state.error_file_id):
            if not file_id:
                continue
            try:
                content = await client.files.content(file_id)
            except openai.OpenAIError as exc:
                raise self._error(f"{state.batch_id} results", host, exc) from None
            answers += [self._answer(line) for line in content.text.splitlines()
                        if line.strip()]
        return answers

    def _answer(self, text: str) -> BatchAnswer:
        """One output or error line: a completion (HTTP 200), else its error."""
        try:
            line = json.loads(text)
        except ValueError:
            line = None
        if not isinstance(line, dict) or not isinstance(line.get("custom_id"), str):
            return BatchAnswer("", error="a result line that is not JSON with a custom_id")
        request_id = line["custom_id"]
        response = line.get("response") if isinstance(line.get("response"), dict) else {}
        status = response.get("status_code")
        status = status if isinstance(status, int) else None
        body = response.get("body")
        if status == 200 and isinstance(body, dict):
            reply = parse_completion(body)
            if reply is not None:
                return BatchAnswer(request_id, scrub_reply(reply, extra=self._endpoints.secrets),
                                   status=status)
        error = line.get("error")
        detail = error_message(body) or error_message({"error": error})
        head = f"HTTP {status}: " if status is not None else ""
        expired = isinstance(error, dict) and error.get("code") == "batch_expired"
        return BatchAnswer(request_id, error=head + (self._line(detail) or "no answer"),
                           status=status, expired=expired)

    async def cancel(self, batch_id: str, *, role: RoleConfig) -> None:
        import openai

        client, host = await self._client(role)
        try:
            await client.batches.cancel(batch_id)
        except openai.OpenAIError as exc:
            raise self._error(f"{batch_id} cancel", host, exc) from None
