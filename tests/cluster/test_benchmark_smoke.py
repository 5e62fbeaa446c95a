"""Keeps benchmarks/cluster.py from rotting: its --quick run prints every row (no timing
is asserted: figures belong in benchmarks/README.md)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.ray, pytest.mark.slow, pytest.mark.usefixtures("local_ray")]


def test_quick_cluster_benchmark_prints_both_sides_and_the_ratios() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "cluster.py"), "--quick"],
        capture_output=True, text=True, cwd=ROOT, timeout=300, check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    for n, c in ((200, 40), (20, 5)):
        assert f"ratio sharded/one-process N={n} C={c}:" in out, out
    assert out.count("2 shards (Ray)") == 2 and "ray start" in out, out
    assert "interrupt with 40 calls in flight on 2 shards" in out, out
