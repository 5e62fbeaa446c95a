"""The record builder keeps each word the records repeat once: records that crossed a
process (a shard's, unpickled, as a cluster run's arrive) end with the same values and
shared strings, and a worker's sub-task is the plan's own string."""

from __future__ import annotations

import pickle
from decimal import Decimal

from swarmkit.engine.recordbuilder import RunRecordBuilder
from swarmkit.record.events import CallFinished, PlanReady, RunStarted, WorkerFinished
from swarmkit.record.rows import CallRecord, WorkerRecord
from swarmkit.record.usage import Usage


def _crossed(value: object) -> object:
    """``value`` as another process sends it: an equal copy with its own strings."""
    return pickle.loads(pickle.dumps(value))


def test_records_from_another_process_share_their_words_and_the_plans_tasks() -> None:
    plan = tuple(f"Summarise row {i} of the table." for i in range(1, 4))
    builder = RunRecordBuilder()
    builder.on_event(RunStarted("r1", "task", {}, "2026-01-01T00:00:00+00:00"))
    builder.on_event(PlanReady(plan, "", 0.1))
    sent = []
    for index in (1, 2, 3):
        call = CallRecord(f"worker-{index}", "work" + "er", "gpt-" + "4.1-mini", "live",
                          Usage(10, 5, 0, 0, 1), Decimal("0.00001"), 0.2, 0.1, 1,
                          f"{index:064x}", finish_reason="st" + "op")
        worker = WorkerRecord(index, "".join(plan[index - 1]), "completed",
                              reason="bud" + "get" if index == 3 else None, output="done")
        sent.append((call, worker))
        builder.on_event(CallFinished(_crossed(call), t=0.3))  # type: ignore[arg-type]
        builder.on_event(WorkerFinished(_crossed(worker), t=0.3))  # type: ignore[arg-type]
    run = builder.run
    assert run is not None
    assert run.calls == [call for call, _ in sent]
    assert run.workers == [worker for _, worker in sent]
    first, *others = run.calls
    for other in others:
        assert other.role is first.role and other.model is first.model
        assert other.source is first.source and other.finish_reason is first.finish_reason
    assert run.workers[0].status is run.workers[1].status is run.workers[2].status
    assert run.workers[2].reason == "budget"
    for worker in run.workers:
        assert worker.task is run.plan[worker.index - 1]


def test_a_worker_whose_task_is_not_the_plans_keeps_its_own() -> None:
    builder = RunRecordBuilder()
    builder.on_event(RunStarted("r1", "task", {}, "2026-01-01T00:00:00+00:00"))
    builder.on_event(PlanReady(("one",), "", 0.1))
    other = WorkerRecord(1, "another", "failed", reason="shard")
    builder.on_event(WorkerFinished(other, t=0.2))
    beyond = WorkerRecord(5, "five", "completed")  # past the plan: nothing to share
    builder.on_event(WorkerFinished(beyond, t=0.2))
    assert builder.run is not None and builder.run.workers == [other, beyond]
    assert builder.run.workers[0].task == "another"
