"""How a run ends, and what the cell keeps: stop-and-merge, interrupt, the one output.

Stop-and-merge goes through the real handle, shell and kernel against FakeServer; what a
kernel sends to the frontend is read from its iopub messages.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import nbformat
import pytest
from IPython.utils.capture import capture_output
from nbclient import NotebookClient

from swarmkit.config.swarmconfig import SwarmConfig
from swarmkit.display.widget import Dashboard
from swarmkit.magics.bridge import SwarmHandle
from swarmkit.testing import (
    FakeReply,
    FakeRequest,
    FakeServer,
    default_reply,
    run_problems,
    swarm_shell,
    wait_until,
)
from tests.support.fakekey import run_options, swarm_line
from tests.support.kernel import KernelSession, kernel_env

pytestmark = pytest.mark.usefixtures("fake_key")  # kernel_env passes it on to a kernel

TIMEOUT = 60
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def slow_after_two(plan_tasks: int, latency: float = 30.0):  # type: ignore[no-untyped-def]
    """Workers 1 and 2 answer at once; the others take ``latency`` seconds."""

    def handler(request: FakeRequest) -> FakeReply:
        reply = default_reply(request, plan_tasks=plan_tasks)
        if request.step.startswith("worker-") and request.step not in ("worker-1", "worker-2"):
            return FakeReply(content=reply.content, latency=latency)
        return reply

    return handler


line_for = partial(swarm_line, flags="--no-cache")


def config_for(server: FakeServer, **options: Any) -> SwarmConfig:
    return SwarmConfig().with_options(**run_options(server, cache=False, **options))


def reducer_prompt(server: FakeServer) -> str:
    (request,) = [r for r in server.requests if r.step == "reducer"]
    return str(request.body["messages"][-1]["content"])


# -- stop and merge ------------------------------------------------------------------------


def test_stop_and_merge_reduces_the_finished_workers_and_says_stopped() -> None:
    with FakeServer(slow_after_two(4), plan_tasks=4) as server:
        handle = SwarmHandle("Name four lakes", config_for(server, workers=4)).start()
        assert wait_until(lambda: server.count("reducer") == 0 and server.in_flight >= 2
                          and server.count("worker-*") == 4)
        assert wait_until(lambda: handle.run is not None and sum(
            w.status == "completed" for w in handle.run.workers) == 2)
        handle.stop(merge=True)
        assert handle.state == "stopping"
        run = handle.result()
        assert wait_until(lambda: server.in_flight == 0)
        prompt = reducer_prompt(server)
    assert run.status == "stopped" and run.answer and run.error is None
    assert {w.index: w.status_label for w in run.workers} == {
        1: "completed", 2: "completed", 3: "cancelled (stopped)", 4: "cancelled (stopped)"}
    assert "Worker 1 " in prompt and "Worker 2 " in prompt and "Worker 3 " not in prompt
    assert run_problems(run) == []
    assert handle.state == "stopped"
    assert repr(handle) == f"<SwarmHandle {run.run_id} stopped; the Run is in _swarm>"


def test_stop_without_merge_is_a_cancel() -> None:
    with FakeServer(slow_after_two(3), plan_tasks=3) as server:
        handle = SwarmHandle("Name three seas", config_for(server, workers=3)).start()
        assert wait_until(lambda: server.count("worker-*") == 3 and server.in_flight >= 1)
        handle.stop()
        run = handle.result()
        assert server.count("reducer") == 0
    assert run.status == "cancelled" and run.answer is None


def test_swarm_stop_merge_command_merges_a_background_run() -> None:
    shell = swarm_shell()
    with FakeServer(slow_after_two(4), plan_tasks=4) as server:
        with capture_output():
            handle = shell.run_cell_magic(
                "swarm", line_for(server, "--background --workers 4 --out r"), "Name four bays")
        assert wait_until(lambda: handle.run is not None and sum(
            w.status == "completed" for w in handle.run.workers) == 2)
        with capture_output() as captured:
            shell.run_line_magic("swarm", "stop --merge")
        run = shell.user_ns["r"]
        assert shell.user_ns["_swarm"] is run and run.status == "stopped" and run.answer
        assert captured.stdout == (
            "swarm stopped: 2 of 4 workers merged; the run is in _swarm and r\n")
        assert wait_until(lambda: server.in_flight == 0)
        with pytest.raises(Exception, match="takes only --merge"):
            shell.run_line_magic("swarm", "stop --now")


# -- the clocks tick while a call is in flight, and nothing is pushed when idle -------------


def test_the_dashboard_clock_ticks_without_events_and_rests_when_idle() -> None:
    from swarmkit.record.events import RunStarted

    now = [0.0]
    dashboard = Dashboard(task="t", config=SwarmConfig(), clock=lambda: now[0])
    headers: list[str] = []
    dashboard.sections["header"].observe(lambda c: headers.append(c["new"]), names="value")
    dashboard.on_event(RunStarted("r1", "t", {}, "2026-01-01T00:00:00+00:00"))
    for second in range(1, 4):  # the planner's call is in flight: no event arrives
        now[0] = float(second)
        assert wait_until(lambda s=second: any(f"{s}.0s" in h for h in headers))
    dashboard.close()
    sent = dashboard.updates_sent
    now[0] = 10.0
    assert not dashboard.flushing
    assert dashboard.updates_sent == sent  # closed: no pushes once nothing runs


# -- in a kernel: one output per cell ------------------------------------------------------


@pytest.fixture
def kernel(tmp_path: Path) -> Iterator[KernelSession]:
    with KernelSession(env=kernel_env(tmp_path / "history.db"),
                       cwd=tmp_path, timeout=TIMEOUT) as session:
        reply, printed = session.execute("%load_ext swarmkit")
        assert reply["status"] == "ok", printed
        yield session


def _display_ids(messages: list[dict[str, Any]], kind: str) -> list[tuple[str, dict[str, Any]]]:
    return [(m["content"].get("transient", {}).get("display_id"), m["content"]["data"])
            for m in messages if m["msg_type"] == kind]


@pytest.mark.kernel
def test_a_saved_notebook_keeps_one_static_output_and_no_widget(tmp_path: Path) -> None:
    with FakeServer(lifetime=120, latency=0.05) as server:
        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_code_cell("%load_ext swarmkit"),
                    nbformat.v4.new_code_cell(f"%%swarm {line_for(server, '--workers 3')}\n"
                                              "Name three rivers")]
        client = NotebookClient(nb, timeout=TIMEOUT, kernel_name="python3",
                                resources={"metadata": {"path": str(tmp_path)}})
        client.execute(env=kernel_env(tmp_path / "history.db"))
    (output,) = nb.cells[1].outputs  # the dashboard's display was replaced in place
    assert output["output_type"] == "display_data" and WIDGET_VIEW not in output["data"]
    assert "3 workers (3 completed)" in output["data"]["text/plain"]
    # (nbclient keeps the state of closed models in the metadata; JupyterLab does not:
    # the reopen is checked in a real browser, tests/browser.)


@pytest.mark.kernel
def test_kernel_interrupt_replaces_the_dashboard_with_the_partial_tables(
    kernel: KernelSession,
) -> None:
    with FakeServer(slow_after_two(6), lifetime=120, plan_tasks=6) as server:
        messages: list[dict[str, Any]] = []
        interrupted = threading.Event()

        def interrupt_when_two_finished() -> None:
            # Once the dashboard shows two workers done (their results are in the Run).
            shown = any(m["msg_type"] == "display_data" for m in messages)
            two_done = any("2/6" in value for value in _comm_values(messages))
            if not interrupted.is_set() and shown and two_done and server.in_flight == 4:
                interrupted.set()
                kernel.interrupt()

        reply, printed = kernel.execute(
            f"%%swarm {line_for(server, '--workers 6')}\nName six capes",
            on_busy=interrupt_when_two_finished, messages=messages)
        assert interrupted.is_set() and reply["status"] == "ok"
        assert printed == ("swarm cancelled (interrupt): 2 of 6 workers finished; "
                           "partial run in _swarm\n")
        updated = _one_output(messages)
        assert "2 completed)" in updated["text/plain"]
        assert any(m["msg_type"] == "comm_close" for m in messages)
        reply, printed = kernel.execute("print(_swarm.status, _swarm.error)")
        assert printed.strip() == "cancelled run interrupted"


def _one_output(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The cell showed the live dashboard once and replaced it, in the same display, by
    one static bundle; that bundle. A failure lists the cell's display messages."""
    trace = [(m["msg_type"], m["content"].get("transient"), str(m["content"])[:200])
             for m in messages if "display" in m["msg_type"] or m["msg_type"] == "stream"]
    shown = _display_ids(messages, "display_data")
    updated = _display_ids(messages, "update_display_data")
    assert len(shown) == 1 and len(updated) == 1, trace
    (shown_id, shown_data), (updated_id, updated_data) = shown[0], updated[0]
    assert WIDGET_VIEW in shown_data and updated_id == shown_id, trace
    assert WIDGET_VIEW not in updated_data, trace
    return updated_data


