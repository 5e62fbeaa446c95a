"""The forecast's accuracy: expected/spent and bound/spent over a spread of runs.

    python benchmarks/forecast.py            # 4 worker counts x 3 max_tokens, 3 warm-ups
    python benchmarks/forecast.py --quick    # 2 x 2, 3 warm-ups: checks the script works

Issue 31: the dry run's only figure was a worst-case bound, 6x the spend, which cannot
tell a user whether to go ahead. This measures the expected figure that
``swarmkit.plan(...).forecast`` learns from the history, next to the bound, on the
loopback FakeServer (the real openai client, gpt-4.1-mini's prices, one history file).

The server's replies are sized like a model's, not like the bound: each worker writes
between 60 and 420 tokens (the size drawn from its sub-task's text, so it differs from
one worker to the next and from one run to the next), the reducer 120 to 360, each cut
at the request's ``max_tokens`` as a model's would be. Three warm-up runs fill the
history; then, for every worker count and ``max_tokens`` of the spread, in that order,
a plan is made, its forecast read, and it is run. Each run also teaches the next: the
history is the one a user's would be.

It prints a row per run and then, for each figure, the median of figure/spent and the
worst case (the ratio farthest from 1).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import sys
import tempfile
from decimal import Decimal
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent)]  # swarmkit itself

__all__ = ["main", "reply", "spread"]

MODEL = "gpt-4.1-mini"
KEY_ENV = "BENCH_API_KEY"
WORKERS = (2, 4, 8, 16)
MAX_TOKENS = (128, 512, 2048)
TOPICS = ("rivers", "deserts", "forests", "glaciers", "volcanoes", "islands", "caves",
          "lakes", "canyons", "reefs", "steppes", "fjords", "deltas", "plateaus")
_TEXT = ("the quick survey notes each site with its history, its people and its "
         "economy, then the risks it faces and what is being done about them ")


def _size(text: str, low: int, high: int) -> int:
    digest = hashlib.sha256(text.encode()).digest()
    return low + int.from_bytes(digest[:4], "big") % (high - low + 1)


def _tokens(count: int) -> str:
    """Text the fake tokenizer counts as ``count`` tokens (four characters a token)."""
    return (_TEXT * (count * 4 // len(_TEXT) + 1))[:count * 4]


def reply(request: Any) -> Any:
    """The FakeServer's handler: a plan of the asked size, replies sized like a model's."""
    from swarmkit.testing import FakeReply, default_reply

    if request.role == "planner":
        return default_reply(request, plan_tasks=_plan_size[0])
    if request.role == "reducer":
        return FakeReply(content=_tokens(_size(request.last_user_message, 120, 360)))
    return FakeReply(content=_tokens(_size(request.last_user_message, 60, 420)))


_plan_size = [4]


def spread(quick: bool) -> list[tuple[int, int]]:
    workers, caps = ((4, 8), (256, 1024)) if quick else (WORKERS, MAX_TOKENS)
    return [(n, cap) for n in workers for cap in caps]


def _ratio(value: Decimal | None, spent: Decimal) -> float | None:
    return None if value is None else float(value / spent)


def _worst(ratios: list[float]) -> float:
    return max(ratios, key=lambda r: abs(r - 1))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a small spread")
    args = parser.parse_args(argv)
    os.environ[KEY_ENV] = "sk-bench"
    import swarmkit
    from swarmkit.testing import FakeServer

    rows: list[tuple[int, int, Decimal, float | None, float | None, str]] = []
    with tempfile.TemporaryDirectory(prefix="swarmkit-forecast-") as folder, \
            FakeServer(handler=reply, lifetime=3600) as server:
        options: dict[str, Any] = {
            "model": MODEL, "base_url": server.base_url, "api_key_env": KEY_ENV,
            "history_path": str(Path(folder, "history.db")), "concurrency": 8,
            "backoff_base": 0.001}
        topics = iter(TOPICS * 4)
        for _ in range(3):  # warm-up: the history's first runs
            _plan_size[0] = 4
            swarmkit.run_sync(f"Survey the {next(topics)} of the world", **options)
        for workers, cap in spread(args.quick):
            _plan_size[0] = workers
            plan = swarmkit.plan_sync(f"Survey the {next(topics)} of the world",
                                      workers=workers, max_tokens=cap, **options)
            forecast = plan.forecast
            run = plan.run_sync()
            spent = run.cost_usd or Decimal(0)  # the planner's call included (carried)
            rows.append((workers, cap, spent, _ratio(forecast.expected_usd, spent),
                         _ratio(forecast.bound_usd, spent), forecast.basis))
    print(f"{'workers':>7} {'max_tokens':>10} {'spent':>10} {'expected/spent':>14} "
          f"{'bound/spent':>11}")
    for workers, cap, spent, expected, bound, _ in rows:
        shown = "-" if expected is None else f"{expected:.2f}"
        print(f"{workers:>7} {cap:>10} {'$' + format(spent, '.6f'):>10} {shown:>14} "
              f"{'-' if bound is None else format(bound, '.2f'):>11}")
    expected = [r[3] for r in rows if r[3] is not None]
    bounds = [r[4] for r in rows if r[4] is not None]
    print(f"basis of the last: {rows[-1][5]}")
    print(f"expected/spent over {len(expected)} runs: median {statistics.median(expected):.2f}, "
          f"worst {_worst(expected):.2f}")
    print(f"bound/spent over {len(bounds)} runs: median {statistics.median(bounds):.2f}, "
          f"worst {_worst(bounds):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
