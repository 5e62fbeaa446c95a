"""``python -m swarmkit.testing``: run a FakeServer in the foreground.

Prints ``READY <base_url>`` on one line once it listens, then serves until its standard
input closes (unless ``--ignore-stdin``), it gets SIGTERM or SIGINT, or ``--lifetime``
runs out (or ``--max-requests`` are served). Benchmarks and kernel tests start it as a
subprocess with ``stdin=PIPE``, so it stops with its parent; a script that runs it in the
background with no stdin (``< /dev/null``, ``&``) passes ``--ignore-stdin``. Unless it was
signalled or its parent closed the pipe on its stdin (the expected stop), it says on
stderr, in one line, why it stopped.
"""

from __future__ import annotations

import argparse
import os
import signal
import stat
import sys
import threading
import time
from collections.abc import Sequence
from types import FrameType
from typing import TextIO

from .server import FakeServer
from .splits import split_everywhere

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m swarmkit.testing",
        description="Run swarmkit's fake OpenAI-compatible server on 127.0.0.1.",
    )
    parser.add_argument("--port", type=int, default=0, help="port (0 picks a free one)")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds per request")
    parser.add_argument("--plan-tasks", type=int, default=4, help="tasks the planner returns")
    parser.add_argument("--lifetime", type=float, default=900.0,
                        help="stop after this many seconds (default 900), whatever else")
    parser.add_argument("--max-requests", type=int, default=100_000, help="stop after N")
    parser.add_argument("--rpm-limit", type=int, default=None, help="429 past N requests/min")
    parser.add_argument("--tpm-limit", type=int, default=None, help="429 past N tokens/min")
    parser.add_argument("--window", type=float, default=60.0,
                        help="seconds the rpm/tpm limits count over (a 'minute')")
    parser.add_argument("--split", type=int, default=0, metavar="N",
                        help="every worker offered split_task splits into N sub-tasks "
                             "(a tree, depth > 1: splits.split_everywhere)")
    parser.add_argument(
        "--ignore-stdin", action="store_true",
        help="keep serving when stdin closes (for scripts that run it in the background); "
             "it still stops on SIGTERM/SIGINT or after --lifetime",
    )
    parser.add_argument(
        "--no-keep-requests", dest="keep_requests", action="store_false",
        help="do not keep each request for inspection (long benchmarks)",
    )
    args = parser.parse_args(argv)

    done = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        done.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    started = time.monotonic()  # before the server's own lifetime clock starts
    server = FakeServer(
        split_everywhere(args.split) if args.split > 0 else None,
        latency=args.latency, plan_tasks=args.plan_tasks, lifetime=args.lifetime,
        max_requests=args.max_requests, port=args.port, rpm_limit=args.rpm_limit,
        tpm_limit=args.tpm_limit, window=args.window, keep_requests=args.keep_requests,
    ).start()
    print(f"READY {server.base_url}", flush=True)
    why: list[str] = []  # set before done, by the thread that saw the reason

    if not args.ignore_stdin:
        # A parent holding the other end of a pipe closes it to stop the server: the
        # expected end, said nothing about. Any other stdin that ends (/dev/null, a file:
        # a script that ran it in the background) is said, with the flag it needed.
        piped = _is_pipe(sys.stdin)

        def watch_stdin() -> None:
            for _ in sys.stdin:
                pass
            if not piped:
                why.append("stdin closed: stopping (use --ignore-stdin to keep serving)")
            done.set()

        threading.Thread(target=watch_stdin, name="stdin-watch", daemon=True).start()
    # Short waits keep the main thread responsive to signals.
    while not done.wait(0.2) and server.running:
        pass
    if not done.is_set():  # the server stopped by itself
        why.append(f"--lifetime of {args.lifetime:g}s ran out: stopping"
                   if time.monotonic() - started >= args.lifetime else
                   f"served --max-requests ({args.max_requests}): stopping")
    server.stop()
    if why:
        print(why[0], file=sys.stderr, flush=True)
    return 0


def _is_pipe(stream: TextIO) -> bool:
    try:
        return stat.S_ISFIFO(os.fstat(stream.fileno()).st_mode)
    except (OSError, ValueError):  # no descriptor (a test's StringIO): not a pipe
        return False


if __name__ == "__main__":
    sys.exit(main())
