"""The SDK's own floor for a fan-out: ``raw_client.py``'s calls through ``openai``.

    python benchmarks/sdk_client.py --base-url URL --workers 100000 --concurrency 500

The same N worker calls as ``raw_client.py`` (given tasks, no planner, the messages a
swarmkit worker sends), under an ``asyncio.Semaphore(C)``, every reply's content kept,
but through one ``openai.AsyncOpenAI`` built as swarmkit's provider builds its client
(``swarmkit/provider/clients.py``: the SDK's aiohttp transport, no SDK retries) and
called as the provider calls it (``swarmkit/provider/openaiprovider.py``: ``client.post`` with the
plain JSON body, ``cast_to=object``, and the ``X-Swarm-*`` headers). What is left
between this and swarmkit is swarmkit's own work per call. Prints one JSON line in the
shape of ``baseline.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import ssl
import sys
from typing import Any

import openai
from baseline import WORKER_PROMPT
from common import client_parser, given_tasks, import_http_stack, measure_and_print

__all__ = ["main", "swarm"]


async def swarm(client: openai.AsyncOpenAI, task: str, model: str, workers: int,
                concurrency: int) -> int:
    """Run the fan-out; returns the number of outputs (one HTTP call each)."""
    subtasks = given_tasks(workers)
    slots = asyncio.Semaphore(concurrency)

    async def work(index: int, subtask: str) -> str:
        body = {"model": model, "max_tokens": 1024, "messages": [
            {"role": "system", "content": WORKER_PROMPT},
            {"role": "user", "content": f"Overall task: {task}\n\n"
             f"Your sub-task ({index} of {len(subtasks)}): {subtask}"},
        ]}
        headers = {"X-Swarm-Run": "bench", "X-Swarm-Step": f"worker-{index}",
                   "X-Swarm-Attempt": "1"}
        async with slots:
            data: Any = await client.post(
                "/chat/completions", body=body, cast_to=object,
                options={"headers": headers, "security": {"bearer_auth": True}},
            )
        return str(data["choices"][0]["message"]["content"] or "")

    outputs = await asyncio.gather(*(work(i, t) for i, t in enumerate(subtasks, start=1)))
    return len(outputs)


async def _swarm(args: argparse.Namespace) -> dict[str, Any]:
    # As swarmkit builds it for a plain-http endpoint: no CA bundle loaded.
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT) if args.base_url.startswith("http:") else True
    client = openai.AsyncOpenAI(
        api_key=os.environ.get(args.api_key_env, "none"), base_url=args.base_url,
        max_retries=0, timeout=120.0, http_client=openai.DefaultAioHttpClient(verify=tls),
    )
    try:
        outputs = await swarm(client, args.task, args.model, args.workers, args.concurrency)
    finally:
        await client.close()
    return {"calls": outputs, "ok": outputs == args.workers}


def main(argv: list[str] | None = None) -> int:
    args = client_parser(__doc__.splitlines()[0]).parse_args(argv)
    import_http_stack()  # outside the clock, as in the other clients
    return measure_and_print(_swarm(args))


if __name__ == "__main__":
    sys.exit(main())
