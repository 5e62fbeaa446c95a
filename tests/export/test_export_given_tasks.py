"""Export of a run with given sub-tasks and no reducer: the replay notebook needs no
namespace (the tasks come from the cassette) and passes nbval offline."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

import swarmkit
from swarmkit.testing import FakeServer
from tests.support.notebooks import offline_env, run_nbval

pytestmark = pytest.mark.kernel


def test_a_given_tasks_run_exports_a_notebook_that_replays_offline(tmp_path: Path) -> None:
    with FakeServer() as server:
        run = swarmkit.run_sync("Review each paper", tasks=["paper A", "paper B"],
                                reduce=False, model="fake-model", base_url=server.base_url,
                                history=False)
    assert server.count("planner") == 0 and server.count("reducer") == 0
    result = run.export(tmp_path / "given.ipynb")
    sources = [c.source for c in nbformat.read(result.notebook, as_version=4).cells
               if c.cell_type == "code"]
    assert not any("paper A" in source for source in sources)  # no namespace, no list
    assert not any("--tasks" in source for source in sources)
    env = offline_env(pythonpath=[Path(swarmkit.__file__).parent.parent])
    checked = run_nbval(result.notebook.name, cwd=tmp_path, env=env)
    assert checked.returncode == 0, checked.stdout + checked.stderr