# The stand-in dashboard interrupts its own kernel at a moment outside the wait.
INTERRUPTING_DASHBOARD = """\
import os, signal
import swarmkit.display.widget as widget_module
class InterruptingDashboard(widget_module.Dashboard):
    def __init__(self, **options):
        if {moment!r} == "attach":
            os.kill(os.getpid(), signal.SIGINT)
        super().__init__(**options)
    def close(self):
        if {moment!r} == "final" and not self._closed:
            os.kill(os.getpid(), signal.SIGINT)
        super().close()
widget_module.Dashboard = InterruptingDashboard
"""


@pytest.mark.kernel
@pytest.mark.parametrize("moment", ["attach", "final"])
def test_an_interrupt_outside_the_wait_still_leaves_one_output(
    kernel: KernelSession, moment: str,
) -> None:
    """Showing the dashboard (attach) or closing it for the tables (final): the interrupt
    is held; one before the wait cancels the run there, one after it is dropped."""
    reply, printed = kernel.execute(INTERRUPTING_DASHBOARD.format(moment=moment))
    assert reply["status"] == "ok", printed
    with FakeServer(lifetime=120, plan_tasks=3) as server:
        messages: list[dict[str, Any]] = []
        reply, printed = kernel.execute(
            f"%%swarm {line_for(server, '--workers 3')}\nName three fjords", messages=messages)
        assert reply["status"] == "ok", printed
        updated = _one_output(messages)
        assert any(m["msg_type"] == "comm_close" for m in messages)
        reply, status = kernel.execute("s = globals().get('_swarm'); "
                                       "print(s and s.status, s and s.error)")
    if moment == "attach":  # cancelled on entering the wait, before its plan came back
        if printed == "swarm interrupt before it started; nothing to keep\n":
            assert updated["text/plain"] == "swarm ended before it started; nothing to show"
            assert status.strip() == "None None"
        else:  # the engine was built before the cancel reached the loop
            assert printed == ("swarm cancelled (interrupt) while planning; "
                               "partial run in _swarm\n"), printed
            assert status.strip() == "cancelled run interrupted"
    else:  # the run had ended: the interrupt came too late to change it
        assert printed == "" and status.strip() == "completed None"
        assert "3 completed)" in updated["text/plain"]


