"""The cache on a cluster run: read and written as in one process, whichever side (one
process or the shards) wrote it. A plain worker the cache answers whole runs in the
kernel (no shard, no request, $0); a worker with tools goes to a shard, which asks the
kernel's cache before each call; ``refresh`` skips it; a cassette of a cached sharded
run replays with no Ray."""

from __future__ import annotations

from decimal import Decimal
from functools import partial
from pathlib import Path

import pytest

import swarmkit
from swarmkit.testing import FakeServer, run_problems
from tests.support.fakekey import run_options
from tests.support.toolreplies import tool_then_answer

pytestmark = [pytest.mark.ray, pytest.mark.usefixtures("fake_key", "local_ray")]

TASK = "Look at six items"
ITEMS = [f"item {i}" for i in range(6)]
SHARDED = {"cluster": "ray", "shards": 2}


def test_a_sharded_run_reads_what_one_process_wrote_and_pays_nothing(tmp_path: Path) -> None:
    options = partial(run_options, cache=True, history_path=str(tmp_path / "history.db"),
                      tasks=ITEMS, concurrency=3)
    cassette = tmp_path / "cached.swarm.json"
    with FakeServer() as server:
        first = swarmkit.run_sync(TASK, **options(server))
        sent = server.count("worker-*")
        again = swarmkit.run_sync(TASK, **options(server, record=str(cassette), **SHARDED))
        assert server.count("worker-*") == sent == 6  # no worker's request was sent again
    assert again.status == "completed" and run_problems(again) == []
    assert [w.shard for w in again.workers] == [None] * 6  # the kernel answered them all
    assert all(w.cached_calls == 1 and w.cost_usd == 0 for w in again.workers)
    assert [w.output for w in again.workers] == [w.output for w in first.workers]
    worker_calls = [c for c in again.calls if c.role == "worker"]
    assert {c.source for c in worker_calls} == {"cache"} and len(worker_calls) == 6
    # The hits are in its one cassette, and replay as the run showed them.
    replayed = swarmkit.run_sync(TASK, replay=str(cassette), history=False)
    assert replayed.tables().text() == again.tables().text()


def test_one_process_reads_what_the_shards_wrote(tmp_path: Path) -> None:
    options = partial(run_options, cache=True, history_path=str(tmp_path / "history.db"),
                      tasks=ITEMS)
    with FakeServer() as server:
        sharded = swarmkit.run_sync(TASK, **options(server, **SHARDED))
        sent = server.count("worker-*")
        local = swarmkit.run_sync(TASK, **options(server))
        assert server.count("worker-*") == sent == 6
        # Twice on the shards: the second reads the first's answers, and a refreshed
        # step (what %swarm rerun sets) is asked again.
        sharded_again = swarmkit.run_sync(TASK, **options(server, refresh=["worker-2"],
                                                          **SHARDED))
        assert server.count("worker-*") == 7 and server.count("worker-2") == 2
    assert all(w.cached_calls == 1 for w in local.workers)
    assert [w.output for w in local.workers] == [w.output for w in sharded.workers]
    assert [w.shard for w in sharded.workers] == [0, 1, 0, 1, 0, 1]
    assert [w.cached_calls for w in sharded_again.workers] == [1, 0, 1, 1, 1, 1]
    assert [w.shard for w in sharded_again.workers] == [None, 0, None, None, None, None]
    assert sharded_again.workers[1].cost_usd > Decimal(0)


def test_a_budget_counts_a_hit_as_free(tmp_path: Path) -> None:
    """A run whose every worker is a hit fits a budget that its live calls would not."""
    options = partial(run_options, cache=True, history_path=str(tmp_path / "history.db"),
                      tasks=[f"thing {i}" for i in range(20)], max_tokens=64, reduce=False)
    with FakeServer() as server:
        paid = swarmkit.run_sync(TASK, **options(server))
        assert paid.cost_usd is not None and paid.cost_usd > 0
        free = swarmkit.run_sync(TASK, **options(server, budget=paid.cost_usd / 4,
                                                 **SHARDED))
    assert free.status == "completed" and free.cost_usd == 0
    assert {w.status for w in free.workers} == {"completed"}


@swarmkit.tool
def shelf(item: str) -> str:
    """Where an item is kept.

    Args:
        item: The item.
    """
    return f"{item} is on shelf {len(item)}"


def test_a_worker_with_tools_runs_on_its_shard_and_its_calls_are_served_from_the_cache(
        tmp_path: Path) -> None:
    options = partial(run_options, cache=True, history_path=str(tmp_path / "history.db"),
                      tasks=ITEMS[:4], tools=[shelf])
    shelf_then_answer = tool_then_answer("shelf", "found: {}",
                                         lambda request: {"item": request.step})
    with FakeServer(shelf_then_answer) as server:
        first = swarmkit.run_sync(TASK, **options(server))
        sent = server.count("worker-*")
        again = swarmkit.run_sync(TASK, **options(server, **SHARDED))
        assert server.count("worker-*") == sent == 8  # two calls a worker, each once
    assert [w.shard for w in again.workers] == [0, 1, 0, 1]
    assert all(w.cached_calls == 2 and w.cost_usd == 0 for w in again.workers)
    assert len(again.tool_calls) == 4  # tools are never cached: they ran again
    assert [w.output for w in again.workers] == [w.output for w in first.workers]
