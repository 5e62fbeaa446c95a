"""``%%swarm`` in a real Jupyter kernel: a notebook through nbclient, and a kernel interrupt.

The kernel is another process; it reaches the in-process FakeServer on 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import queue
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from jupyter_client.blocking.client import BlockingKernelClient
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient

from swarmkit.testing import FakeServer

pytestmark = pytest.mark.kernel

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT = 60


def kernel_env() -> dict[str, str]:
    """The test's environment, with this checkout importable when swarmkit isn't installed."""
    env = dict(os.environ)
    env.pop("OPENAI_API_KEY", None)
    try:
        import importlib.metadata

        importlib.metadata.distribution("swarmkit")
    except importlib.metadata.PackageNotFoundError:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return env


def wait_until(condition: Any, timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return bool(condition())


# -- a notebook through nbclient -------------------------------------------------------------


def test_notebook_with_a_swarm_cell_runs_in_a_kernel(tmp_path: Path) -> None:
    with FakeServer(lifetime=120, latency=0.01) as server:
        nb = nbformat.v4.new_notebook()
        nb.cells = [
            nbformat.v4.new_code_cell("%load_ext swarmkit\nimport sys\nprint(sys.executable)"),
            nbformat.v4.new_code_cell(
                f"%%swarm --model gpt-4.1-mini --base-url {server.base_url} "
                "--api-key-env FAKE_KEY --workers 3 --out r\n"
                'Name three rivers; answer like {"rivers": ["..."]}'
            ),
            nbformat.v4.new_code_cell(
                "import json\n"
                "print(json.dumps([r.status, len(r.workers), _swarm is r]))"
            ),
        ]
        client = NotebookClient(nb, timeout=TIMEOUT, kernel_name="python3",
                                resources={"metadata": {"path": str(tmp_path)}})
        client.execute(env=kernel_env())
        assert server.counts_by_step()["planner"] == 1
        assert json.loads(server.requests[0].body["messages"][1]["content"].split("like ")[1]) \
            == {"rivers": ["..."]}

    first, swarm_cell, check = nb.cells
    assert first.outputs[0]["text"].strip() == sys.executable
    # Exactly one static output carries the run (a live dashboard, if any, is a widget view).
    runs = [o for o in swarm_cell.outputs
            if o["output_type"] == "display_data" and "swarmkit" in o.get("metadata", {})]
    assert len(runs) == 1
    assert {"text/html", "text/plain"} <= set(runs[0]["data"])
    assert "3 workers (3 completed)" in runs[0]["data"]["text/plain"]
    assert not [o for o in swarm_cell.outputs if o["output_type"] in ("error", "stream")]
    assert json.loads(check.outputs[0]["text"]) == ["completed", 3, True]


# -- a kernel interrupt mid-cell ---------------------------------------------------------------


@pytest.fixture
def kernel() -> Iterator[tuple[KernelManager, BlockingKernelClient]]:
    manager = KernelManager(kernel_name="python3")
    manager.start_kernel(env=kernel_env())
    client = manager.client()
    client.start_channels()
    try:
        client.wait_for_ready(timeout=TIMEOUT)
        yield manager, client
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def execute(client: BlockingKernelClient, code: str, *, timeout: float = TIMEOUT,
            on_busy: Any = None, messages: list[dict[str, Any]] | None = None,
            ) -> tuple[dict[str, Any], str]:
    """Run ``code``; return the shell reply's content and everything it printed."""
    msg_id = client.execute(code)
    printed: list[str] = []
    seen = [] if messages is None else messages
    deadline = time.monotonic() + timeout
    busy_seen = False
    while True:
        try:
            msg = client.get_iopub_msg(timeout=0.1)
        except queue.Empty:
            if busy_seen and on_busy is not None:
                on_busy()
            if time.monotonic() > deadline:
                raise TimeoutError(f"no idle status for {code[:40]!r}") from None
            continue
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        seen.append(msg)
        kind, content = msg["msg_type"], msg["content"]
        if kind == "status":
            busy_seen = content["execution_state"] == "busy" or busy_seen
            if content["execution_state"] == "idle":
                break
        elif kind == "stream":
            printed.append(content["text"])
        elif kind == "error":
            printed.append(f"ERROR {content['ename']}: {content['evalue']}")
    reply = client.get_shell_msg(timeout=TIMEOUT)
    assert reply["parent_header"]["msg_id"] == msg_id
    return reply["content"], "".join(printed)


