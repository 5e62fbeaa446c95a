"""Checks in a comparison: a scored 2-variant ``swarmkit.compare`` against the same unscored.

    python benchmarks/scoring.py            # N=50 C=8 per variant, 100 ms, 9 repeats
    python benchmarks/scoring.py --quick    # N=10 C=5, 10 ms, one repeat: checks the script works

Issue 27's target: with Python checks only, scoring adds at most 5% to the comparison's
wall time. Against one FakeServer process (a fixed latency per call), each in a fresh
process with its own run history and the cache off, in alternating order (unscored
scored, then scored unscored, ...) after one untimed warm-up of each:

  (unscored)  ``swarmkit.compare(task, variants=[A, B], ...)``, A and B differing in the
              workers' system prompt (compare.py's "worker prompt differs": only the
              planner is shared, so each variant has its own N workers to score);
  (scored)    the same with ``checks=checks()``: six built-ins (contains, regex,
              valid_json, max_length, max_cost, max_latency), an answer check of the
              user's (``short``) and one on each worker output (``cites``). No judge:
              it makes model calls.

It prints each repeat's two walls and their ratio, then the medians, the median of the
per-repeat ratios against the target, and the time ``score_checks`` takes on the two
runs again after the clock (what the checks themselves cost). As a script with
``--client`` it is the measured comparison (one JSON line, ``--checks`` to score it).
"""

from __future__ import annotations

import argparse
import importlib
import os
import statistics
import sys
import time
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]  # the benchmark modules, then swarmkit itself

from common import (  # noqa: E402
    KEY_ENV,
    alternating,
    client_parser,
    fake_server,
    import_http_stack,
    measure_and_print,
)
from compare import CASES  # noqa: E402

__all__ = ["checks", "cites", "main", "report", "short"]

TARGET = 1.05
VARIANTS = CASES["worker prompt differs"]
_comparisons: list[Any] = []


def short(answer: str) -> tuple[bool, str]:
    """A user's answer check: at most 200 words."""
    words = len(answer.split())
    return words <= 200, f"{words} words"


def cites(output: str) -> bool:
    """A user's worker check (``on="workers"`` from its parameter): the output says what
    it answers."""
    return output.startswith("Result for:")


def checks() -> list[Any]:
    """The scored side's checks: Python only, no model calls."""
    from swarmkit import Check

    return [Check.contains("Final answer"), Check.regex(r"merging \d+ results"),
            Check.valid_json(), Check.max_length(2000), Check.max_cost(1.0),
            Check.max_latency(60), short, cites]


async def _compare(args: argparse.Namespace) -> dict[str, Any]:
    import swarmkit

    scored = {"checks": checks()} if args.checks else {}
    comparison = await swarmkit.compare(
        args.task, variants=VARIANTS, model=args.model, base_url=args.base_url,
        api_key_env=args.api_key_env, workers=args.workers, concurrency=args.concurrency,
        cache=False, **scored)
    _comparisons.append(comparison)
    runs = comparison.runs
    return {"calls": sum(c.attempts for run in runs for c in run.calls),
            "ok": all(run.status == "completed" for run in runs),
            "workers": sum(len(run.workers) for run in runs),
            "checks": [score.name for score in runs[0].scores],
            "scores": sum(len(run.scores) for run in runs),
            "passed": sum(s.passed for run in runs for s in run.scores)}


def _checks_again() -> dict[str, Any]:
    """After the clock: ``score_checks`` on each run's answer and outputs again, timed."""
    from swarmkit.engine.scoring import Check, CheckInput, score_checks

    views = [CheckInput(run.answer, tuple(w.output for w in run.workers if w.output),
                        run.cost_usd, run.duration) for run in _comparisons[-1].runs]
    chosen = [Check.of(check) for check in checks()]
    started = time.perf_counter()
    for view in views:
        _driven(score_checks(chosen, view, reduced=True))
    return {"checks_s": time.perf_counter() - started}


def _driven(coroutine: Coroutine[Any, Any, Any]) -> Any:
    """A coroutine that never awaits (the checks here are plain functions), run to its end
    without an event loop (this runs inside the measuring one)."""
    try:
        coroutine.send(None)
    except StopIteration as stop:
        return stop.value
    coroutine.close()
    raise RuntimeError("a check awaited: _driven runs only plain checks")


