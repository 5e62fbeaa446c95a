"""A 2-variant comparison against the slower of its two single runs.

    python benchmarks/compare.py --base-url URL --variants '[{"reducer_prompt": "A"}]'

As a script it is the measured client: one variant runs ``swarmkit.run`` with that
variant's options, two or more run ``swarmkit.compare``; it prints one JSON line like
``swarm_client.py``. ``report()`` (called by run.py) measures two comparisons, each
beside its two single runs, every one in a fresh process, alternating the order:

- *reducer prompt only*: the variants differ in the reducer's prompt, so the planner and
  every worker are shared (made once) and only the reducers differ;
- *worker prompt differs*: the variants differ in the workers' system prompt, so only the
  planner is shared and the comparison makes twice the worker calls, each variant with
  its own concurrency limit.

The figure is the median over repeats of compare / max(single A, single B).
"""

from __future__ import annotations

import argparse
import importlib
import json
import statistics
import sys
from pathlib import Path
from typing import Any

from common import (
    KEY_ENV,
    child_json,
    client_parser,
    fake_server,
    import_http_stack,
    measure_and_print,
)

HERE = Path(__file__).resolve().parent

__all__ = ["CASES", "main", "report"]

CASES: dict[str, list[dict[str, str]]] = {
    "reducer prompt only": [{"reducer_prompt": "One paragraph: merge the findings."},
                            {"reducer_prompt": "A table: merge the findings."}],
    "worker prompt differs": [{"system_prompt": "Answer in one sentence."},
                              {"system_prompt": "Answer with three bullet points."}],
}
TARGET = 1.10


async def _swarm(args: argparse.Namespace) -> dict[str, Any]:
    import swarmkit

    common = {"model": args.model, "base_url": args.base_url, "api_key_env": args.api_key_env,
              "workers": args.workers, "concurrency": args.concurrency}
    variants = json.loads(args.variants)
    if len(variants) == 1:
        runs = [await swarmkit.run(args.task, **common, **variants[0])]
        shared = 0
    else:
        comparison = await swarmkit.compare(args.task, variants=variants, **common)
        runs, shared = list(comparison.runs), comparison.shared_calls
    return {"calls": sum(c.attempts for run in runs for c in run.calls),
            "ok": all(run.status == "completed" for run in runs),
            "workers": sum(len(run.workers) for run in runs), "shared": shared}


def main(argv: list[str] | None = None) -> int:
    parser = client_parser(__doc__.splitlines()[0])
    parser.add_argument("--variants", required=True, help="JSON list of option dicts")
    args = parser.parse_args(argv)
    for module in ("swarmkit.api", "swarmkit.comparison.runner"):  # imported before the clock
        importlib.import_module(module)
    import_http_stack()
    return measure_and_print(_swarm(args))


def _measure_case(url: str, n: int, c: int, variants: list[dict[str, str]], repeats: int
                  ) -> dict[str, list[dict[str, Any]]]:
    """Samples of A, B, the comparison, and (the same calls as a comparison that shares
    nothing but the planner) one run of A with 2N workers at 2C."""
    def argv(workers: int, concurrency: int, chosen: list[dict[str, str]]) -> list[str]:
        return [str(HERE / "compare.py"), "--base-url", url, "--api-key-env", KEY_ENV,
                "--workers", str(workers), "--concurrency", str(concurrency),
                "--variants", json.dumps(chosen)]

    runners = {"A": argv(n, c, variants[:1]), "B": argv(n, c, variants[1:]),
               "compare": argv(n, c, variants), "2N at 2C": argv(2 * n, 2 * c, variants[:1])}
    samples: dict[str, list[dict[str, Any]]] = {key: [] for key in runners}
    for index in range(repeats):
        for key in list(runners) if index % 2 == 0 else list(runners)[::-1]:
            samples[key].append(child_json(runners[key]))
            print(".", end="", flush=True, file=sys.stderr)
    return samples


def report(n: int, c: int, latency: float, repeats: int) -> None:
    """Print each case's compare / slower-single ratio (median of ``repeats``)."""
    print(f"compare: 2 variants vs the slower single run, N={n} C={c} (each variant), "
          f"latency {latency * 1000:g} ms, median of {repeats}", flush=True)
    with fake_server(latency, 2 * n) as url:  # the planner's 2N tasks are cut to --workers
        for case, variants in CASES.items():
            print(f"measuring compare ({case}) ", end="", flush=True, file=sys.stderr)
            samples = _measure_case(url, n, c, variants, repeats)
            print(file=sys.stderr)
            ratios = [s["wall"] / max(a["wall"], b["wall"]) for s, a, b in
                      zip(samples["compare"], samples["A"], samples["B"], strict=True)]
            doubled = [s["wall"] / d["wall"] for s, d in
                       zip(samples["compare"], samples["2N at 2C"], strict=True)]
            wall, calls, cpu = ({key: statistics.median(s[what] for s in got)
                                 for key, got in samples.items()}
                                for what in ("wall", "calls", "cpu"))
            print(f"  {case}: single A {wall['A']:.3f} s ({calls['A']:.0f} calls), single B "
                  f"{wall['B']:.3f} s, compare {wall['compare']:.3f} s ({calls['compare']:.0f} "
                  f"calls made, {samples['compare'][0]['shared']} shared), one run of "
                  f"{2 * n} workers at C={2 * c} {wall['2N at 2C']:.3f} s; CPU s "
                  f"A {cpu['A']:.2f} / compare {cpu['compare']:.2f}")
            print(f"  ratio compare/slower single ({case}) N={n}: "
                  f"{statistics.median(ratios):.2f}   (max {max(ratios):.2f}; "
                  f"target <= {TARGET:.2f}); compare / one run of {2 * n} at C={2 * c}: "
                  f"{statistics.median(doubled):.2f}")


if __name__ == "__main__":
    sys.exit(main())
