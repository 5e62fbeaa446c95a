"""``%%swarm`` in a real Jupyter kernel: a notebook through nbclient, interrupts, background.

The kernel is another process; it reaches the in-process FakeServer on 127.0.0.1.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient

from swarmkit.testing import FakeServer, wait_until
from tests.support.kernel import KernelSession, kernel_env

pytestmark = pytest.mark.kernel

TIMEOUT = 60




def swarm_line(server: FakeServer, extra: str) -> str:
    return f"%%swarm --model gpt-4.1-mini --base-url {server.base_url} {extra}"


@pytest.fixture
def kernel(tmp_path: Path) -> Iterator[KernelSession]:
    with KernelSession(env=kernel_env(tmp_path / "history.db"), cwd=tmp_path,
                       timeout=TIMEOUT) as session:
        reply, printed = session.execute("%load_ext swarmkit")
        assert reply["status"] == "ok", printed
        yield session


# -- a notebook through nbclient -------------------------------------------------------------


def test_notebook_with_a_swarm_cell_runs_in_a_kernel(tmp_path: Path) -> None:
    with FakeServer(lifetime=120, latency=0.01) as server:
        nb = nbformat.v4.new_notebook()
        nb.cells = [
            nbformat.v4.new_code_cell("%load_ext swarmkit\nimport sys\nprint(sys.executable)"),
            nbformat.v4.new_code_cell(
                swarm_line(server, "--api-key-env FAKE_KEY --workers 3 --out r") + "\n"
                'Name three rivers; answer like {"rivers": ["..."]}'
            ),
            nbformat.v4.new_code_cell(
                "import json\n"
                "print(json.dumps([r.status, len(r.workers), _swarm is r]))"
            ),
        ]
        client = NotebookClient(nb, timeout=TIMEOUT, kernel_name="python3",
                                resources={"metadata": {"path": str(tmp_path)}})
        client.execute(env=kernel_env(tmp_path / "history.db"))
        assert server.counts_by_step()["planner"] == 1
        prompt = server.requests[0].body["messages"][1]["content"]
        assert prompt == 'Name three rivers; answer like {"rivers": ["..."]}'

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


def test_interrupt_keeps_finished_workers_and_the_kernel_usable(kernel: KernelSession) -> None:
    with FakeServer(lifetime=120, latency=0.5, plan_tasks=50) as server:
        interrupted: list[bool] = []

        def interrupt_after_first_wave() -> None:
            # Once the first five workers are done and the next five are in flight.
            if not interrupted and server.count("worker-*") >= 10:
                interrupted.append(True)
                kernel.interrupt()

        reply, printed = kernel.execute(
            swarm_line(server, "--workers 50 --concurrency 5") + "\nList fifty birds",
            on_busy=interrupt_after_first_wave,
        )
        assert interrupted
        assert reply["status"] == "ok"  # no traceback: the cell returned normally
        line = printed.strip()

        # The kernel answers the next cell, and _swarm holds the finished workers.
        reply, printed = kernel.execute(
            "import json\nfrom swarmkit.testing import run_problems\n"
            "print(json.dumps({'status': _swarm.status, 'workers': len(_swarm.workers),"
            " 'completed': sum(w.status == 'completed' for w in _swarm.workers),"
            " 'statuses': sorted({w.status for w in _swarm.workers}),"
            " 'problems': run_problems(_swarm)}))"
        )
        assert reply["status"] == "ok", printed
        state = json.loads(printed)
        assert state["problems"] == []  # the partial Run is a consistent record
        assert state["status"] == "cancelled" and state["workers"] == 50
        assert state["statuses"] == ["cancelled", "completed"]
        assert state["completed"] >= 5
        assert line == (f"swarm cancelled (interrupt): {state['completed']} of 50 "
                        "workers finished; partial run in _swarm")
        # Every call was cancelled at the server too: nothing is left in flight.
        assert wait_until(lambda: server.in_flight == 0)

        # And the next %%swarm in the same kernel runs to the end.
        server.latency = 0.0
        reply, printed = kernel.execute(swarm_line(server, "--workers 2") + "\nList two birds")
        assert reply["status"] == "ok", printed
        reply, printed = kernel.execute("print(_swarm.status)")
        assert printed.strip() == "completed"


# -- background runs ---------------------------------------------------------------------------


def test_background_run_updates_its_output_when_it_ends(kernel: KernelSession) -> None:
    with FakeServer(lifetime=120, latency=0.2, plan_tasks=4) as server:
        messages: list[dict[str, Any]] = []
        reply, printed = kernel.execute(
            swarm_line(server, "--background --out r") + "\nList four trees", messages=messages
        )
        assert reply["status"] == "ok", printed
        shown = next(m for m in messages if m["msg_type"] == "display_data"
                     and m["content"]["data"]["text/plain"].startswith("<SwarmHandle "))
        handle_id = shown["content"]["transient"]["display_id"]
        placeholder = next(m for m in messages if m["msg_type"] == "display_data"
                           and "display_id" in m["content"].get("transient", {}))
        display_id = placeholder["content"]["transient"]["display_id"]

        # The cell is done; the run goes on and replaces the placeholder when it ends.
        deadline = time.monotonic() + TIMEOUT
        update = None
        while update is None and time.monotonic() < deadline:
            msg = kernel.next_iopub()
            if (msg is not None and msg["msg_type"] == "update_display_data"
                    and msg["content"].get("transient", {}).get("display_id") == display_id):
                update = msg
        assert update is not None
        assert "4 workers (4 completed)" in update["content"]["data"]["text/plain"]
        # The handle's line is rewritten too: it says how the run ended.
        line = None
        while line is None and time.monotonic() < deadline:
            msg = kernel.next_iopub()
            if (msg is not None and msg["msg_type"] == "update_display_data"
                    and msg["content"].get("transient", {}).get("display_id") == handle_id):
                line = msg["content"]["data"]["text/plain"]
        assert line is not None and line.endswith(" completed; the Run is in _swarm>")
        assert "swarmkit" in update["content"]["metadata"]
        reply, printed = kernel.execute(
            "_swarm_handle.result()\nprint(_swarm is r, r.status, _swarm_handle.done())"
        )
        assert printed.strip() == "True completed True"


def test_dashboard_cancel_button_stops_a_background_run(kernel: KernelSession) -> None:
    """A click sent the way a frontend sends it: a comm message to the button's model."""
    with FakeServer(lifetime=120, latency=0.3, plan_tasks=20) as server:
        reply, printed = kernel.execute(
            swarm_line(server, "--workers 20 --concurrency 2 --background")
            + "\nList twenty stones"
        )
        assert reply["status"] == "ok", printed
        reply, printed = kernel.execute(
            "print(_swarm_handle.dashboard.cancel_button.model_id)"
        )
        button = printed.strip()
        assert wait_until(lambda: server.count("worker-*") >= 4)
        click = {"comm_id": button, "data": {"method": "custom", "content": {"event": "click"}}}
        client = kernel.client
        client.session.send(client.shell_channel.socket, "comm_msg", click)
        reply, printed = kernel.execute(
            "_swarm_handle.result()\n"
            "print(_swarm.status, sorted({w.status for w in _swarm.workers}))"
        )
        assert printed.strip() == "cancelled ['cancelled', 'completed']"
        assert wait_until(lambda: server.in_flight == 0)


