"""The floor for a fan-out: a plain aiohttp ``gather`` of worker calls, no SDK at all.

    python benchmarks/raw_client.py --base-url URL --workers 100000 --concurrency 500

Given tasks (no planner, as in ``--scale``): N POSTs to ``/chat/completions`` with the
same messages a swarmkit worker sends, under an ``asyncio.Semaphore(C)`` on one
``aiohttp.ClientSession``, every reply's content kept in a list. ``--reduce`` adds one
reducer call over every output, as ``baseline.py`` does. Prints one JSON line in the
shape of ``baseline.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from typing import Any

import aiohttp
from baseline import REDUCER_PROMPT, WORKER_PROMPT
from common import client_parser, given_tasks, measure_and_print

__all__ = ["main", "swarm"]


async def swarm(session: aiohttp.ClientSession, url: str, headers: dict[str, str], task: str,
                model: str, workers: int, concurrency: int, reduce: bool) -> tuple[int, int]:
    """Run the fan-out; returns the number of outputs and of HTTP calls."""
    subtasks = given_tasks(workers)
    slots = asyncio.Semaphore(concurrency)

    async def call(messages: list[dict[str, str]], max_tokens: int) -> str:
        body = {"model": model, "messages": messages, "max_tokens": max_tokens}
        async with session.post(url, json=body, headers=headers) as response:
            response.raise_for_status()
            data = await response.json()
        return str(data["choices"][0]["message"]["content"] or "")

    async def work(index: int, subtask: str) -> str:
        async with slots:
            return await call([
                {"role": "system", "content": WORKER_PROMPT},
                {"role": "user", "content": f"Overall task: {task}\n\n"
                 f"Your sub-task ({index} of {len(subtasks)}): {subtask}"},
            ], 1024)

    outputs = await asyncio.gather(*(work(i, t) for i, t in enumerate(subtasks, start=1)))
    if not reduce:
        return len(outputs), len(outputs)
    parts = [f"Task: {task}", ""]
    for index, (subtask, output) in enumerate(zip(subtasks, outputs, strict=True), start=1):
        parts += [f"Worker {index} (sub-task: {subtask}):", output, ""]
    await call([{"role": "system", "content": REDUCER_PROMPT},
                {"role": "user", "content": "\n".join(parts).rstrip()}], 2048)
    return len(outputs), len(outputs) + 1


async def _swarm(args: argparse.Namespace) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {os.environ.get(args.api_key_env, 'none')}"}
    connector = aiohttp.TCPConnector(limit=args.concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:
        outputs, calls = await swarm(
            session, args.base_url.rstrip("/") + "/chat/completions", headers, args.task,
            args.model, args.workers, args.concurrency, args.reduce)
    return {"calls": calls, "ok": outputs == args.workers}


def main(argv: list[str] | None = None) -> int:
    parser = client_parser(__doc__.splitlines()[0])
    parser.add_argument("--reduce", action="store_true", help="one reducer call at the end")
    return measure_and_print(_swarm(parser.parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main())
