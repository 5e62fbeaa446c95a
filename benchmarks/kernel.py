"""Variant (d): the same swarm through ``%%swarm`` in a real Jupyter kernel, dashboard on.

Each measurement starts a fresh kernel (jupyter_client), warms the same imports the
other variants import before their clock starts, then times the magic from inside the
kernel, so kernel start-up and message round trips are outside the figure.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

from common import KEY_ENV, TASK, child_env

from tests.support.kernel import KernelSession

__all__ = ["dashboard_available", "kernel_swarm", "load_ext_in_kernel", "magic_available"]

_TIMEOUT = 600

_SETUP = """
import gc, json, os, resource, sys, time
import anyio._backends._asyncio, h11, httpcore2, openai, truststore
import openai._vendor.httpx_aiohttp.transport
import swarmkit, swarmkit.api, swarmkit.provider, swarmkit.store, swarmkit.tools
import importlib.util
if importlib.util.find_spec("swarmkit.display.widget") is not None:
    import swarmkit.display.widget, ipywidgets
get_ipython().run_line_magic("load_ext", "swarmkit")

def _bench_cpu():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime

def _bench_rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024

def _bench_dashboards():
    # The magic owns its Dashboard; find the one this run used to read its counter.
    cls = getattr(sys.modules.get("swarmkit.display.widget"), "Dashboard", None)
    if cls is None:
        return []
    return [o for o in gc.get_objects() if type(o) is cls]  # isinstance would load lazy proxies
"""

_TIMED = """
_rss0 = _bench_rss()
_c0, _t0 = _bench_cpu(), time.perf_counter()
get_ipython().run_cell_magic("swarm", {line!r}, {task!r})
_wall, _cpu = time.perf_counter() - _t0, _bench_cpu() - _c0
_run = bench_run
_boards = _bench_dashboards()
_updates = [getattr(b, "updates_sent", None) for b in _boards]
print("BENCH " + json.dumps({{
    "wall": _wall, "cpu": _cpu, "calls": sum(c.attempts for c in _run.calls),
    "peak_rss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
    "rss_before_kib": _rss0, "ok": _run.status == "completed",
    "dashboard_updates": _updates[-1] if _updates else None,
    "run_duration": _run.duration,
}}))
"""


def magic_available() -> bool:
    return importlib.util.find_spec("swarmkit.magics") is not None


def dashboard_available() -> bool:
    return importlib.util.find_spec("swarmkit.display.widget") is not None


def execute(kernel: KernelSession, code: str) -> list[str]:
    """Run ``code``; returns its printed lines. Raises if the cell raised."""
    reply, printed = kernel.execute(code, timeout=_TIMEOUT)
    if reply["status"] != "ok" or "ERROR " in printed:
        raise RuntimeError(f"kernel cell failed: {printed[-2000:] or reply}")
    return printed.splitlines()


def _bench_line(lines: list[str]) -> dict[str, Any]:
    found = [line[len("BENCH "):] for line in lines if line.startswith("BENCH ")]
    if not found:
        raise RuntimeError(f"the kernel printed no measurement: {lines[-5:]}")
    result: dict[str, Any] = json.loads(found[-1])
    return result


def kernel_swarm(
    base_url: str, workers: int, concurrency: int, history: Path, extra: str = ""
) -> dict[str, Any]:
    """One %%swarm run in a fresh kernel; the same JSON shape as the other variants.

    ``history`` must be a new file: the magic turns the cache on, and a history that
    already holds this swarm would answer it from the cache.
    """
    line = (f"--model gpt-4.1-mini --base-url {base_url} --api-key-env {KEY_ENV} "
            f"--workers {workers} --concurrency {concurrency} --out bench_run {extra}").strip()
    with KernelSession(env=child_env(history), cwd=history.parent) as kernel:
        execute(kernel, _SETUP)
        result = _bench_line(execute(kernel, _TIMED.format(line=line, task=TASK)))
    if not result["ok"]:
        raise RuntimeError(f"the %%swarm run did not complete: {result}")
    return result


def load_ext_in_kernel(history: Path) -> float:
    """Seconds for ``%load_ext swarmkit`` as the first thing a fresh kernel does."""
    code = (
        "import time, sys\n_t0 = time.perf_counter()\n"
        "get_ipython().run_line_magic('load_ext', 'swarmkit')\n"
        "print('BENCH ' + __import__('json').dumps({'wall': time.perf_counter() - _t0, "
        "'openai': 'openai' in sys.modules}))\n"
    )
    with KernelSession(env=child_env(history), cwd=history.parent) as kernel:
        result = _bench_line(execute(kernel, code))
    if result["openai"]:
        raise RuntimeError("%load_ext swarmkit imported openai; it must stay lazy")
    return float(result["wall"])
