"""``%%swarm --cluster ray --shards 2`` in a real IPython shell: the cell's one output is
the Run's tables, as in one process, and a bad value is one UsageError line."""

from __future__ import annotations

import pytest
from IPython.core.error import UsageError
from IPython.utils.capture import capture_output

from swarmkit.api.result import Run
from swarmkit.testing import FakeServer, swarm_shell
from tests.support.fakekey import swarm_line

pytestmark = [pytest.mark.ray, pytest.mark.usefixtures("local_ray")]


def test_a_sharded_cell_shows_the_run_as_one_process_would() -> None:
    shell = swarm_shell()
    shell.user_ns["topics"] = [f"topic {i}" for i in range(4)]
    with FakeServer(lifetime=120) as server:
        with capture_output() as captured:
            shell.run_cell_magic("swarm", swarm_line(
                server, "--tasks topics --cluster ray --shards 2 --quiet"), "Look at topics")
        run = shell.user_ns["_swarm"]
        assert isinstance(run, Run) and run.status == "completed"
        assert [w.shard for w in run.workers] == [0, 1, 0, 1]
        assert captured.outputs[-1].data["text/plain"] == str(run)
        with pytest.raises(UsageError, match="cluster must be 'ray', 'ray:auto' or "):
            shell.run_cell_magic("swarm", swarm_line(server, "--cluster spark"), "x")
        assert server.count("planner") == 0 and server.count("worker-*") == 4
