"""Resume at scale: a run of N given tasks killed halfway, then ``resume=`` in a new process.

    python benchmarks/resume.py                 # N=100,000 at C=500 (a few minutes)
    python benchmarks/resume.py --workers 2000  # smaller
    python benchmarks/resume.py --quick         # N=200: checks the script works

Against one FakeServer process (100 ms per call), with one history file:

  (killed)  ``swarm_client.py --given-tasks``: N workers, no reducer, SIGKILLed once half
            of them have an answer in the history (counted in its cache table);
  (resume)  ``swarmkit.run(task, resume=RUN)`` in a fresh process, same options: the plan
            comes from the dead run, the answered calls from the history, the rest live;
  (fresh)   for scale, in a new history: a fresh run of the same N, and one of only the
            workers the resume had to ask (what the resume's live part costs at best).

It prints the calls the resume served from the history and asked live (every worker is
one or the other, never both), its wall time against the fresh run of the missing
workers, and its peak RSS against the fresh run of all N: a resume that read the whole
history into memory would need more than a fresh run, not about the same.
As a script with ``--client``, it is the measured resume (one JSON line).
"""

from __future__ import annotations

import argparse
import os
import signal
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path
from typing import Any

from common import (
    KEY_ENV,
    child_env,
    child_json,
    client_parser,
    fake_server,
    import_http_stack,
    measure_and_print,
    new_history,
)

__all__ = ["main", "report"]

HERE = Path(__file__).resolve().parent


async def _resume(args: argparse.Namespace) -> dict[str, Any]:
    import swarmkit

    run = await swarmkit.run(args.task, model=args.model, base_url=args.base_url,
                             api_key_env=args.api_key_env, concurrency=args.concurrency,
                             reduce=False, resume=args.run)
    served = sum(1 for c in run.calls if c.source == "cache")
    return {"calls": sum(c.attempts for c in run.calls), "ok": run.status == "completed",
            "workers": len(run.workers), "served": served,
            "live": sum(1 for c in run.calls if c.source == "live")}


def _answered(history: Path) -> int:
    """Answers in the history's cache table so far (0 before the database exists)."""
    try:
        with closing(sqlite3.connect(f"file:{history}?mode=ro", uri=True, timeout=1)) as db, db:
            return int(db.execute("SELECT count(*) FROM cache").fetchone()[0])
    except sqlite3.Error:
        return 0


def _killed_halfway(url: str, n: int, c: int, history: Path) -> tuple[str, int]:
    """Start the run, SIGKILL it once n/2 answers are saved; its run id and answers."""
    argv = [sys.executable, str(HERE / "swarm_client.py"), "--base-url", url,
            "--workers", str(n), "--concurrency", str(c), "--api-key-env", KEY_ENV,
            "--given-tasks", "--option", "reduce=false"]
    child = subprocess.Popen(argv, env=child_env(history), cwd=history.parent,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        while _answered(history) < n // 2:
            if child.poll() is not None:
                raise RuntimeError(f"the run ended before it was killed: {child.stderr.read()}")
            time.sleep(0.05)
    finally:
        child.send_signal(signal.SIGKILL)
        child.communicate()
    with closing(sqlite3.connect(history)) as db, db:
        (run_id, status), = db.execute("SELECT run_id, status FROM runs").fetchall()
    if status != "running":
        raise RuntimeError(f"the killed run is stored as {status!r}, not 'running'")
    return run_id, _answered(history)


def _resumed(url: str, c: int, history: Path, run_id: str, timeout: float) -> dict[str, Any]:
    return child_json([str(HERE / "resume.py"), "--client", "--base-url", url,
                       "--concurrency", str(c), "--api-key-env", KEY_ENV, "--run", run_id],
                      timeout, history)


def _fresh(url: str, n: int, c: int, timeout: float) -> dict[str, Any]:
    return child_json([str(HERE / "swarm_client.py"), "--base-url", url, "--workers", str(n),
                       "--concurrency", str(c), "--api-key-env", KEY_ENV, "--given-tasks",
                       "--option", "reduce=false"], timeout)


def report(n: int, c: int, latency: float) -> None:
    print(f"\nresume: N={n:,} C={c}, given tasks, no reducer, latency {latency * 1000:g} ms, "
          f"load average {os.getloadavg()[0]:.1f}")
    history = new_history()
    timeout = max(600.0, n / 50)
    with fake_server(latency, n) as url:
        print("measuring resume ", end="", flush=True, file=sys.stderr)
        run_id, answered = _killed_halfway(url, n, c, history)
        print(".", end="", flush=True, file=sys.stderr)
        resumed = _resumed(url, c, history, run_id, timeout)
        print(".", end="", flush=True, file=sys.stderr)
        fresh_all = _fresh(url, n, c, timeout)
        print(".", end="", flush=True, file=sys.stderr)
        fresh_missing = _fresh(url, resumed["live"], c, timeout)
        print(file=sys.stderr)
    ok = resumed["served"] + resumed["live"] == n and resumed["workers"] == n
    print(f"  killed at {answered:,} answers saved; the resume served {resumed['served']:,} "
          f"from the history and asked {resumed['live']:,} live "
          f"({'every worker once' if ok else 'NOT every worker once'})")
    print(f"  {'client':<28} {'wall s':>8} {'peak RSS MiB':>13}")
    for name, s in ((f"resume of {n:,}", resumed), (f"fresh run of {n:,}", fresh_all),
                    (f"fresh run of {resumed['live']:,} (missing)", fresh_missing)):
        print(f"  {name:<28} {s['wall']:>8.2f} {s['peak_rss_kib'] / 1024:>13.1f}")
    print(f"  ratio resume / fresh run of the missing: "
          f"{resumed['wall'] / fresh_missing['wall']:.2f}; peak RSS resume / fresh run of "
          f"all: {resumed['peak_rss_kib'] / fresh_all['peak_rss_kib']:.2f}")
    print(f"  load average at the end: {os.getloadavg()[0]:.1f}")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if "--client" in argv:
        parser = client_parser(__doc__.splitlines()[0])
        parser.add_argument("--client", action="store_true", help="be the measured resume")
        parser.add_argument("--run", required=True, help="the run id to resume")
        args = parser.parse_args(argv)
        import_http_stack()
        return measure_and_print(_resume(args))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=100_000)
    parser.add_argument("--concurrency", type=int, default=500)
    parser.add_argument("--latency", type=float, default=0.1, help="seconds per call")
    parser.add_argument("--quick", action="store_true", help="N=200, C=50, 100 ms")
    args = parser.parse_args(argv)
    if args.quick:
        # 100 ms a call: four waves, so the kill lands before the last one ends (at 10 ms
        # the run could finish between two looks at the history)
        args.workers, args.concurrency, args.latency = 200, 50, 0.1
    report(args.workers, args.concurrency, args.latency)
    return 0


if __name__ == "__main__":
    sys.exit(main())
