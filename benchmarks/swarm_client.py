"""swarmkit's side of the comparison: the same swarm through ``swarmkit.run``.

    python benchmarks/swarm_client.py --base-url URL --workers 100 --concurrency 20

Prints one JSON line in the same shape as ``baseline.py``. Imports (the SDK and its
HTTP stack) happen before the clock starts, as in the baseline: both time the swarm only.
``--option key=value`` passes more options to ``swarmkit.run`` (values are JSON or text).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from common import client_parser, import_http_stack, measure_and_print

import swarmkit
import swarmkit.api  # the modules a run uses, imported before the clock
import swarmkit.provider
import swarmkit.store
import swarmkit.tools

__all__ = ["main", "parse_options"]


def parse_options(pairs: list[str]) -> dict[str, Any]:
    options: dict[str, Any] = {}
    for pair in pairs:
        key, _, text = pair.partition("=")
        try:
            options[key] = json.loads(text)
        except ValueError:
            options[key] = text
    return options


async def _swarm(args: argparse.Namespace) -> dict[str, Any]:
    run = await swarmkit.run(
        args.task, model=args.model, base_url=args.base_url, api_key_env=args.api_key_env,
        workers=args.workers, concurrency=args.concurrency, **parse_options(args.option),
    )
    return {
        "calls": sum(c.attempts for c in run.calls), "ok": run.status == "completed",
        "workers": len(run.workers), "retries": len(run.retries), "run_duration": run.duration,
    }


def main(argv: list[str] | None = None) -> int:
    parser = client_parser(__doc__.splitlines()[0])
    parser.add_argument("--option", action="append", default=[], help="key=value for run()")
    args = parser.parse_args(argv)
    import_http_stack()  # outside the clock, as in baseline.py
    return measure_and_print(_swarm(args))


if __name__ == "__main__":
    sys.exit(main())
