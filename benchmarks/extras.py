"""The benchmark's other reports: load time, replay, rate limits, and the machine.

Each report says plainly when the part of swarmkit it measures is not on this branch.
"""

from __future__ import annotations

import importlib.util
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from common import KEY_ENV, ROOT, child_env, child_json, fake_server, new_history
from kernel import load_ext_in_kernel, magic_available

__all__ = ["LOAD_EXT_SCRIPT", "load_ext_once", "load_ext_times", "machine_line", "report_all"]

HERE = Path(__file__).resolve().parent

LOAD_EXT_SCRIPT = (
    "import json, sys, time\n"
    "from IPython.core.interactiveshell import InteractiveShell\n"
    "shell = InteractiveShell.instance()\n"
    "t0 = time.perf_counter()\n"
    "shell.run_line_magic('load_ext', 'swarmkit')\n"
    "loaded = time.perf_counter() - t0\n"
    "openai = 'openai' in sys.modules\n"
    "modules = sum(1 for name in sys.modules if name.split('.')[0] == 'swarmkit')\n"
    "first = None\n"
    "if len(sys.argv) > 1:  # then the first cell: a 2-worker swarm at the server\n"
    "    t1 = time.perf_counter()\n"
    "    shell.run_cell_magic('swarm', f'--base-url {sys.argv[1]} --api-key-env {sys.argv[2]} '\n"
    "                         '--workers 2 --quiet', 'Name two rivers')\n"
    "    first = time.perf_counter() - t1\n"
    "print(json.dumps({'wall': loaded, 'openai': openai, 'first': first, 'modules': modules}))\n"
)


def machine_line() -> str:
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT,
        check=False,
    ).stdout.strip() or "?"
    load = os.getloadavg()[0]
    return (f"machine: {os.cpu_count()} cores, {cpu}, Python {platform.python_version()}, "
            f"{time.strftime('%Y-%m-%d')}, swarmkit {commit}, load average {load:.1f}")


def load_ext_once(url: str | None = None, tree: Path | None = None) -> dict[str, Any]:
    """One fresh ``python`` process with an IPython shell: ``%load_ext swarmkit`` and,
    with ``url``, the first ``%%swarm`` cell after it (``LOAD_EXT_SCRIPT``'s figures:
    ``wall``, ``first``, ``modules``). ``tree``: that folder's swarmkit alone on
    PYTHONPATH instead of the checkout's."""
    history = new_history()
    env = child_env(history)
    if tree is not None:
        env["PYTHONPATH"] = str(tree)
    argv = [sys.executable, "-c", LOAD_EXT_SCRIPT, *([url, KEY_ENV] if url else [])]
    done = subprocess.run(argv, capture_output=True, text=True, env=env,
                          cwd=history.parent, timeout=120, check=True)
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    if result["openai"]:
        raise RuntimeError(f"%load_ext swarmkit imported openai ({tree or ROOT}); "
                           "it must stay lazy")
    return result


def load_ext_times(times: int, url: str | None = None) -> list[tuple[float, float | None]]:
    """``%load_ext swarmkit`` ``times`` times (``load_ext_once``): (load s, first cell s
    or None).

    Both, because a module swarmkit imports at load is one the first cell no longer
    imports: what a user waits for is the sum."""
    walls = []
    for _ in range(times):
        result = load_ext_once(url)
        walls.append((float(result["wall"]), result["first"]))
    return walls


def _available(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def report_load_ext(quick: bool, with_kernel: bool) -> None:
    if not magic_available():
        print("%load_ext swarmkit: not available (the %%swarm magic is not on this branch)")
        return
    with fake_server(0.0, 2) as url:
        walls = load_ext_times(2 if quick else 7, url)
    loads = [load for load, _ in walls]
    totals = [load + (first or 0.0) for load, first in walls]
    line = (f"%load_ext swarmkit: median {statistics.median(loads) * 1000:.0f} ms in a fresh "
            f"IPython shell (of {len(walls)}; openai not imported; with the first 2-worker "
            f"cell at a 0 ms server: {statistics.median(totals) * 1000:.0f} ms)")
    if with_kernel:
        kernel = [load_ext_in_kernel(new_history()) for _ in range(1 if quick else 3)]
        line += f"; {statistics.median(kernel) * 1000:.0f} ms in a fresh kernel"
    print(line + "   target < 100 ms")


def report_replay(quick: bool) -> None:
    if not _available("swarmkit.store"):
        print("replay of a recorded 100-worker run: not available "
              "(record=/replay= from the call store are not on this branch)")
        return
    workers = 10 if quick else 100
    cassette = str(new_history().with_suffix(".swarm.json"))
    common = ["--workers", str(workers), "--concurrency", "20", "--api-key-env", KEY_ENV]
    with fake_server(0.0 if quick else 0.1, workers) as url:
        child_json([str(HERE / "swarm_client.py"), "--base-url", url, *common,
                    "--option", f"record={cassette}"])
    # The server is gone: a replay that touched the network would fail.
    closed = "http://127.0.0.1:9/v1"
    walls = [
        child_json([str(HERE / "swarm_client.py"), "--base-url", closed, *common,
                    "--option", f"replay={cassette}"])["wall"]
        for _ in range(1 if quick else 5)
    ]
    print(f"replay of a recorded {workers}-worker run: median {statistics.median(walls):.3f} s "
          f"(of {len(walls)}, server stopped)   target < 0.5 s")


def report_rate_limited(quick: bool, latency: float) -> None:
    if not _available("swarmkit.provider.ratelimits"):
        print("rate-limited run: not available (rpm/tpm limits are not on this branch)")
        return
    from swarmkit.provider.ratelimits import ideal_wall_time

    # A short window stands in for the minute, so the run takes seconds, not minutes.
    workers, concurrency, limit, window = (10, 5, 6, 0.5) if quick else (100, 20, 20, 1.0)
    ideal = ideal_wall_time(workers + 2, limit=limit, window=window, latency=latency,
                            concurrency=concurrency)
    options = ["--option", f"rpm={limit}", "--option", f"rate_window={window}"]
    common = ["--workers", str(workers), "--concurrency", str(concurrency),
              "--api-key-env", KEY_ENV, *options]
    with fake_server(latency, workers, rpm_limit=limit, window=window) as url:
        result = child_json([str(HERE / "swarm_client.py"), "--base-url", url, *common])
    print(f"rate-limited run: N={workers}, C={concurrency}, rpm={limit} per {window:g} s window "
          f"(the server 429s past it): {result['wall']:.2f} s against an ideal of {ideal:.2f} s "
          f"(ratio {result['wall'] / ideal:.2f}), {result['retries']} retries")


def report_all(*, quick: bool, latency: float, with_kernel: bool) -> None:
    report_load_ext(quick, with_kernel)
    report_replay(quick)
    report_rate_limited(quick, latency)
