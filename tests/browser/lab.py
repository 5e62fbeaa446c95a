"""A real JupyterLab on 127.0.0.1 and a headless chromium page on it, for the browser suite.

``JupyterLab`` starts ``jupyter lab`` in a temporary directory with its own settings and
a random token, against the FakeServer the tests script; ``NotebookPage`` drives one
notebook in the page: open, run every cell, save, reopen with a fresh kernel.
Everything listens on 127.0.0.1 and is stopped at the end.
"""

from __future__ import annotations

import fnmatch
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import nbformat

from swarmkit.testing import FakeReply, FakeRequest, default_reply

__all__ = [
    "CHROMIUM",
    "CHROMIUM_ARGS",
    "UI_TIMEOUT",
    "JupyterLab",
    "NotebookPage",
    "Script",
    "have_browser",
    "write_notebook",
]

CHROMIUM = os.environ.get("SWARMKIT_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
]
_START_TIMEOUT = 120.0
# A shared 2-core machine: JupyterLab's first load and a kernel start take a while.
UI_TIMEOUT = 90_000  # ms


@dataclass
class Script:
    """What the FakeServer answers, set per test: plan size, per-step latencies, and
    optionally the test's own replies."""

    plan_tasks: int = 4
    latency: dict[str, float] = field(default_factory=dict)  # step glob -> seconds
    # A test's own replies; where it returns None, the built-in script answers.
    replies: Callable[[FakeRequest], FakeReply | None] | None = None

    def __call__(self, request: FakeRequest) -> FakeReply:
        reply = self.replies(request) if self.replies is not None else None
        if reply is None:
            reply = default_reply(request, plan_tasks=self.plan_tasks)
        for glob, seconds in self.latency.items():
            if fnmatch.fnmatchcase(request.step, glob):  # a tool call (a split) kept
                return replace(reply, latency=seconds)
        return reply


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class JupyterLab:
    """``jupyter lab`` serving ``root`` on 127.0.0.1 with a token; ``stop()`` ends it."""

    def __init__(self, root: Path, env: dict[str, str]) -> None:
        self.root = root
        self.port = _free_port()
        self.token = secrets.token_hex(16)
        settings = root / ".lab-settings"
        settings.mkdir(parents=True, exist_ok=True)
        # No news toast over the cells, in a run that must not reach the network.
        notification = settings / "@jupyterlab" / "apputils-extension"
        notification.mkdir(parents=True, exist_ok=True)
        (notification / "notification.jupyterlab-settings").write_text(
            json.dumps({"fetchNews": "false", "checkForUpdates": False}))
        lab_env = {**env, "JUPYTERLAB_SETTINGS_DIR": str(settings),
                   "JUPYTERLAB_WORKSPACES_DIR": str(root / ".lab-workspaces")}
        self.log_path = root / ".lab.log"
        self._log = self.log_path.open("wb")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root",
             "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={self.port}",
             "--ServerApp.port_retries=0", f"--IdentityProvider.token={self.token}",
             f"--ServerApp.root_dir={root}", "--LabApp.news_url=",
             "--ServerApp.disable_check_xsrf=False"],
            cwd=root, env=lab_env, stdout=self._log, stderr=subprocess.STDOUT,
        )
        self._wait_ready()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def api(self, path: str, method: str = "GET", body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            f"{self.url}{path}", data=data, method=method,
            headers={"Authorization": f"token {self.token}", "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as reply:  # 127.0.0.1 only
            text = reply.read()
        return json.loads(text) if text else None

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + _START_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"jupyter lab exited: {self.log_path.read_text()[-2000:]}")
            try:
                self.api("/api/status")
                return
            except OSError:
                time.sleep(0.3)
        self.stop()
        raise RuntimeError("jupyter lab did not answer on 127.0.0.1 in time")

    def set_theme(self, theme: str) -> None:
        """``JupyterLab Light`` or ``JupyterLab Dark``, from the next page load on."""
        self.api("/lab/api/settings/@jupyterlab/apputils-extension:themes", "PUT",
                 {"raw": json.dumps({"theme": theme})})

    def shutdown_kernels(self) -> None:
        for kernel in self.api("/api/kernels"):
            self.api(f"/api/kernels/{kernel['id']}", "DELETE")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        self._log.close()


def write_notebook(path: Path, cells: list[str]) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    nbformat.write(nb, path)
    return path


class NotebookPage:
    """One notebook open in a chromium page."""

    def __init__(self, page: Any, lab: JupyterLab, name: str) -> None:
        self.page, self.lab, self.name = page, lab, name

    def open(self) -> NotebookPage:
        # ?reset: a fresh workspace, so no other notebook's tab is restored beside it.
        self.page.goto(f"{self.lab.url}/lab/tree/{self.name}?reset&token={self.lab.token}",
                       timeout=UI_TIMEOUT)
        self.page.locator(".jp-Notebook .jp-Cell").first.wait_for(timeout=UI_TIMEOUT)
        self.wait_kernel_idle()
        return self

    def wait_kernel_idle(self) -> None:
        # The toolbar's kernel status reads "Kernel status: Idle" once the kernel is up.
        self.page.wait_for_function(
            """() => [...document.querySelectorAll('.jp-Notebook-ExecutionIndicator')]
                  .some(e => (e.getAttribute('data-status') || '') === 'idle')""",
            timeout=UI_TIMEOUT)

    def run_all(self) -> None:
        """Run every cell from the top: select it, click the toolbar's run button.

        A kernel that reads idle may still be connecting, and then the click runs
        nothing: a cell whose prompt did not change is selected and run again. Each
        cell but the last has finished before the next one runs."""
        count = len(nbformat.read(self.lab.root / self.name, as_version=4).cells)
        cells = self.page.locator(".jp-Notebook .jp-Cell")
        cells.nth(count - 1).wait_for(timeout=UI_TIMEOUT)  # cells render progressively
        run = self.page.locator('[data-command="notebook:run-cell-and-select-next"]').first
        for index in range(count):
            ran = r"/\[\d+\]/" if index < count - 1 else r"/\[[\d*]+\]/"
            deadline = time.monotonic() + UI_TIMEOUT / 1000
            while True:
                try:
                    self._accept_kernel_dialog()
                    cells.nth(index).locator(".jp-InputPrompt").click(timeout=10_000)
                    run.click(timeout=10_000)
                    self.page.wait_for_function(
                        f"""(i) => {ran}.test(document.querySelectorAll(
                            '.jp-Notebook .jp-Cell .jp-InputPrompt')[i].textContent)""",
                        arg=index, timeout=10_000)
                    break
                except Exception:  # playwright's TimeoutError: select and run it again
                    if time.monotonic() > deadline:
                        raise AssertionError(
                            f"cell {index} of {self.name} never ran; see {self.lab.log_path}"
                        ) from None

    def _accept_kernel_dialog(self) -> None:
        """Accept JupyterLab's "Select Kernel" dialog (its preferred kernel, Python 3).

        On a fresh lab under load the page sometimes asks, even with a kernel already
        idle, and the dialog then takes every click meant for the cells."""
        dialog = self.page.locator(".jp-Dialog", has_text="Select Kernel")
        if dialog.count() and dialog.first.is_visible():
            dialog.first.locator(".jp-mod-accept").click()
            dialog.first.wait_for(state="detached", timeout=UI_TIMEOUT)
            self.wait_kernel_idle()

    def interrupt(self) -> None:
        """The toolbar's interrupt button (the square), as a user clicks it."""
        self.page.locator('[data-command="notebook:interrupt-kernel"]').first.click()

    def save(self) -> None:
        """The toolbar's save button, then wait until the file on disk has changed.

        The page's dirty marker is not proof: it can read clean before the save request
        has gone out, and a reopen would then find the notebook without its outputs."""
        path = self.lab.root / self.name
        before = path.read_bytes()
        deadline = time.monotonic() + UI_TIMEOUT / 1000
        while path.read_bytes() == before:
            if time.monotonic() > deadline:
                raise AssertionError(f"{self.name} was never saved; see {self.lab.log_path}")
            self.page.locator('[data-command="docmanager:save"]').first.click()
            self.page.wait_for_timeout(1_000)

    def output_area(self, cell: int) -> Any:
        return self.page.locator(".jp-Notebook .jp-Cell").nth(cell).locator(".jp-OutputArea")

    def wait_text(self, text: str, cell: int | None = None) -> None:
        where = self.page if cell is None else self.output_area(cell)
        where.get_by_text(text, exact=False).first.wait_for(timeout=UI_TIMEOUT)

    def screenshot(self, path: Path, cell: int | None = None) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        if cell is None:
            self.page.screenshot(path=str(path))
        else:
            self.page.locator(".jp-Notebook .jp-Cell").nth(cell).screenshot(path=str(path))


def have_browser() -> str | None:
    """Why the browser suite cannot run here, or None when it can."""
    if shutil.which(CHROMIUM) is None and not Path(CHROMIUM).exists():
        return f"no chromium at {CHROMIUM} (apt-get install chromium)"
    for module in ("playwright", "jupyterlab"):
        try:
            __import__(module)
        except ImportError:
            return f"{module} is not installed (pip install -e '.[browser]')"
    return None