def test_interrupt_keeps_finished_workers_and_the_kernel_usable(
    kernel: tuple[KernelManager, BlockingKernelClient],
) -> None:
    manager, client = kernel
    with FakeServer(lifetime=120, latency=0.5, plan_tasks=50) as server:
        reply, _ = execute(client, "%load_ext swarmkit")
        assert reply["status"] == "ok"
        interrupted: list[bool] = []

        def interrupt_after_first_wave() -> None:
            # Once the first five workers are done and the next five are in flight.
            if not interrupted and server.count("worker-*") >= 10:
                interrupted.append(True)
                manager.interrupt_kernel()

        reply, printed = execute(
            client,
            f"%%swarm --model gpt-4.1-mini --base-url {server.base_url} --workers 50 "
            "--concurrency 5\nList fifty birds",
            on_busy=interrupt_after_first_wave,
        )
        assert interrupted
        assert reply["status"] == "ok"  # no traceback: the cell returned normally
        line = printed.strip()
        assert line.startswith("swarm interrupted: ") and line.endswith(
            " of 50 workers finished; partial run in _swarm"), printed

        # The kernel answers the next cell, and _swarm holds the finished workers.
        reply, printed = execute(client, (
            "import json\n"
            "print(json.dumps({'status': _swarm.status, 'workers': len(_swarm.workers),"
            " 'completed': sum(w.status == 'completed' for w in _swarm.workers),"
            " 'statuses': sorted({w.status for w in _swarm.workers})}))"
        ))
        assert reply["status"] == "ok"
        state = json.loads(printed)
        assert state["status"] == "cancelled" and state["workers"] == 50
        assert state["statuses"] == ["cancelled", "completed"]
        assert state["completed"] >= 5
        assert line == f"swarm interrupted: {state['completed']} of 50 workers finished; " \
                       "partial run in _swarm"
        # Every call was cancelled at the server too: nothing is left in flight.
        assert wait_until(lambda: server.in_flight == 0)

        # And the next %%swarm in the same kernel runs to the end.
        server.latency = 0.0
        reply, printed = execute(client, (
            f"%%swarm --model gpt-4.1-mini --base-url {server.base_url} --workers 2 --quiet\n"
            "List two birds"
        ))
        assert reply["status"] == "ok", printed
        reply, printed = execute(client, "print(_swarm.status)")
        assert printed.strip() == "completed"


def test_background_run_updates_its_output_when_it_ends(
    kernel: tuple[KernelManager, BlockingKernelClient],
) -> None:
    _manager, client = kernel
    with FakeServer(lifetime=120, latency=0.2, plan_tasks=4) as server:
        execute(client, "%load_ext swarmkit")
        messages: list[dict[str, Any]] = []
        reply, printed = execute(
            client,
            f"%%swarm --model gpt-4.1-mini --base-url {server.base_url} --background --out r\n"
            "List four trees",
            messages=messages,
        )
        assert reply["status"] == "ok", printed
        result = next(m for m in messages if m["msg_type"] == "execute_result")
        assert result["content"]["data"]["text/plain"].startswith("<SwarmHandle ")
        placeholder = next(m for m in messages if m["msg_type"] == "display_data"
                           and "display_id" in m["content"].get("transient", {}))
        display_id = placeholder["content"]["transient"]["display_id"]

        # The cell is done; the run goes on and replaces the placeholder when it ends.
        deadline = time.monotonic() + TIMEOUT
        update = None
        while update is None and time.monotonic() < deadline:
            try:
                msg = client.get_iopub_msg(timeout=0.5)
            except queue.Empty:
                continue
            transient = msg["content"].get("transient", {})
            if msg["msg_type"] == "update_display_data" and \
                    transient.get("display_id") == display_id:
                update = msg
        assert update is not None
        assert "4 workers (4 completed)" in update["content"]["data"]["text/plain"]
        assert "swarmkit" in update["content"]["metadata"]
        reply, printed = execute(client, (
            "_swarm_handle.result()\nprint(_swarm is r, r.status, _swarm_handle.done())"
        ))
        assert printed.strip() == "True completed True"


def test_dashboard_cancel_button_stops_a_background_run(
    kernel: tuple[KernelManager, BlockingKernelClient],
) -> None:
    """A click sent the way a frontend sends it: a comm message to the button's model."""
    _manager, client = kernel
    with FakeServer(lifetime=120, latency=0.3, plan_tasks=20) as server:
        execute(client, "%load_ext swarmkit")
        reply, printed = execute(
            client,
            f"%%swarm --model gpt-4.1-mini --base-url {server.base_url} --workers 20 "
            "--concurrency 2 --background\nList twenty stones",
        )
        assert reply["status"] == "ok", printed
        reply, printed = execute(client, "print(_swarm_handle.dashboard.cancel_button.model_id)")
        button = printed.strip()
        assert wait_until(lambda: server.count("worker-*") >= 4)
        click = {"comm_id": button, "data": {"method": "custom", "content": {"event": "click"}}}
        client.session.send(client.shell_channel.socket, "comm_msg", click)
        reply, printed = execute(client, (
            "_swarm_handle.result()\n"
            "print(_swarm.status, sorted({w.status for w in _swarm.workers}))"
        ))
        assert printed.strip() == "cancelled ['cancelled', 'completed']"
        assert wait_until(lambda: server.in_flight == 0)