def _client(argv: list[str]) -> int:
    parser = client_parser(__doc__.splitlines()[0])
    parser.add_argument("--client", action="store_true", help="be the measured comparison")
    parser.add_argument("--checks", action="store_true", help="score it with checks()")
    args = parser.parse_args(argv)
    for module in ("swarmkit.api", "swarmkit.comparison.runner", "swarmkit.engine.scoring"):
        importlib.import_module(module)  # imported before the clock
    import_http_stack()
    return measure_and_print(_compare(args), _checks_again if args.checks else None)


def report(n: int, c: int, latency: float, repeats: int) -> None:
    """Print each repeat's scored / unscored walls, the medians and the median ratio."""
    print(f"scoring: 2-variant compare (worker prompt differs), N={n} C={c} each variant, "
          f"latency {latency * 1000:g} ms, cache off, median of {repeats} (alternating)")
    base = [str(HERE / "scoring.py"), "--client", "--workers", str(n), "--concurrency",
            str(c), "--api-key-env", KEY_ENV]
    with fake_server(latency, n) as url:
        warm, samples = alternating({"unscored": [*base, "--base-url", url],
                                     "scored": [*base, "--base-url", url, "--checks"]},
                                    repeats, "scoring")
    ratios = [s["wall"] / u["wall"]
              for s, u in zip(samples["scored"], samples["unscored"], strict=True)]
    names = warm["scored"]["checks"]
    print(f"  checks ({len(names)}, Python only): {', '.join(names)}")
    for index, (u, s, r) in enumerate(zip(samples["unscored"], samples["scored"], ratios,
                                          strict=True)):
        first = "unscored first" if index % 2 == 0 else "scored first"
        print(f"  repeat {index + 1}: unscored {u['wall']:.3f} s, scored {s['wall']:.3f} s, "
              f"ratio {r:.3f}   (CPU {u['cpu']:.3f} / {s['cpu']:.3f} s; {first})")
    wall, cpu, calls = ({side: statistics.median(x[key] for x in got)
                         for side, got in samples.items()} for key in ("wall", "cpu", "calls"))
    scored = samples["scored"][0]
    print(f"  median: unscored {wall['unscored']:.3f} s ({calls['unscored']:.0f} calls, CPU "
          f"{cpu['unscored']:.3f} s), scored {wall['scored']:.3f} s ({calls['scored']:.0f} "
          f"calls, CPU {cpu['scored']:.3f} s; {scored['scores']} scores, "
          f"{scored['passed']} passed)")
    median = statistics.median(ratios)
    print(f"  ratio scored/unscored: {median:.3f} (median of the per-repeat ratios; "
          f"{min(ratios):.3f}-{max(ratios):.3f}; of the medians "
          f"{wall['scored'] / wall['unscored']:.3f})   target <= {TARGET:.2f}: "
          f"{'met' if median <= TARGET else 'NOT met'}")
    again = statistics.median(s["checks_s"] for s in samples["scored"])
    print(f"  the checks themselves: score_checks on both runs again, after the clock: "
          f"{again * 1000:.2f} ms (median)")
    print(f"  load average at the end: {os.getloadavg()[0]:.1f}")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if "--client" in argv:
        return _client(argv)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="N=10 C=5, 10 ms latency, one repeat: a smoke run, not a figure")
    parser.add_argument("--workers", type=int, default=None, help="per variant (50)")
    parser.add_argument("--concurrency", type=int, default=None, help="per variant (8)")
    parser.add_argument("--latency", type=float, default=None, help="seconds per call (0.1)")
    parser.add_argument("--repeats", type=int, default=None, help="pairs (9)")
    args = parser.parse_args(argv)
    # Here, not at the top: extras imports jupyter_client (through kernel.py), which the
    # measured children have no use for.
    from extras import machine_line

    started = time.perf_counter()
    print(machine_line())
    report(args.workers or (10 if args.quick else 50),
           args.concurrency or (5 if args.quick else 8),
           args.latency if args.latency is not None else (0.01 if args.quick else 0.1),
           args.repeats or (1 if args.quick else 9))
    print(f"\n(benchmark took {time.perf_counter() - started:.0f} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
