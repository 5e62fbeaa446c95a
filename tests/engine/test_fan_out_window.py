"""The fan-out creates a worker's task only when a slot is about to be free, and still
records every worker the run ended before starting; while it fans out, no full garbage
collection starts on its own."""

from __future__ import annotations

import asyncio
import gc
from functools import partial

import pytest

import swarmkit
from swarmkit.engine import gcpause
from swarmkit.record.events import Event, WorkerStarted
from swarmkit.testing import FakeReply, FakeRequest, FakeServer, default_reply, run_problems
from tests.support.fakekey import run_options

pytestmark = pytest.mark.usefixtures("fake_key")

options = partial(run_options, history=False)



class TaskCounter:
    """A sink that counts the loop's live tasks each time a worker starts."""

    def __init__(self) -> None:
        self.most = 0

    def on_event(self, event: Event) -> None:
        if isinstance(event, WorkerStarted):
            self.most = max(self.most, len(asyncio.all_tasks()))


def test_live_tasks_grow_with_the_concurrency_not_with_the_workers() -> None:
    counter = TaskCounter()
    tasks = [f"row {i}" for i in range(1, 301)]
    with FakeServer() as server:
        run = swarmkit.run_sync("task", sinks=[counter], **options(
            server, tasks=tasks, concurrency=5, reduce=False))
    assert run.status == "completed" and len(run.workers) == 300
    assert [w.index for w in run.workers] == list(range(1, 301))
    assert all(w.status == "completed" for w in run.workers)
    # the run's own task, its 5 workers and a few of the client's: never the 300 workers
    assert 5 < counter.most < 30, counter.most


def test_workers_never_started_are_recorded_as_cancelled_with_the_reason() -> None:
    def handler(request: FakeRequest) -> FakeReply:
        if request.step.startswith("worker-") and request.step != "worker-1":
            return FakeReply(content="slow", latency=5.0)
        return default_reply(request)

    tasks = [f"row {i}" for i in range(1, 41)]
    with FakeServer(handler) as server:
        run = swarmkit.run_sync("task", **options(
            server, tasks=tasks, concurrency=2, run_timeout=1.0, reduce=False))
        started = server.count("worker-*")
    assert run.status == "cancelled" and run.error == "run timed out"
    labels = {w.index: w.status_label for w in run.workers}
    assert sorted(labels) == list(range(1, 41))
    assert labels[1] == "completed"
    assert all(label == "cancelled (timeout)" for i, label in labels.items() if i > 1)
    assert started == 3  # worker-1, then the two that took its slot and the other's
    assert run_problems(run) == []


class ThresholdSeen:
    """A sink that notes the collector's thresholds each time a worker starts."""

    def __init__(self) -> None:
        self.seen: set[tuple[int, int, int]] = set()

    def on_event(self, event: Event) -> None:
        if isinstance(event, WorkerStarted):
            self.seen.add(gc.get_threshold())


def test_full_collections_wait_while_workers_fan_out_and_come_back_after() -> None:
    before = gc.get_threshold()
    seen = ThresholdSeen()
    with FakeServer() as server:
        run = swarmkit.run_sync("task", sinks=[seen], **options(
            server, tasks=["a", "b", "c"], concurrency=2, reduce=False))
    assert run.status == "completed"
    assert seen.seen == {(before[0], before[1], gcpause._DEFERRED)}
    assert gc.get_threshold() == before


def test_nested_deferrals_restore_the_process_thresholds_once_the_last_ends() -> None:
    before = gc.get_threshold()
    with gcpause.full_collections_deferred():
        with gcpause.full_collections_deferred():
            assert gc.get_threshold()[2] == gcpause._DEFERRED
        assert gc.get_threshold()[2] == gcpause._DEFERRED  # the outer one still runs
    assert gc.get_threshold() == before


def test_thresholds_someone_set_meanwhile_are_left_as_they_are() -> None:
    before = gc.get_threshold()
    try:
        with gcpause.full_collections_deferred():
            gc.set_threshold(500, 5, 5)
        assert gc.get_threshold() == (500, 5, 5)
    finally:
        gc.set_threshold(*before)
