"""Variant (d): the same swarm through ``%%swarm`` in a real Jupyter kernel, dashboard on.

Each measurement starts a fresh kernel (jupyter_client), warms the same imports the
other variants import before their clock starts, then times the magic from inside the
kernel, so kernel start-up and message round trips are outside the figure.
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from common import KEY_ENV, ROOT, TASK, child_env

__all__ = ["dashboard_available", "kernel_swarm", "load_ext_in_kernel", "magic_available"]

_TIMEOUT = 600

_SETUP = """
import gc, json, os, resource, sys, time
import anyio._backends._asyncio, h11, httpcore2, openai
import swarmkit, swarmkit.api, swarmkit.provider
import importlib.util
if importlib.util.find_spec("swarmkit.dashboard") is not None:
    import swarmkit.dashboard, ipywidgets
get_ipython().run_line_magic("load_ext", "swarmkit")

def _bench_cpu():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime

def _bench_rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024

def _bench_dashboards():
    # The magic owns its Dashboard; find the one this run used to read its counter.
    cls = getattr(sys.modules.get("swarmkit.dashboard"), "Dashboard", None)
    if cls is None:
        return []
    return [o for o in gc.get_objects() if isinstance(o, cls)]
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
    return importlib.util.find_spec("swarmkit.dashboard") is not None


@contextmanager
def fresh_kernel() -> Iterator[Any]:
    from jupyter_client.manager import KernelManager

    manager = KernelManager(kernel_name="python3")
    manager.start_kernel(env=child_env(), cwd=str(ROOT))
    client = manager.client()
    client.start_channels()
    try:
        client.wait_for_ready(timeout=60)
        yield client
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def execute(client: Any, code: str) -> list[str]:
    """Run ``code``; returns its stdout lines. Raises if the cell raised."""
    out: list[str] = []
    errors: list[str] = []

    def hook(msg: dict[str, Any]) -> None:
        kind, content = msg["msg_type"], msg["content"]
        if kind == "stream" and content.get("name") == "stdout":
            out.append(content["text"])
        elif kind == "error":
            errors.append(f"{content['ename']}: {content['evalue']}")

    reply = client.execute_interactive(code, output_hook=hook, timeout=_TIMEOUT)
    if reply["content"]["status"] != "ok" or errors:
        raise RuntimeError(f"kernel cell failed: {errors or reply['content']}")
    return "".join(out).splitlines()


def _bench_line(lines: list[str]) -> dict[str, Any]:
    found = [line[len("BENCH "):] for line in lines if line.startswith("BENCH ")]
    if not found:
        raise RuntimeError(f"the kernel printed no measurement: {lines[-5:]}")
    result: dict[str, Any] = json.loads(found[-1])
    return result


def kernel_swarm(base_url: str, workers: int, concurrency: int, extra: str = "") -> dict[str, Any]:
    """One %%swarm run in a fresh kernel; the same JSON shape as the other variants."""
    line = (f"--model gpt-4.1-mini --base-url {base_url} --api-key-env {KEY_ENV} "
            f"--workers {workers} --concurrency {concurrency} --out bench_run {extra}").strip()
    with fresh_kernel() as client:
        execute(client, _SETUP)
        result = _bench_line(execute(client, _TIMED.format(line=line, task=TASK)))
    if not result["ok"]:
        raise RuntimeError(f"the %%swarm run did not complete: {result}")
    return result


def load_ext_in_kernel() -> float:
    """Seconds for ``%load_ext swarmkit`` as the first thing a fresh kernel does."""
    code = (
        "import time, sys\n_t0 = time.perf_counter()\n"
        "get_ipython().run_line_magic('load_ext', 'swarmkit')\n"
        "print('BENCH ' + __import__('json').dumps({'wall': time.perf_counter() - _t0, "
        "'openai': 'openai' in sys.modules}))\n"
    )
    with fresh_kernel() as client:
        result = _bench_line(execute(client, code))
    if result["openai"]:
        raise RuntimeError("%load_ext swarmkit imported openai; it must stay lazy")
    return float(result["wall"])