# -- the dashboard ---------------------------------------------------------------------------

def test_the_dashboard_sees_every_event(kernel: KernelSession) -> None:
    with FakeServer(lifetime=120, latency=0.05, plan_tasks=6) as server:
        reply, printed = kernel.execute(swarm_line(server, "--workers 6") + "\nList six birds")
        assert reply["status"] == "ok", printed
        reply, printed = kernel.execute(
            "import gc, json\nfrom swarmkit.display.widget import Dashboard\n"
            "board = [o for o in gc.get_objects() if type(o) is Dashboard][-1]\n"
            "state = board._state\n"
            "print(json.dumps({'phase': state.phase, 'calls': state.calls, "
            "'counts': state.counts, 'workers': len(state.workers), "
            "'run_calls': len(_swarm.calls), 'tokens': state.prompt_tokens, "
            "'run_tokens': _swarm.usage.prompt_tokens}))"
        )
        assert reply["status"] == "ok", printed
        state = json.loads(printed)
        # Every event of the run reached the live view; none was lost.
        assert state["workers"] == 6 and state["counts"].get("completed") == 6
        assert not state["counts"].get("running")
        assert state["calls"] == state["run_calls"] == 8
        assert state["tokens"] == state["run_tokens"]


def test_a_dashboard_that_fails_to_build_leaves_the_run_going(kernel: KernelSession) -> None:
    reply, printed = kernel.execute(
        "import swarmkit.display.widget\n"
        "class Broken:\n"
        "    def __init__(self, **kw):\n"
        "        raise RuntimeError('no widget frontend here')\n"
        "swarmkit.display.widget.Dashboard = Broken\n"
    )
    assert reply["status"] == "ok", printed
    with FakeServer(lifetime=120, plan_tasks=3) as server:
        reply, printed = kernel.execute(swarm_line(server, "--workers 3") + "\nList three birds")
        assert reply["status"] == "ok", printed
        assert ("swarmkit: no live dashboard (RuntimeError: no widget frontend here); "
                "the tables appear when the run ends") in printed
        reply, printed = kernel.execute("print(_swarm.status, len(_swarm.workers))")
        assert printed.strip() == "completed 3"
