"""A swarm of swarms: a depth-2 tree of 1,000 leaves against a flat swarm of the same
1,000 worker calls, at the same concurrency.

    python benchmarks/tree.py            # 10 x 100 leaves, C=100, 200 ms, 3 repeats
    python benchmarks/tree.py --quick    # 4 x 10 leaves, C=10, 10 ms, one repeat: a smoke run

Issue 33's target: the tree's wall time at most 1.10x the flat swarm's, with the tree's
extra calls counted in its ideal. Against one FakeServer process (a fixed latency per
call, ``--split`` so every worker offered ``split_task`` splits), each side in a fresh
process with its own history and the cache off, alternating which goes first, after one
untimed warm-up of each; both given their sub-tasks (no planner) and ``reduce=False``
(no top reducer), so the calls that differ are the tree's own:

  (flat)  ``swarmkit.run(tasks=<P x K tasks>)``: P x K worker calls;
  (tree)  ``swarmkit.run(tasks=<P tasks>, depth=2, max_children=K)``: P split calls, then
          P x K leaves, then P child reducers (``reducer-of-<i>``) and P answers.

Ideal (every call exactly the latency L, C at once, no overhead): the flat swarm
ceil(P*K/C) * L; the tree (1 + ceil(P*K/C) + 2) * L, its split wave, the leaves, then
the merge and answer waves. The figure is each side's wall over its ideal, and the ratio
of the two: what the tree's machinery (the slots lent and taken back, the tool loop, the
child swarms) costs beyond the calls it adds.
"""

from __future__ import annotations

import argparse
import importlib
import math
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]  # the benchmark modules, then swarmkit itself

import common  # noqa: E402

__all__ = ["ideal", "main", "report"]

TARGET = 1.10


def ideal(side: str, parents: int, children: int, concurrency: int, latency: float) -> float:
    """The side's wall time if every call took exactly ``latency`` and nothing else did."""
    leaves = math.ceil(parents * children / concurrency)
    return (leaves if side == "flat" else 1 + leaves + 2) * latency


async def _run(args: argparse.Namespace) -> dict[str, Any]:
    import swarmkit

    tree = args.side == "tree"
    count = args.parents if tree else args.parents * args.children
    tasks = [f"Summarise part {i} of the report in one sentence." for i in range(1, count + 1)]
    shape = {"depth": 2, "max_children": args.children} if tree else {}
    run = await swarmkit.run(
        args.task, tasks=tasks, workers=count, model=args.model, base_url=args.base_url,
        api_key_env=args.api_key_env, concurrency=args.concurrency, cache=False,
        reduce=False, **shape)
    walked = [w for top in run.workers for w in top.walk()]
    leaves = [w for w in walked if not w.children]
    return {"calls": len(run.calls), "leaves": len(leaves),
            "ok": run.status == "completed" and all(w.status == "completed" for w in walked)}


def _client(argv: list[str]) -> int:
    parser = common.client_parser(__doc__.splitlines()[0])
    parser.add_argument("--client", action="store_true", help="be the measured run")
    parser.add_argument("--side", choices=("flat", "tree"), required=True)
    parser.add_argument("--parents", type=int, required=True)
    parser.add_argument("--children", type=int, required=True)
    args = parser.parse_args(argv)
    for module in ("swarmkit.api", "swarmkit.engine.subtree", "swarmkit.tools.turns"):
        importlib.import_module(module)  # imported before the clock
    common.import_http_stack()
    return common.measure_and_print(_run(args))


def report(parents: int, children: int, concurrency: int, latency: float,
           repeats: int) -> None:
    """Print each repeat's two walls against their ideals, the medians and the ratio."""
    print(f"tree: depth 2, {parents} x {children} = {parents * children} leaves vs a flat "
          f"swarm of {parents * children} workers, C={concurrency}, latency "
          f"{latency * 1000:g} ms, cache off, no reducer on top, median of {repeats} "
          "(alternating)")
    ideals = {side: ideal(side, parents, children, concurrency, latency)
              for side in ("flat", "tree")}
    with common.fake_server(latency, parents, split=children) as url:
        base = [str(HERE / "tree.py"), "--client", "--base-url", url, "--api-key-env",
                common.KEY_ENV, "--concurrency", str(concurrency), "--parents", str(parents),
                "--children", str(children)]
        sides = {side: [*base, "--side", side] for side in ideals}
        warm, samples = common.alternating(sides, repeats, "tree")
    for side in samples:
        got = warm[side]
        print(f"  ({side}) {got['calls']} calls, {got['leaves']} leaves; ideal "
              f"{ideals[side]:.3f} s")
    ratios = []
    for index, (flat, tree) in enumerate(zip(samples["flat"], samples["tree"], strict=True)):
        ratio = (tree["wall"] / ideals["tree"]) / (flat["wall"] / ideals["flat"])
        ratios.append(ratio)
        print(f"  repeat {index + 1}: flat {flat['wall']:.3f} s "
              f"({flat['wall'] / ideals['flat']:.3f}"
              f" x ideal), tree {tree['wall']:.3f} s ({tree['wall'] / ideals['tree']:.3f} x "
              f"ideal), ratio {ratio:.3f}   (CPU {flat['cpu']:.3f} / {tree['cpu']:.3f} s)")
    wall = {side: statistics.median(x["wall"] for x in got) for side, got in samples.items()}
    median = statistics.median(ratios)
    print(f"  median: flat {wall['flat']:.3f} s, tree {wall['tree']:.3f} s; tree/flat wall "
          f"{wall['tree'] / wall['flat']:.3f}, ideal tree/flat "
          f"{ideals['tree'] / ideals['flat']:.3f}")
    verdict = "met" if median <= TARGET else "NOT met"
    print(f"  ratio tree/flat, each over its ideal: {median:.3f} (median of the per-repeat "
          f"ratios; {min(ratios):.3f}-{max(ratios):.3f})   target <= {TARGET:.2f}: "
          f"{verdict}; load average at the end: {os.getloadavg()[0]:.1f}")


# Each figure's (quick, full) default.
SIZES = {"parents": (4, 10), "children": (10, 100), "concurrency": (10, 100),
         "latency": (0.01, 0.2), "repeats": (1, 3)}


def main(argv: list[str]) -> int:
    """The report, its sizes from ``argv`` (``--quick``: the small ones)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="4 x 10 leaves, C=10, 10 ms, one repeat: a smoke run")
    for name, (small, full) in SIZES.items():
        parser.add_argument(f"--{name}", type=type(full), default=None,
                            help=f"default {full} ({small} with --quick)")
    args = parser.parse_args(argv)
    chosen = {name: getattr(args, name) if getattr(args, name) is not None
              else SIZES[name][0 if args.quick else 1] for name in SIZES}
    from extras import machine_line

    started = time.perf_counter()
    print(machine_line())
    report(**chosen)
    print(f"\n(benchmark took {time.perf_counter() - started:.0f} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(_client(sys.argv[1:]) if "--client" in sys.argv else main(sys.argv[1:]))
