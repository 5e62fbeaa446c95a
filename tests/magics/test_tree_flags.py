"""``%%swarm --depth D --max-children N --max-total-workers M``: a tree from the magic,
its options in the Run's config; a bad value and ``--batch`` with a depth are one line
each, with no request sent; ``--compare depth=1,2`` runs a flat and a tree variant."""

from __future__ import annotations

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

from swarmkit.testing import FakeServer, split_everywhere
from tests.support.fakekey import swarm_line


def test_the_depth_flags_make_a_tree(shell: InteractiveShell) -> None:
    with FakeServer(split_everywhere(3), plan_tasks=2) as server, capture_output():
        shell.run_cell_magic("swarm", swarm_line(
            server, "--workers 2 --depth 2 --max-children 2 --max-total-workers 5 "
            "--quiet"), "Survey the vector databases")
    run = shell.user_ns["_swarm"]
    assert run.status == "completed"
    assert (run.config["depth"], run.config["max_children"],
            run.config["max_total_workers"]) == (2, 2, 5)
    # Worker 1 splits into 2 (cut from 3); worker 2 finds one place left: no split.
    assert [w.id for top in run.workers for w in top.walk()] == ["1", "1.1", "1.2", "2"]


@pytest.mark.parametrize(("flags", "says"), [
    ("--depth 0", "depth must be between 1 and 8, got 0"),
    ("--max-children 1", "--max-children must be at least 2, got 1"),
    ("--depth 2 --batch", "batch: a run with depth > 1 cannot go to the Batch API"),
])
def test_bad_tree_flags_are_one_line_and_send_nothing(
    shell: InteractiveShell, flags: str, says: str,
) -> None:
    with FakeServer() as server:
        with pytest.raises(UsageError, match=says):
            shell.run_cell_magic("swarm", swarm_line(server, flags), "A task")
        assert server.requests == []


def test_compare_runs_a_flat_and_a_tree_variant(shell: InteractiveShell) -> None:
    with FakeServer(split_everywhere(2), plan_tasks=2) as server:
        with capture_output():
            shell.run_cell_magic("swarm", swarm_line(
                server, "--workers 2 --compare depth=1,2 --quiet"),
                "Survey the vector databases")
        asked = server.counts_by_step()
    comparison = shell.user_ns["_swarm"]
    flat, tree = comparison.runs
    assert [w.id for t in flat.workers for w in t.walk()] == ["1", "2"]
    assert [w.id for t in tree.workers for w in t.walk()] == [
        "1", "1.1", "1.2", "2", "2.1", "2.2"]
    assert asked["planner"] == 1 and asked["reducer-of-1"] == 1
