"""swarmkit's side of the comparison: the same swarm through ``swarmkit.run``.

    python benchmarks/swarm_client.py --base-url URL --workers 100 --concurrency 20

Prints one JSON line in the same shape as ``baseline.py``. Imports (the SDK and its
HTTP stack) happen before the clock starts, as in the baseline: both time the swarm only.
``--option key=value`` passes more options to ``swarmkit.run`` (values are JSON or text).
``--given-tasks`` gives the N sub-tasks of ``raw_client.py`` instead of planning them;
``--display`` then builds the Run's final display (text/plain and text/html) after the
clock and reports its size and time, how much of that time went to garbage
collections, and the CPU time of this thread while it was built (the rest of the time is
spent waiting for the GIL, e.g. while the history writer saves the run).
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
from typing import Any

from common import client_parser, given_tasks, import_http_stack, measure_and_print

import swarmkit
import swarmkit.api  # the modules a run uses, imported before the clock
import swarmkit.provider
import swarmkit.store
import swarmkit.tools
from swarmkit.store.writethread import wait_for_writes

__all__ = ["main", "parse_options"]

_runs: list[swarmkit.Run] = []


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
    options = parse_options(args.option)
    if args.given_tasks:
        options["tasks"] = given_tasks(args.workers)
    run = await swarmkit.run(
        args.task, model=args.model, base_url=args.base_url, api_key_env=args.api_key_env,
        workers=args.workers, concurrency=args.concurrency, **options,
    )
    _runs.append(run)
    return {
        "calls": sum(c.attempts for c in run.calls), "ok": run.status == "completed",
        "workers": len(run.workers), "retries": len(run.retries), "run_duration": run.duration,
    }


def final_display() -> dict[str, Any]:
    """The Run's text/plain and text/html, as a notebook would get them; then the wait
    for the run's final save to the history (else it would happen at exit, unmeasured)."""
    run = _runs[-1]
    collecting = _CollectionClock()
    gc.callbacks.append(collecting)
    started, cpu = time.perf_counter(), time.thread_time()
    text, html = str(run), run._repr_html_()
    shown, cpu = time.perf_counter(), time.thread_time() - cpu
    gc.callbacks.remove(collecting)
    wait_for_writes()  # the run's final save to the history, as a kernel pays it later
    return {"display_s": shown - started, "save_s": time.perf_counter() - shown,
            "display_gc_s": collecting.seconds, "display_cpu_s": cpu,
            "display_bytes": len(text.encode()) + len(html.encode())}


class _CollectionClock:
    """Time spent in garbage collections, as a ``gc.callbacks`` entry: the display's
    share of it is mostly the full collection the fan-out held off (engine/gcpause.py)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self._started = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.seconds += time.perf_counter() - self._started


def main(argv: list[str] | None = None) -> int:
    parser = client_parser(__doc__.splitlines()[0])
    parser.add_argument("--option", action="append", default=[], help="key=value for run()")
    parser.add_argument("--given-tasks", action="store_true", help="no planner: N given tasks")
    parser.add_argument("--display", action="store_true", help="measure the final display")
    args = parser.parse_args(argv)
    import_http_stack()  # outside the clock, as in baseline.py
    return measure_and_print(_swarm(args), final_display if args.display else None)


if __name__ == "__main__":
    sys.exit(main())
