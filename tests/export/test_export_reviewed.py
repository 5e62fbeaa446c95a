"""Export of a reviewed run: its notebook replays the approved plan from the cassette
with no question (no widget, no prompt, no network), the planner's carried call served
from the cassette like the workers', and passes nbval offline; the replay states the
review, and the planner's row, as the run did."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

import swarmkit
from swarmkit.store import Cassette
from swarmkit.testing import FakeServer, swarm_shell
from tests.support.notebooks import offline_env, run_nbval

pytestmark = pytest.mark.kernel


def test_a_reviewed_run_exports_a_notebook_that_replays_with_no_question(
        tmp_path: Path) -> None:
    with FakeServer(plan_tasks=3) as server:
        plan = swarmkit.plan_sync("Name three rivers", model="fake-model",
                                  base_url=server.base_url, history=False)
        plan.tasks[0] = "The Volga"
        plan.tasks.append("The Rhine")
        run = plan.run_sync(approved_by="review")
    result = run.export(tmp_path / "reviewed.ipynb")
    cassette = Cassette.load(result.cassettes[0])
    assert cassette.review == run.review
    # The planner's call, carried by the run, is in its cassette as any run's is.
    assert [c.role for c in cassette.calls].count("planner") == 1
    cells = nbformat.read(result.notebook, as_version=4).cells
    sources = "\n".join(c.source for c in cells if c.cell_type == "code")
    assert "--replay" in sources and "The Volga" not in sources  # the plan is the cassette's
    assert "--review" not in sources and "confirm" not in sources
    shown = "\n".join(str(o.get("data", {}).get("text/plain", "")) for c in cells
                      if c.cell_type == "code" for o in c.get("outputs", []))
    assert "plan reviewed: 3 proposed · 1 edited · 1 added" in shown
    assert "planner" in shown  # its row in the spend by role, replayed
    shell = swarm_shell()  # %swarm export writes the same notebook from a Run variable
    shell.user_ns["reviewed"] = run
    again = shell.run_line_magic("swarm", f"export reviewed {tmp_path / 'magic.ipynb'}")
    assert Cassette.load(again.cassettes[0]).review == run.review
    env = offline_env(pythonpath=[Path(swarmkit.__file__).parent.parent])
    checked = run_nbval(result.notebook.name, "magic.ipynb", cwd=tmp_path, env=env)
    assert checked.returncode == 0, checked.stdout + checked.stderr
