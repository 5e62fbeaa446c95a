"""``KernelSession``: a real Jupyter kernel to run cells in, for tests and benchmarks.

Test-only (not shipped in swarmkit): swarmkit's kernel tests and ``benchmarks/`` use it.

    with KernelSession(env=kernel_env(history=tmp / "history.db")) as kernel:
        reply, printed = kernel.execute("%load_ext swarmkit")
        reply, printed = kernel.execute(cell, on_busy=maybe_interrupt)

It drives ``jupyter_client`` directly (nbclient cannot interrupt mid-cell). The kernel
runs the ``python3`` kernelspec, whose ``python`` jupyter_client resolves to this
interpreter, and is shut down on exit. Needs the ``notebook`` extra.
"""

from __future__ import annotations

import importlib.metadata
import os
import queue
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from jupyter_client.blocking.client import BlockingKernelClient
from jupyter_client.manager import KernelManager

from tests.support.notebooks import package_root

__all__ = ["KernelSession", "kernel_env"]


def kernel_env(history: Path | None = None, **extra: str) -> dict[str, str]:
    """This environment minus any real key, with swarmkit importable in the kernel.

    When swarmkit is not installed (running from a checkout), the checkout goes on
    ``PYTHONPATH``. ``history`` points the run history away from the kernel's cwd.
    """
    env = dict(os.environ)
    env.pop("OPENAI_API_KEY", None)
    try:
        importlib.metadata.distribution("jupyter-swarmkit")
    except importlib.metadata.PackageNotFoundError:
        paths = [str(package_root()), env.get("PYTHONPATH")]
        env["PYTHONPATH"] = os.pathsep.join(filter(None, paths))
    if history is not None:
        env["SWARMKIT_HISTORY"] = str(history)
    env.update(extra)
    return env


class KernelSession:
    """One started kernel and a blocking client on it."""

    def __init__(
        self,
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        kernel_name: str = "python3",
        timeout: float = 60.0,
    ) -> None:
        self.timeout = timeout
        self.manager = KernelManager(kernel_name=kernel_name)
        start: dict[str, Any] = {"env": dict(env if env is not None else kernel_env())}
        if cwd is not None:
            start["cwd"] = str(cwd)
        self.manager.start_kernel(**start)
        self.client: BlockingKernelClient = self.manager.client()
        self.client.start_channels()
        try:
            self.client.wait_for_ready(timeout=timeout)
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> KernelSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.client.stop_channels()
        self.manager.shutdown_kernel(now=True)

    def interrupt(self) -> None:
        self.manager.interrupt_kernel()

    def execute(
        self,
        code: str,
        *,
        on_busy: Callable[[], None] | None = None,
        messages: list[dict[str, Any]] | None = None,
        timeout: float | None = None,
    ) -> tuple[dict[str, Any], str]:
        """Run ``code``; return the shell reply's content and everything it printed.

        ``on_busy`` is called at least every 0.1 s while the cell runs (e.g. to interrupt);
        ``messages`` collects the cell's iopub messages. Errors print as ``ERROR name: value``.
        """
        msg_id = self.client.execute(code)
        printed: list[str] = []
        seen = [] if messages is None else messages
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        busy = False
        while True:
            if busy and on_busy is not None:
                on_busy()
            if time.monotonic() > deadline:
                raise TimeoutError(f"the kernel did not finish {code[:40]!r}")
            msg = self.next_iopub(timeout=0.1)
            if msg is None or msg["parent_header"].get("msg_id") != msg_id:
                continue
            seen.append(msg)
            kind, content = msg["msg_type"], msg["content"]
            if kind == "status":
                busy = busy or content["execution_state"] == "busy"
                if content["execution_state"] == "idle":
                    break
            elif kind == "stream":
                printed.append(content["text"])
            elif kind == "error":
                printed.append(f"ERROR {content['ename']}: {content['evalue']}")
        reply = self.client.get_shell_msg(timeout=self.timeout)
        return reply["content"], "".join(printed)

    def next_iopub(self, timeout: float = 0.5) -> dict[str, Any] | None:
        """The next iopub message from any cell (e.g. a background run's update), or None."""
        try:
            return self.client.get_iopub_msg(timeout=timeout)  # type: ignore[no-any-return]
        except queue.Empty:
            return None
