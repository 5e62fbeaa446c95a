"""What the benchmark's processes share: the environment, the meters, the child processes."""

from __future__ import annotations

import argparse
import asyncio
import atexit
import itertools
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = [
    "KEY_ENV",
    "ROOT",
    "TASK",
    "alternating",
    "child_env",
    "child_json",
    "client_parser",
    "cpu_seconds",
    "fake_server",
    "given_tasks",
    "import_http_stack",
    "measure_and_print",
    "new_history",
    "peak_rss_kib",
    "rss_kib",
]

ROOT = Path(__file__).resolve().parent.parent
# FakeServer takes any key; the variable only has to be set.
KEY_ENV = "BENCH_API_KEY"
TASK = "Compare five vector databases for a small team."


_scratch: list[Path] = []
_numbers = itertools.count(1)


def new_history() -> Path:
    """A new run-history file in this benchmark's scratch folder (removed at exit).

    Children run there too, so nothing they write lands in the checkout.
    """
    if not _scratch:
        folder = Path(tempfile.mkdtemp(prefix="swarmkit-bench-"))
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        _scratch.append(folder)
    return _scratch[0] / f"history-{next(_numbers)}.db"


def child_env(history: Path | None = None) -> dict[str, str]:
    """The environment for child processes and kernels: swarmkit importable from ROOT,
    and its run history in ``history`` (never in the checkout)."""
    env = dict(os.environ)
    if history is not None:
        env["SWARMKIT_HISTORY"] = str(history)
    path = env.get("PYTHONPATH")
    env["PYTHONPATH"] = str(ROOT) if not path else f"{ROOT}{os.pathsep}{path}"
    env[KEY_ENV] = "bench-key"
    env.setdefault("PYTHONHASHSEED", "0")
    return env


def cpu_seconds() -> float:
    """User + system CPU of this whole process (every thread) so far."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def rss_kib() -> int:
    """Resident set size now, in KiB (Linux)."""
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") // 1024


def peak_rss_kib() -> int:
    """The highest resident set size this process reached, in KiB (Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def given_tasks(n: int) -> list[str]:
    """The ``n`` sub-tasks ``--scale`` gives both clients instead of a planner's."""
    return [f"Summarise row {i} of the table in one sentence." for i in range(1, n + 1)]


def import_http_stack() -> None:
    """Import the SDK and what it loads lazily on its first client and request.

    Both clients do this before their clock starts, so neither figure includes the
    one-off ~40 ms a process pays for those imports.
    """
    import anyio._backends._asyncio  # noqa: F401
    import h11  # noqa: F401
    import httpcore2  # noqa: F401
    import openai
    import openai._vendor.httpx_aiohttp.transport  # noqa: F401  (swarmkit's transport)
    import truststore  # noqa: F401


def client_parser(description: str) -> argparse.ArgumentParser:
    """The options both measured clients take (``baseline.py``, ``swarm_client.py``)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--model", default="gpt-4.1-mini")
    parser.add_argument("--api-key-env", default=KEY_ENV)
    parser.add_argument("--workers", type=int, default=100)
    parser.add_argument("--concurrency", type=int, default=20)
    parser.add_argument("--task", default=TASK)
    return parser


async def _measure(swarm: Awaitable[dict[str, Any]],
                   after: Callable[[], dict[str, Any]] | None) -> dict[str, Any]:
    rss_before = rss_kib()
    cpu0, t0 = cpu_seconds(), time.perf_counter()
    result = await swarm
    wall, cpu = time.perf_counter() - t0, cpu_seconds() - cpu0
    rss_end = rss_kib()
    extra = after() if after is not None else {}  # outside the clock, inside the peak
    return {"wall": wall, "cpu": cpu, "peak_rss_kib": peak_rss_kib(),
            "rss_before_kib": rss_before, "rss_end_kib": rss_end, **result, **extra}


def measure_and_print(swarm: Awaitable[dict[str, Any]],
                      after: Callable[[], dict[str, Any]] | None = None) -> int:
    """Run ``swarm`` (it returns ``calls``, ``ok`` and any extras) under the meters and
    print one JSON line: wall and CPU seconds, peak and starting RSS in KiB. ``after``
    runs once the clock has stopped (its figures join the line; its memory counts in
    the peak)."""
    print(json.dumps(asyncio.run(_measure(swarm, after))), flush=True)
    return 0


@contextmanager
def fake_server(latency: float, plan_tasks: int, **limits: int) -> Iterator[str]:
    """A FakeServer in its own process (its CPU is not the client's); yields base_url."""
    argv = [
        sys.executable, "-m", "swarmkit.testing", "--port", "0", "--latency", str(latency),
        "--plan-tasks", str(plan_tasks), "--lifetime", "3600", "--max-requests", "1000000",
        "--no-keep-requests",
    ]
    for name, value in limits.items():
        argv += [f"--{name.replace('_', '-')}", str(value)]
    proc = subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=child_env(),
        cwd=new_history().parent,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().split()
        if len(line) != 2 or line[0] != "READY":
            raise RuntimeError(f"the fake server did not start (said {line!r})")
        yield line[1]
    finally:
        assert proc.stdin is not None
        proc.stdin.close()  # it stops when its stdin closes
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def child_json(argv: list[str], timeout: float = 600, history: Path | None = None,
               tree: Path | None = None) -> dict[str, Any]:
    """Run a measuring child process; returns the JSON object it printed last. Its run
    history is ``history``, or a new one; ``tree``: that folder's swarmkit alone on
    PYTHONPATH instead of the checkout's (a benchmark against an earlier commit)."""
    history = history or new_history()
    env = child_env(history)
    if tree is not None:
        env["PYTHONPATH"] = str(tree)
    done = subprocess.run(
        [sys.executable, *argv], capture_output=True, text=True, env=env,
        cwd=history.parent, timeout=timeout, check=False,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"{argv[0]} failed ({done.returncode}): {done.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(lines[-1])
    if not result.get("ok"):
        raise RuntimeError(f"{argv[0]} ran but its swarm did not complete: {result}")
    return result


def alternating(sides: dict[str, list[str]], repeats: int,
                label: str) -> tuple[dict[str, dict[str, Any]], dict[str, list[dict[str, Any]]]]:
    """Each side's measuring child (``child_json``): one untimed warm-up of each (the disk
    cache, the server's first connections), then ``repeats`` rounds, alternating which
    side goes first. Returns the warm-ups and the samples, by side; dots on stderr."""
    print(f"measuring {label} ", end="", flush=True, file=sys.stderr)
    warm = {side: child_json(argv) for side, argv in sides.items()}
    samples: dict[str, list[dict[str, Any]]] = {side: [] for side in sides}
    for index in range(repeats):
        for side in list(sides) if index % 2 == 0 else list(sides)[::-1]:
            samples[side].append(child_json(sides[side]))
            print(".", end="", flush=True, file=sys.stderr)
    print(file=sys.stderr)
    return warm, samples
