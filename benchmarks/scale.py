"""``run.py --scale``: swarmkit at 100,000 given tasks against a plain aiohttp gather.

The three clients run in fresh processes against one FakeServer process (``python -m
swarmkit.testing``, the same kind of server as the other sizes), one after the other,
alternating the order by round:

  (raw) ``raw_client.py``: N worker POSTs under ``asyncio.Semaphore(C)`` on one
        ``aiohttp.ClientSession``, no SDK;
  (sdk) ``sdk_client.py``: the same N calls through one ``openai.AsyncOpenAI`` built and
        called as swarmkit's provider does (the SDK's aiohttp transport): the floor for
        anything that keeps the SDK (never a reducer);
  (c)   ``swarm_client.py --given-tasks --display``: ``swarmkit.run`` with the same N
        sub-tasks as ``tasks=``, then the Run's final display built after the clock.

No reducer in either at N = 100,000 by default (``--scale-reduce`` adds it): one reducer
call over 100,000 outputs is over the server's 1 MB request limit, and the tree reducer
that fits it into a context is not on this branch yet.
"""

from __future__ import annotations

import os
import statistics
import sys
from pathlib import Path
from typing import Any

from common import KEY_ENV, child_json, fake_server

__all__ = ["report_scale"]

HERE = Path(__file__).resolve().parent
BIG = (100_000, 500)
RATIOS = ((1000, 100), (1000, 500), (10_000, 100), (10_000, 500))


def _pair(n: int, c: int, latency: float, repeats: int, reduce: bool
          ) -> dict[str, list[dict[str, Any]]]:
    common = ["--workers", str(n), "--concurrency", str(c), "--api-key-env", KEY_ENV]
    raw_extra = ["--reduce"] if reduce else []
    swarm_extra = [] if reduce else ["--option", "reduce=false"]
    samples: dict[str, list[dict[str, Any]]] = {"raw": [], "sdk": [], "c": []}
    timeout = max(600.0, n / 50)
    with fake_server(latency, n) as url:
        runners = {
            "raw": lambda: child_json([str(HERE / "raw_client.py"), "--base-url", url,
                                       *common, *raw_extra], timeout),
            "sdk": lambda: child_json([str(HERE / "sdk_client.py"), "--base-url", url,
                                       *common], timeout),
            "c": lambda: child_json([str(HERE / "swarm_client.py"), "--base-url", url,
                                     *common, "--given-tasks", "--display", *swarm_extra],
                                    timeout),
        }
        print(f"measuring N={n} C={c} ", end="", flush=True, file=sys.stderr)
        for round_index in range(repeats):
            order = ["raw", "sdk", "c"] if round_index % 2 == 0 else ["c", "sdk", "raw"]
            for key in order:
                samples[key].append(runners[key]())
                print(".", end="", flush=True, file=sys.stderr)
        print(file=sys.stderr)
    return samples


def _median(samples: list[dict[str, Any]], key: str) -> float:
    return statistics.median(float(s[key]) for s in samples)


def _cpu_ms(samples: list[dict[str, Any]]) -> float:
    return statistics.median(1000 * s["cpu"] / s["calls"] for s in samples)


def _line(n: int, c: int, samples: dict[str, list[dict[str, Any]]]) -> str:
    raw, sdk, swarm = (_median(samples[k], "wall") for k in ("raw", "sdk", "c"))
    return (f"  ratio (c)/(raw) N={n} C={c}: {swarm / raw:.2f}   (sdk)/(raw) {sdk / raw:.2f}, "
            f"(c)/(sdk) {swarm / sdk:.2f}   (raw {raw:.2f} s, sdk {sdk:.2f} s, swarmkit "
            f"{swarm:.2f} s; CPU ms/call raw {_cpu_ms(samples['raw']):.2f}, sdk "
            f"{_cpu_ms(samples['sdk']):.2f}, swarmkit {_cpu_ms(samples['c']):.2f}; "
            f"{len(samples['c'])} repeats, load average {os.getloadavg()[0]:.1f})")


def report_scale(latency: float, repeats: int, big: tuple[int, int] = BIG,
                 ratios: tuple[tuple[int, int], ...] = RATIOS, reduce: bool = False) -> None:
    """Print the N = 100,000 figures, then the (c)/(raw), (sdk)/(raw) and (c)/(sdk)
    ratios at the other sizes."""
    n, c = big
    print(f"\nscale: N={n:,}, C={c}, given tasks, latency {latency * 1000:g} ms, "
          f"reducer {'on' if reduce else 'off'}, load average {os.getloadavg()[0]:.1f}")
    samples = _pair(n, c, latency, 1, reduce)
    raw, sdk, swarm = samples["raw"][0], samples["sdk"][0], samples["c"][0]
    print(f"  {'client':<14} {'wall s':>8} {'CPU ms/call':>12} {'peak RSS MiB':>13} "
          f"{'RSS growth MiB':>15}")
    for name, s in (("(raw) aiohttp", raw), ("(sdk) openai", sdk), ("(c) swarmkit", swarm)):
        print(f"  {name:<14} {s['wall']:>8.2f} {1000 * s['cpu'] / s['calls']:>12.2f} "
              f"{s['peak_rss_kib'] / 1024:>13.1f} "
              f"{(s['rss_end_kib'] - s['rss_before_kib']) / 1024:>15.1f}")
    print(f"  ratio (c)/(raw) N={n} C={c}: {swarm['wall'] / raw['wall']:.2f}   "
          f"(sdk)/(raw) {sdk['wall'] / raw['wall']:.2f}, "
          f"(c)/(sdk) {swarm['wall'] / sdk['wall']:.2f}   "
          f"(load average {os.getloadavg()[0]:.1f})")
    print(f"  final display (text/plain + text/html): {swarm['display_bytes']:,} bytes, "
          f"built in {swarm['display_s'] * 1000:.0f} ms ({swarm['display_cpu_s'] * 1000:.0f} ms "
          f"of CPU on its thread, {swarm['display_gc_s'] * 1000:.0f} ms in garbage "
          f"collections); then the wait for the run's final "
          f"save to the history: {swarm['save_s']:.1f} s (in the peak RSS)")
    for size in ratios:
        print(_line(*size, _pair(*size, latency, repeats, reduce)), flush=True)
    print(f"  load average at the end: {os.getloadavg()[0]:.1f}")
