"""A real MCP server process through ``%%swarm`` in a real Jupyter kernel (nbclient).

The kernel starts the MCP server (``%swarm mcp add``), the workers call its tools against
the in-process FakeServer on 127.0.0.1, the tool-call table shows the calls, and the
server process is gone once the kernel has shut down.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from swarmkit.testing import FakeReply, FakeRequest, FakeServer

pytestmark = pytest.mark.kernel

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 90


def worker_calls_shop_tools(request: FakeRequest) -> FakeReply:
    if request.role == "planner":
        return FakeReply(content=json.dumps({"tasks": ["check order A-17"]}))
    if request.role == "reducer":
        return FakeReply(content="Order A-17 has shipped.")
    if not any(m.get("role") == "tool" for m in request.messages):
        return FakeReply(tool_calls=[("shop__lookup", {"order_id": "A-17"}),
                                     ("shop__explode", {"message": "x"})])
    return FakeReply(content="A-17 shipped with DHL")


def processes_running(path: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if path in cmdline:
            found.append(int(entry.name))
    return found


def test_mcp_server_through_swarm_cell_in_a_kernel(tmp_path: Path) -> None:
    # A private copy, so the process can be found by its path after the kernel exits.
    script = tmp_path / "shop_mcp_server.py"
    shutil.copy(ROOT / "tests" / "tools" / "mcp_server.py", script)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    env.pop("OPENAI_API_KEY", None)
    with FakeServer(worker_calls_shop_tools, lifetime=120) as server:
        nb = nbformat.v4.new_notebook()
        nb.cells = [
            nbformat.v4.new_code_cell("%load_ext swarmkit"),
            nbformat.v4.new_code_cell(f"%swarm mcp add shop -- {sys.executable} {script}"),
            nbformat.v4.new_code_cell(
                f"%%swarm --model gpt-4.1-mini --base-url {server.base_url} "
                "--api-key-env FAKE_KEY --out r\nWhere is order A-17?"
            ),
            nbformat.v4.new_code_cell(
                "import json\n"
                "print(json.dumps([[c.tool, c.error is None] for c in r.tool_calls]"
                " + [r.workers[0].status_label, r.workers[0].tool_calls]))"
            ),
        ]
        client = NotebookClient(nb, timeout=TIMEOUT, kernel_name="python3",
                                resources={"metadata": {"path": str(tmp_path)}})
        client.execute(env=env)
    _, added, swarm_cell, check = nb.cells
    assert "MCP server shop: 4 tools" in added.outputs[0]["data"]["text/plain"]
    assert json.loads(check.outputs[0]["text"]) == [
        ["shop__lookup", True], ["shop__explode", False], "completed", 2,
    ]
    [shown] = [o for o in swarm_cell.outputs if o["output_type"] == "display_data"
               and "swarmkit" in o.get("metadata", {})]
    text = shown["data"]["text/plain"]
    assert "tool calls" in text and "shop__lookup" in text and "shop__explode" in text
    assert "shop__lookup" in shown["data"]["text/html"]
    # The kernel stopped the server at exit; give the process table a moment to settle.
    deadline = time.monotonic() + 10
    while processes_running(str(script)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert processes_running(str(script)) == []
