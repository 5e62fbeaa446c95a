"""Benchmark (not a test): ``%load_ext swarmkit`` time and kernel-interrupt latency.

    python benchmarks/magic.py [--repeats 7]

1. ``%load_ext swarmkit`` in fresh IPython shells (cold imports, one process each) and
   in a fresh real kernel; the target is under 100 ms.
2. A 50-worker ``%%swarm`` cell (FakeServer latency 0.5 s, concurrency 5) interrupted
   after the first wave: seconds from the interrupt to the cell's idle status and to
   no request in flight at the server; the target is about a second.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from swarmkit.testing import FakeServer  # noqa: E402
from tests.support.kernel import KernelSession, kernel_env  # noqa: E402

_SHELL_LOAD = (
    "import time\n"
    "from IPython.core.interactiveshell import InteractiveShell\n"
    "shell = InteractiveShell.instance()\n"
    "t = time.perf_counter()\n"
    "shell.run_line_magic('load_ext', 'swarmkit')\n"
    "print((time.perf_counter() - t) * 1000)\n"
)
_KERNEL_LOAD = (
    "import time\n"
    "t = time.perf_counter()\n"
    "get_ipython().run_line_magic('load_ext', 'swarmkit')\n"
    "print((time.perf_counter() - t) * 1000)"
)


def shell_load_ms(repeats: int, env: dict[str, str]) -> list[float]:
    times = []
    for _ in range(repeats):
        out = subprocess.run([sys.executable, "-c", _SHELL_LOAD], capture_output=True,
                             text=True, env=env, check=True, cwd=ROOT)
        times.append(float(out.stdout.strip().splitlines()[-1]))
    return times


def kernel_figures(env: dict[str, str], workdir: Path) -> dict[str, float]:
    with KernelSession(env=env, cwd=workdir) as kernel:
        _, printed = kernel.execute(_KERNEL_LOAD)
        figures = {"kernel load_ext ms": float(printed.strip())}
        with FakeServer(lifetime=120, latency=0.5, plan_tasks=50) as server:
            interrupted_at: list[float] = []

            def interrupt_after_first_wave() -> None:
                if not interrupted_at and server.count("worker-*") >= 10:
                    interrupted_at.append(time.monotonic())
                    kernel.interrupt()

            kernel.execute(
                f"%%swarm --model gpt-4.1-mini --base-url {server.base_url} --workers 50 "
                "--concurrency 5\nList fifty birds",
                on_busy=interrupt_after_first_wave,
            )
            idle = time.monotonic()
            while server.in_flight and time.monotonic() - idle < 10:
                time.sleep(0.005)
            drained = time.monotonic()
            figures["interrupt -> cell idle s"] = idle - interrupted_at[0]
            figures["interrupt -> nothing in flight s"] = max(drained, idle) - interrupted_at[0]
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        env = kernel_env(Path(tmp) / "history.db")
        times = shell_load_ms(args.repeats, env)
        print(f"%load_ext swarmkit, fresh IPython shell: median {statistics.median(times):.1f} ms"
              f" (min {min(times):.1f}, max {max(times):.1f}, n={len(times)})")
        for name, value in kernel_figures(env, Path(tmp)).items():
            unit = "ms" if name.endswith("ms") else "s"
            print(f"{name[: -len(unit) - 1]}: {value:.3f} {unit}")


if __name__ == "__main__":
    main()
