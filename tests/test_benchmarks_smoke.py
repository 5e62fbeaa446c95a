"""Keeps benchmarks/run.py from rotting: a tiny run must print every ratio row.

No timing is asserted here (timings belong in benchmarks/README.md, not in tests).
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def quick(script: str) -> str:
    """What ``benchmarks/SCRIPT --quick`` printed on stdout (it must exit 0)."""
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / script), "--quick"],
        capture_output=True, text=True, cwd=ROOT, timeout=300, check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@pytest.mark.slow  # a few fresh processes and a kernel: 5-20 s on 2 cores
def test_quick_benchmark_prints_the_ratio_rows() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "run.py"), "--quick"],
        capture_output=True, text=True, cwd=ROOT, timeout=300, check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "stdin closed" not in done.stderr  # its fake servers stop quietly when told to
    out = done.stdout
    for row in ("ratio (c)/(b) N=10 C=5:", "ratio (c)/(a) N=10 C=5:", "ratio (d)/(c) N=10 C=5:"):
        assert row in out, out
    for variant in ("(a) ideal", "(b) baseline", "(c) swarmkit.run"):
        assert variant in out, out
    for report in ("%load_ext swarmkit:", "replay of a recorded", "rate-limited run"):
        assert report in out, out
    for case in ("reducer prompt only", "worker prompt differs"):
        assert f"ratio compare/slower single ({case}) N=10:" in out, out


@pytest.mark.slow  # four fresh processes and a server: a few seconds
def test_quick_resume_benchmark_serves_every_worker_once() -> None:
    out = quick("resume.py")
    assert "(every worker once)" in out, out
    assert "ratio resume / fresh run of the missing:" in out, out


@pytest.mark.slow  # four fresh processes and a FakeServer: about 10 s
def test_quick_scoring_benchmark_scores_every_check_and_prints_the_ratio() -> None:
    out = quick("scoring.py")
    assert "checks (8, Python only):" in out, out
    # Both sides make the same calls, and the scored side has all 16 scores.
    median = next(line for line in out.splitlines() if line.strip().startswith("median:"))
    assert median.count("(22 calls") == 2 and "16 scores" in median, median
    assert "ratio scored/unscored:" in out and "the checks themselves:" in out, out


@pytest.mark.slow  # nine fresh processes and a FakeServer: 10-30 s on 2 cores
def test_quick_scale_benchmark_prints_the_sdk_floor_beside_raw() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "run.py"), "--scale", "--quick"],
        capture_output=True, text=True, cwd=ROOT, timeout=300, check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    for client in ("(raw) aiohttp", "(sdk) openai", "(c) swarmkit"):
        assert client in out, out
    for n, c in ((200, 50), (20, 5)):
        row = next(line for line in out.splitlines() if f"ratio (c)/(raw) N={n} C={c}:" in line)
        assert "(sdk)/(raw)" in row and "(c)/(sdk)" in row, row
    assert "final display (text/plain + text/html):" in out, out


@pytest.mark.local
@pytest.mark.slow  # three model servers and 4 x 8 requests of 16 tokens: 30 s to minutes
def test_quick_embedded_benchmark_prints_the_table_and_both_ratios() -> None:
    argv = [sys.executable, str(ROOT / "benchmarks" / "embedded.py"), "--quick"]
    if importlib.util.find_spec("llama_cpp") is None:
        print("llama_cpp is not importable: the benchmark runs without its (b) variant "
              "(llama-cpp-python's server)")
        argv.append("--no-llama-cpp-python")
    done = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, timeout=900,
                          check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    for variant in ("(c) swarmkit.run, xllamacpp 8 slots",
                    "(a) plain AsyncOpenAI gather, xllamacpp 8 slots",
                    "(r) plain AsyncOpenAI gather, xllamacpp 1 slot"):
        assert variant in out, out
    # (b) is measured, or the line says why it was skipped.
    assert ("(b) plain AsyncOpenAI gather, llama-cpp-python server" in out
            or "(b) llama-cpp-python server: skipped:" in out), out
    for row in ("ratio (c)/(a) swarmkit / plain client, same 8 slots:",
                "ratio (c)/(b) swarmkit on 8 slots / llama-cpp-python one-slot server:",
                "server peak RSS (VmHWM): xllamacpp 8 slots"):
        assert row in out, out


@pytest.mark.slow  # four fresh processes and a FakeServer: about 10 s
def test_quick_scrub_benchmark_prints_each_reply_and_the_per_call_ratio() -> None:
    out = quick("scrub.py")
    for reply in ("worker reply (FakeServer)", "answer 5 KB, Markdown", "code answer 2 KB",
                  "streamed 5 KB (40-char pieces)"):
        assert reply in out, out
    assert "ratio now / d726c9e: CPU per call" in out, out


@pytest.mark.slow  # three fresh processes and a FakeServer that splits: about 10 s
def test_quick_tree_benchmark_runs_both_sides_and_prints_the_ratio() -> None:
    out = quick("tree.py")
    # Both sides answer every leaf; the tree's calls are its leaves plus 3 per parent.
    assert "(flat) 40 calls, 40 leaves" in out and "(tree) 52 calls, 40 leaves" in out, out
    assert "ratio tree/flat, each over its ideal:" in out, out
