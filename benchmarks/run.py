"""swarmkit's orchestration overhead, side by side with the hand-written pattern.

    python benchmarks/run.py            # the full run (a few minutes on 2 cores)
    python benchmarks/run.py --quick    # tiny sizes, one repeat: checks the script works

It starts ``python -m swarmkit.testing`` (FakeServer) in its own process with a fixed
latency per call, then runs, alternating the order every round:

  (a) the ideal makespan, computed: planner + ceil(N / C) x latency + reducer;
  (b) ``baseline.py``: planner, asyncio.gather of AsyncOpenAI calls under a semaphore,
      reducer, in a fresh process;
  (c) ``swarmkit.run`` with the same model, N and C, in a fresh process;
  (d) the same through ``%%swarm`` in a fresh Jupyter kernel, dashboard on.

Then ``compare.py``: a 2-variant ``swarmkit.compare`` against the slower of its two
single runs at N=100 (``--compare`` runs only that). ``--scale`` runs only ``scale.py``:
100,000 given tasks against a plain aiohttp client (``raw_client.py``).

(b), (c) and (d) measure themselves (wall clock, process CPU, peak RSS) around the swarm
only: imports and kernel start-up are outside the clock. See benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(HERE), str(ROOT)]  # the benchmark modules, then swarmkit itself

import compare  # noqa: E402
import extras  # noqa: E402
import scale  # noqa: E402
from common import KEY_ENV, child_json, fake_server, new_history  # noqa: E402
from kernel import kernel_swarm, magic_available  # noqa: E402

__all__ = ["main"]


@dataclass
class Variant:
    """The repeated measurements of one variant at one size."""

    name: str
    samples: list[dict[str, Any]] = field(default_factory=list)

    def median(self, key: str) -> float:
        return statistics.median(float(s[key]) for s in self.samples)

    @property
    def wall(self) -> float:
        return self.median("wall")

    @property
    def cpu_ms_per_call(self) -> float:
        return statistics.median(1000 * s["cpu"] / s["calls"] for s in self.samples)

    @property
    def peak_rss_mib(self) -> float:
        return self.median("peak_rss_kib") / 1024

    @property
    def rss_delta_mib(self) -> float:
        return statistics.median(
            (s["peak_rss_kib"] - s["rss_before_kib"]) / 1024 for s in self.samples
        )


def measure_size(
    n: int, c: int, latency: float, repeats: int, with_kernel: bool
) -> dict[str, Variant]:
    common = ["--workers", str(n), "--concurrency", str(c), "--api-key-env", KEY_ENV]
    variants = {"b": Variant("baseline"), "c": Variant("swarmkit.run")}
    if with_kernel:
        variants["d"] = Variant("%%swarm")
    with fake_server(latency, n) as url:
        runners: dict[str, Callable[[], dict[str, Any]]] = {
            "b": lambda: child_json([str(HERE / "baseline.py"), "--base-url", url, *common]),
            "c": lambda: child_json([str(HERE / "swarm_client.py"), "--base-url", url, *common]),
            "d": lambda: kernel_swarm(url, n, c, new_history()),
        }
        order = list(variants)
        print(f"measuring N={n} C={c} ", end="", flush=True, file=sys.stderr)
        for round_index in range(repeats):
            for key in order if round_index % 2 == 0 else order[::-1]:
                variants[key].samples.append(runners[key]())
                print(".", end="", flush=True, file=sys.stderr)
        print(file=sys.stderr)
    return variants


def ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}" if b else "n/a"


def print_size_table(n: int, c: int, latency: float, variants: dict[str, Variant]) -> None:
    ideal = latency * (2 + math.ceil(n / c))
    print(f"\nN={n}, C={c}, latency {latency * 1000:g} ms "
          f"(median of {len(variants['c'].samples)} repeats)")
    print(f"  {'variant':<22} {'wall s':>8} {'CPU ms/call':>12} {'peak RSS MiB':>13}")
    print(f"  {'(a) ideal':<22} {ideal:>8.3f} {'-':>12} {'-':>13}")
    for key, variant in variants.items():
        print(f"  {f'({key}) {variant.name}':<22} {variant.wall:>8.3f} "
              f"{variant.cpu_ms_per_call:>12.2f} {variant.peak_rss_mib:>13.1f}")
    b, cv = variants["b"], variants["c"]
    print(f"  ratio (c)/(b) N={n} C={c}: {ratio(cv.wall, b.wall)}"
          f"   (CPU per call {ratio(cv.cpu_ms_per_call, b.cpu_ms_per_call)})")
    print(f"  ratio (c)/(a) N={n} C={c}: {ratio(cv.wall, ideal)}"
          f"   (the baseline's (b)/(a): {ratio(b.wall, ideal)})")
    if "d" in variants:
        print(f"  ratio (d)/(c) N={n} C={c}: {ratio(variants['d'].wall, cv.wall)}")
        print_dashboard_rate(variants["d"])
    else:
        print(f"  ratio (d)/(c) N={n} C={c}: not available (%%swarm magic not on this branch)")


def print_dashboard_rate(variant: Variant) -> None:
    seen = [s for s in variant.samples if s.get("dashboard_updates") is not None]
    if not seen:
        print("  dashboard updates per second: not available (no Dashboard.updates_sent)")
        return
    rates = [s["dashboard_updates"] / s["wall"] for s in seen]
    counts = statistics.median(s["dashboard_updates"] for s in seen)
    print(f"  dashboard updates per second: median {statistics.median(rates):.1f} "
          f"(max {max(rates):.1f}; {counts:.0f} pushes per run, the final one included)"
          "   target <= ~10")


def parse_sizes(text: str) -> list[tuple[int, int]]:
    sizes = []
    for part in text.split(","):
        n, _, c = part.partition("x")
        sizes.append((int(n), int(c)))
    return sizes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="swarmkit overhead benchmarks")
    parser.add_argument("--quick", action="store_true",
                        help="N=10 C=5, 10 ms latency, one repeat: a smoke run, not a figure")
    parser.add_argument("--sizes", default=None, help="NxC,... (default 100x20,1000x100)")
    parser.add_argument("--latency", type=float, default=None, help="seconds per call (0.1)")
    parser.add_argument("--repeats", type=int, default=None, help="rounds per size (5)")
    parser.add_argument("--no-kernel", action="store_true", help="skip (d) and load_ext")
    parser.add_argument("--no-extras", action="store_true", help="skip the extra reports")
    parser.add_argument("--compare", action="store_true",
                        help="only the compare benchmark (2 variants vs the slower single)")
    parser.add_argument("--no-compare", action="store_true", help="skip the compare benchmark")
    parser.add_argument("--scale", action="store_true",
                        help="only the scale report: N=100,000 at C=500 against plain aiohttp, "
                        "then (c)/(raw) at N=1,000 and 10,000, C=100 and 500")
    parser.add_argument("--scale-reduce", action="store_true",
                        help="with --scale: a reducer in (raw) and (c)")
    args = parser.parse_args(argv)
    sizes = parse_sizes(args.sizes or ("10x5" if args.quick else "100x20,1000x100"))
    latency = args.latency if args.latency is not None else (0.01 if args.quick else 0.1)
    repeats = args.repeats or (1 if args.quick else 5)
    with_kernel = not args.no_kernel and magic_available()

    started = time.perf_counter()
    print(extras.machine_line())
    compare_size = (10, 5) if args.quick else (100, 20)
    if args.compare:
        compare.report(*compare_size, latency, repeats)
        print(f"\n(benchmark took {time.perf_counter() - started:.0f} s)", file=sys.stderr)
        return 0
    if args.scale:
        big, ratios = ((200, 50), ((20, 5),)) if args.quick else (scale.BIG, scale.RATIOS)
        scale.report_scale(latency, args.repeats or (1 if args.quick else 3), big, ratios,
                           args.scale_reduce)
        print(f"\n(benchmark took {time.perf_counter() - started:.0f} s)", file=sys.stderr)
        return 0
    for n, c in sizes:
        variants = measure_size(n, c, latency, repeats, with_kernel)
        print_size_table(n, c, latency, variants)
        if n >= 1000:
            growth = ", ".join(f"{v.name} {v.rss_delta_mib * 1000 / n:.1f} MiB"
                               for v in variants.values())
            print(f"  memory per 1,000 workers (RSS growth during the run): {growth}")
    if not args.no_compare:
        print()
        compare.report(*compare_size, latency, repeats)
    if not args.no_extras:
        print()
        extras.report_all(quick=args.quick, latency=latency, with_kernel=not args.no_kernel)
    print(f"\n(benchmark took {time.perf_counter() - started:.0f} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
