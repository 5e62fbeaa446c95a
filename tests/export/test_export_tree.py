"""Export of a swarm of swarms (depth > 1): the notebook's replay cell carries --depth and
--max-children, replays the child swarms from the cassette and passes nbval offline."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

import swarmkit
from swarmkit.testing import FakeServer, split_script
from tests.support.notebooks import offline_env, run_nbval

pytestmark = pytest.mark.kernel

SPLITS = {"worker-1": ["Postgres", "Qdrant", "Milvus"], "worker-1.2": ["HNSW", "IVF"]}


def test_an_exported_tree_replays_under_nbval(tmp_path: Path) -> None:
    with FakeServer(split_script(SPLITS), plan_tasks=2) as server:
        run = swarmkit.run_sync("Survey the vector databases", model="fake-model",
                                base_url=server.base_url, workers=2, depth=3,
                                max_children=3, history=False)
    assert [w.id for w in run.workers[0].walk()] == ["1", "1.1", "1.2", "1.2.1", "1.2.2",
                                                     "1.3"]
    result = run.export(tmp_path / "tree.ipynb")
    cells = [c.source for c in nbformat.read(result.notebook, as_version=4).cells
             if c.cell_type == "code"]
    [swarm] = [c for c in cells if c.startswith("%%swarm")]
    assert "--depth 3" in swarm and "--max-children 3" in swarm
    env = offline_env(pythonpath=[Path(swarmkit.__file__).parent.parent])
    checked = run_nbval(result.notebook.name, cwd=tmp_path, env=env)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert f"{len(cells)} passed" in checked.stdout