def _comm_values(messages: list[dict[str, Any]]) -> list[str]:
    return [m["content"]["data"]["state"]["value"] for m in messages
            if m["msg_type"] == "comm_msg" and m["content"]["data"].get("method") == "update"
            and isinstance(m["content"]["data"].get("state", {}).get("value"), str)]


@pytest.mark.kernel
def test_the_running_workers_clock_ticks_during_a_slow_call(kernel: KernelSession) -> None:
    def handler(request: FakeRequest) -> FakeReply:
        reply = default_reply(request, plan_tasks=1)
        if request.step == "worker-1":
            return FakeReply(content=reply.content, latency=3.0)
        return reply

    with FakeServer(handler, lifetime=120, plan_tasks=1) as server:
        messages: list[dict[str, Any]] = []
        reply, printed = kernel.execute(
            f"%%swarm {line_for(server, '--workers 1')}\nName one comet", messages=messages)
        assert reply["status"] == "ok", printed
    # No event arrives during the 3 s call, yet its elapsed time moves on screen.
    elapsed = {float(s) for value in _comm_values(messages)
               for s in re.findall(r"(\d+\.\d)s…", value)}
    assert len(elapsed) >= 3, elapsed


@pytest.mark.kernel
def test_stop_and_merge_button_click_in_a_kernel(kernel: KernelSession) -> None:
    with FakeServer(slow_after_two(6), lifetime=120, plan_tasks=6) as server:
        reply, printed = kernel.execute(
            f"%%swarm {line_for(server, '--workers 6 --background')}\nName six straits")
        assert reply["status"] == "ok", printed
        reply, printed = kernel.execute("print(_swarm_handle.dashboard.stop_button.model_id)")
        button = printed.strip()
        assert wait_until(lambda: server.count("worker-*") == 6 and server.in_flight == 4)
        click = {"comm_id": button, "data": {"method": "custom", "content": {"event": "click"}}}
        client = kernel.client
        client.session.send(client.shell_channel.socket, "comm_msg", click)
        reply, printed = kernel.execute(
            "_swarm_handle.result()\nimport json\n"
            "print(json.dumps([_swarm.status, bool(_swarm.answer), repr(_swarm_handle)]))")
        status, answered, handle = json.loads(printed)
        assert (status, answered) == ("stopped", True)
        assert handle.endswith(" stopped; the Run is in _swarm>")
        assert wait_until(lambda: server.in_flight == 0)

