"""The hand-written competitor: planner → asyncio.gather under a semaphore → reducer.

This is the plain pattern people write without a framework, using ``AsyncOpenAI``
directly, with the same request shapes swarmkit sends (a ``json_schema`` plan, one
call per sub-task, one reducer call over every output). It is what swarmkit has to
match or beat.

    python benchmarks/baseline.py --base-url http://127.0.0.1:PORT/v1 --workers 100 --concurrency 20

Prints one JSON line: wall seconds, CPU seconds and HTTP calls of the timed part, and
the peak RSS of this process.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from typing import Any

import openai
from common import client_parser, import_http_stack, measure_and_print

__all__ = ["main", "swarm"]

PLANNER_PROMPT = (
    "Split the user's task into at most {n} independent sub-tasks that can be worked on "
    'in parallel. Reply with JSON only: {{"tasks": ["sub-task 1", ...]}}.'
)
WORKER_PROMPT = (
    "You are one worker in a team. Solve only the sub-task you are given, concisely and "
    "concretely. Your answer will be merged with the other workers' answers."
)
REDUCER_PROMPT = (
    "You merge the answers of several workers into one final answer to the original task. "
    "Resolve contradictions, drop repetition, and keep what is specific."
)
PLAN_FORMAT = {
    "type": "json_schema",
    "json_schema": {
        "name": "swarm_plan",
        "strict": True,
        "schema": {
            "type": "object",
            "properties": {"tasks": {"type": "array", "items": {"type": "string"}}},
            "required": ["tasks"],
            "additionalProperties": False,
        },
    },
}


async def swarm(
    client: openai.AsyncOpenAI, task: str, model: str, workers: int, concurrency: int
) -> tuple[str, int]:
    """Run one swarm; returns the answer and the number of HTTP calls made."""
    plan = await client.chat.completions.create(
        model=model,
        messages=[
            {"role": "system", "content": PLANNER_PROMPT.format(n=workers)},
            {"role": "user", "content": task},
        ],
        response_format=PLAN_FORMAT,  # type: ignore[arg-type]
        max_tokens=1024,
    )
    subtasks: list[str] = json.loads(plan.choices[0].message.content or "{}")["tasks"][:workers]
    slots = asyncio.Semaphore(concurrency)

    async def work(index: int, subtask: str) -> str:
        async with slots:
            reply = await client.chat.completions.create(
                model=model,
                messages=[
                    {"role": "system", "content": WORKER_PROMPT},
                    {
                        "role": "user",
                        "content": f"Overall task: {task}\n\n"
                        f"Your sub-task ({index} of {len(subtasks)}): {subtask}",
                    },
                ],
                max_tokens=1024,
            )
            return reply.choices[0].message.content or ""

    outputs = await asyncio.gather(*(work(i, t) for i, t in enumerate(subtasks, start=1)))
    parts = [f"Task: {task}", ""]
    for index, (subtask, output) in enumerate(zip(subtasks, outputs, strict=True), start=1):
        parts += [f"Worker {index} (sub-task: {subtask}):", output, ""]
    answer = await client.chat.completions.create(
        model=model,
        messages=[
            {"role": "system", "content": REDUCER_PROMPT},
            {"role": "user", "content": "\n".join(parts).rstrip()},
        ],
        max_tokens=2048,
    )
    return answer.choices[0].message.content or "", len(subtasks) + 2


async def _swarm(args: argparse.Namespace) -> dict[str, Any]:
    client = openai.AsyncOpenAI(
        base_url=args.base_url, api_key=os.environ.get(args.api_key_env, "none"), max_retries=0
    )
    try:
        answer, calls = await swarm(client, args.task, args.model, args.workers, args.concurrency)
    finally:
        await client.close()
    return {"calls": calls, "ok": bool(answer)}


def main(argv: list[str] | None = None) -> int:
    args = client_parser(__doc__.splitlines()[0]).parse_args(argv)
    import_http_stack()  # outside the clock, as in swarm_client.py
    return measure_and_print(_swarm(args))


if __name__ == "__main__":
    sys.exit(main())
