"""Benchmark (not a test): ``%load_ext swarmkit`` now against an earlier commit, side by side.

    python benchmarks/loadext.py [--against REV] [--repeats 9]

REV's ``swarmkit/`` is unpacked into a scratch folder (``git archive``); then each
repeat runs, in turn for this checkout and for REV, a fresh ``python`` process with an
IPython shell that does ``%load_ext swarmkit`` and then a first 2-worker ``%%swarm``
cell against a FakeServer with no latency (one server for both, in its own process).
Alternating the two keeps a noisy machine's drift out of the ratio.

It prints, for each side, the median load, the median load plus first cell, and how
many swarmkit modules the load imported, then the ratios this checkout / REV. The
default REV is the commit before the layout by concept (issue 26), when the extension
imported the whole run machinery at load.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tarfile
import tempfile
from io import BytesIO
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]  # the benchmark modules, then swarmkit itself

from common import ROOT, fake_server  # noqa: E402
from extras import load_ext_once, machine_line  # noqa: E402

__all__ = ["main"]

BEFORE_LAYOUT = "eb99da1"  # main just before issue 26's layout by concept


def unpack(rev: str, into: Path) -> Path:
    """``swarmkit/`` as it is at ``rev``, under ``into``; returns the folder to put on
    PYTHONPATH."""
    archive = subprocess.run(["git", "archive", "--format=tar", rev, "swarmkit"], cwd=ROOT,
                             capture_output=True, check=True).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into


def one_load(tree: Path, url: str) -> dict[str, float]:
    """One fresh process of ``tree``'s swarmkit: load, first cell, modules at load."""
    result = load_ext_once(url, tree)
    return {"load": result["wall"], "total": result["wall"] + result["first"],
            "modules": result["modules"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", default=BEFORE_LAYOUT, help="the commit to compare with")
    parser.add_argument("--repeats", type=int, default=9)
    args = parser.parse_args()
    print(machine_line())
    with tempfile.TemporaryDirectory(prefix="swarmkit-loadext-") as scratch:
        trees = {"now": ROOT, args.against: unpack(args.against, Path(scratch))}
        figures: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
        with fake_server(0.0, 2) as url:
            for tree in trees.values():  # one untimed warm-up each (disk cache, .pyc)
                one_load(tree, url)
            for _ in range(args.repeats):
                for name, tree in trees.items():
                    figures[name].append(one_load(tree, url))
    medians = {name: {key: statistics.median(f[key] for f in runs) for key in runs[0]}
               for name, runs in figures.items()}
    for name, median in medians.items():
        print(f"{name:>8}: %load_ext {median['load'] * 1000:6.1f} ms, "
              f"load + first 2-worker cell {median['total'] * 1000:6.1f} ms, "
              f"{median['modules']:.0f} swarmkit modules imported at load "
              f"(median of {args.repeats})")
    now, then = medians["now"], medians[args.against]
    print(f"   ratio now / {args.against}: load {now['load'] / then['load']:.2f}, "
          f"load + first cell {now['total'] / then['total']:.2f}   "
          f"target: load under 100 ms")


if __name__ == "__main__":
    main()
