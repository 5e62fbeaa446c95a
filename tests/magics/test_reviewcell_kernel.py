"""``%%swarm --review`` in a real ipykernel: the cell returns, other cells run, and the
Run click arrives as a frontend sends it (a comm message to the button's model) between
cells; the review's output becomes the run's tables."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from swarmkit.testing import FakeServer
from tests.support.kernel import KernelSession, kernel_env

pytestmark = pytest.mark.kernel

TIMEOUT = 60
_VIEW = "swarm_magics(get_ipython()).pending_review.view"


@pytest.fixture
def kernel(tmp_path: Path) -> Iterator[KernelSession]:
    with KernelSession(env=kernel_env(tmp_path / "history.db"), cwd=tmp_path,
                       timeout=TIMEOUT) as session:
        reply, printed = session.execute("%load_ext swarmkit\n"
                                         "from swarmkit.magics import swarm_magics")
        assert reply["status"] == "ok", printed
        yield session


def click(kernel: KernelSession, model_id: str) -> None:
    message = {"comm_id": model_id, "data": {"method": "custom", "content": {"event": "click"}}}
    kernel.client.session.send(kernel.client.shell_channel.socket, "comm_msg", message)


def update_of(kernel: KernelSession, display_id: str, text: str) -> dict[str, Any] | None:
    """The first update of ``display_id`` whose text has ``text``, or None in time."""
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        msg = kernel.next_iopub()
        if (msg is not None and msg["msg_type"] == "update_display_data"
                and msg["content"].get("transient", {}).get("display_id") == display_id
                and text in msg["content"]["data"].get("text/plain", "")):
            return msg
    return None


def test_a_run_click_between_cells_runs_the_edited_plan_in_the_reviews_output(
    kernel: KernelSession,
) -> None:
    with FakeServer(lifetime=120, plan_tasks=3) as server:
        messages: list[dict[str, Any]] = []
        line = f"%%swarm --model gpt-4.1-mini --base-url {server.base_url} --review"
        reply, printed = kernel.execute(f"{line}\nName three lakes", messages=messages)
        assert reply["status"] == "ok", printed
        shown = next(m for m in messages if m["msg_type"] == "display_data")
        assert "application/vnd.jupyter.widget-view+json" in shown["content"]["data"]
        display_id = shown["content"]["transient"]["display_id"]

        # The kernel is free: a cell edits the plan from code, and one reads the button.
        reply, printed = kernel.execute(
            "_swarm_plan.tasks[0] = 'Lake Baikal, its depth'\n"
            f"print({_VIEW}.boxes[0].value, {_VIEW}.run_button.model_id, sep='|')")
        assert reply["status"] == "ok", printed
        box, button = printed.strip().split("|")
        assert box == "Lake Baikal, its depth"
        assert server.counts_by_step() == {"planner": 1}

        click(kernel, button)
        final = update_of(kernel, display_id, "3 workers (3 completed)")
        assert final is not None
        reply, printed = kernel.execute(
            "print(_swarm.review.approved_by, _swarm.review.edited, _swarm.workers[0].task)")
        assert printed.strip() == "review 1 Lake Baikal, its depth"
        assert server.count("planner") == 1 and server.count("worker-*") == 3


def test_cancel_clicked_between_cells_sends_nothing_more(kernel: KernelSession) -> None:
    with FakeServer(lifetime=120, plan_tasks=3) as server:
        messages: list[dict[str, Any]] = []
        line = f"%%swarm --model gpt-4.1-mini --base-url {server.base_url} --review"
        reply, printed = kernel.execute(f"{line}\nName three lakes", messages=messages)
        assert reply["status"] == "ok", printed
        display_id = next(m for m in messages if m["msg_type"] == "display_data"
                          )["content"]["transient"]["display_id"]
        reply, printed = kernel.execute(f"print({_VIEW}.cancel_button.model_id)")
        click(kernel, printed.strip())
        assert update_of(kernel, display_id, "review cancelled: nothing was sent") is not None
        reply, printed = kernel.execute("print('_swarm' in globals())")
        assert printed.strip() == "False"
        assert server.counts_by_step() == {"planner": 1}
