"""The embedded model in a real Jupyter kernel: an interrupt while its slots are busy.

The kernel starts the embedded server itself (``--model local``), in the kernel's cwd,
so its port is read from ``.swarmkit/local-server.log`` there; the test looks at the
server's ``GET /slots`` from outside.
"""

from __future__ import annotations

import json
import re
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from swarmkit.testing import wait_until
from tests.support.kernel import KernelSession, kernel_env

pytestmark = [pytest.mark.local, pytest.mark.kernel, pytest.mark.slow]

TIMEOUT = 600.0  # seconds: generous, for a loaded machine
# Seconds between looks at GET /slots once requests may have been cancelled: llama.cpp's
# server notices a client gone only after a second with no result for any task, and each
# /slots answer is one (see test_embedded.py).
POLL_SLOTS = 1.5
STARTING = re.compile(r"--- swarmkit: starting the local model on 127\.0\.0\.1:(\d+) ")
ESSAYS = [f"Write a long essay about {topic}." for topic in (
    "rivers", "mountains", "forests", "deserts", "oceans", "islands", "glaciers", "lakes")]
_opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))


@pytest.fixture
def kernel(tmp_path: Path) -> Iterator[KernelSession]:
    with KernelSession(env=kernel_env(tmp_path / "history.db"), cwd=tmp_path,
                       timeout=TIMEOUT) as session:
        reply, printed = session.execute(
            f"%load_ext swarmkit\nessays = {ESSAYS!r}\ntwo = ['Name a river.', 'Name a hill.']")
        assert reply["status"] == "ok", printed
        yield session


def _ports(cwd: Path) -> list[int]:
    """The ports the embedded server was started on, from its log in ``cwd``."""
    log = cwd / ".swarmkit" / "local-server.log"
    text = log.read_text(errors="replace") if log.is_file() else ""
    return [int(port) for port in STARTING.findall(text)]


def _processing(port: int) -> int | None:
    try:
        with _opener.open(f"http://127.0.0.1:{port}/slots", timeout=5) as response:
            return sum(bool(slot.get("is_processing")) for slot in json.load(response))
    except (OSError, ValueError):
        return None


def test_an_interrupt_while_eight_slots_are_busy_ends_the_cell_and_the_server_serves_on(
    kernel: KernelSession, tmp_path: Path
) -> None:
    seen_full: list[int] = []
    last_look = [0.0]

    def interrupt_when_eight_are_busy() -> None:
        if seen_full or time.monotonic() - last_look[0] < 0.5:
            return
        last_look[0] = time.monotonic()
        ports = _ports(tmp_path)
        if ports and _processing(ports[-1]) == 8:
            seen_full.append(ports[-1])
            kernel.interrupt()

    reply, printed = kernel.execute(
        "%%swarm --model local --workers 8 --concurrency 8 --no-cache --max-tokens 400 "
        "--tasks essays\nEight essays",
        on_busy=interrupt_when_eight_are_busy, timeout=TIMEOUT,
    )
    assert seen_full, printed
    assert reply["status"] == "ok", printed  # the cell returned normally: no traceback
    line = printed.strip().splitlines()[-1]
    assert re.fullmatch(r"swarm cancelled \(interrupt\): [0-7] of 8 workers finished; "
                        r"partial run in _swarm", line), printed
    port = seen_full[0]
    # The requests were cancelled at the server too: every slot goes idle.
    assert wait_until(lambda: _processing(port) == 0, timeout=120, interval=POLL_SLOTS)

    reply, printed = kernel.execute(
        "import json\nprint(json.dumps([_swarm.status, sorted({w.status for w in "
        "_swarm.workers})]))")
    assert reply["status"] == "ok", printed
    status, statuses = json.loads(printed)
    assert status == "cancelled" and "cancelled" in statuses

    # The next cell in the same kernel is served by the same server, to the end.
    reply, printed = kernel.execute(
        "%%swarm --model local --workers 2 --concurrency 2 --no-cache --max-tokens 16 "
        "--tasks two --no-reduce\nTwo names", timeout=TIMEOUT,
    )
    assert reply["status"] == "ok", printed
    reply, printed = kernel.execute(
        "print(json.dumps([_swarm.status, [w.status for w in _swarm.workers], "
        "[bool(w.output) for w in _swarm.workers]]))")
    assert json.loads(printed) == ["completed", ["completed"] * 2, [True, True]]
    assert _ports(tmp_path) == [port]  # started once: no restart for fewer slots
