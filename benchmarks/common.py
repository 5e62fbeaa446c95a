"""What the benchmark's processes share: the key variable, the environment, the meters."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import time
from collections.abc import Awaitable
from pathlib import Path
from typing import Any

__all__ = [
    "KEY_ENV",
    "ROOT",
    "TASK",
    "child_env",
    "client_parser",
    "cpu_seconds",
    "import_http_stack",
    "measure_and_print",
    "peak_rss_kib",
    "rss_kib",
]

ROOT = Path(__file__).resolve().parent.parent
# FakeServer takes any key; the variable only has to be set.
KEY_ENV = "BENCH_API_KEY"
TASK = "Compare five vector databases for a small team."


def child_env() -> dict[str, str]:
    """The environment for child processes and kernels: swarmkit importable from ROOT."""
    env = dict(os.environ)
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


def import_http_stack() -> None:
    """Import the SDK and what it loads lazily on its first client and request.

    Both clients do this before their clock starts, so neither figure includes the
    one-off ~40 ms a process pays for those imports.
    """
    import anyio._backends._asyncio  # noqa: F401
    import h11  # noqa: F401
    import httpcore2  # noqa: F401
    import openai  # noqa: F401


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


async def _measure(swarm: Awaitable[dict[str, Any]]) -> dict[str, Any]:
    rss_before = rss_kib()
    cpu0, t0 = cpu_seconds(), time.perf_counter()
    result = await swarm
    wall, cpu = time.perf_counter() - t0, cpu_seconds() - cpu0
    return {"wall": wall, "cpu": cpu, "peak_rss_kib": peak_rss_kib(),
            "rss_before_kib": rss_before, **result}


def measure_and_print(swarm: Awaitable[dict[str, Any]]) -> int:
    """Run ``swarm`` (it returns ``calls``, ``ok`` and any extras) under the meters and
    print one JSON line: wall and CPU seconds, peak and starting RSS in KiB."""
    print(json.dumps(asyncio.run(_measure(swarm))), flush=True)
    return 0
