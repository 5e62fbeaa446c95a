"""The worker tool loop end to end: the real openai client → FakeServer scripting a model
that calls tools, through ``swarmkit.run_sync(tools=...)``."""

from __future__ import annotations

import asyncio
import json
import sys
import threading
from collections.abc import Callable
from typing import Any

import pytest

import swarmkit
from swarmkit.api.result import Run
from swarmkit.testing import FakeReply, FakeRequest, FakeServer
from swarmkit.tools import FINAL_ANSWER_PROMPT, Tool, tool
from tests.support.fakekey import run_options

pytestmark = pytest.mark.usefixtures("fake_key")

# Guards the rendezvous tools against a hang if concurrency were broken; never reached.
DEADLOCK_GUARD = 10.0

WorkerScript = Callable[[FakeRequest, int], FakeReply]


def turn_of(request: FakeRequest) -> int:
    """How many assistant turns the worker's conversation already holds."""
    return sum(1 for m in request.messages if m.get("role") == "assistant")


def tool_messages(request: FakeRequest) -> list[dict[str, Any]]:
    return [m for m in request.messages if m.get("role") == "tool"]


def swarm(
    worker: WorkerScript, tools: list[Any], *, tasks: int = 1, **extra: Any
) -> tuple[Run, FakeServer]:
    """One run: the planner plans ``tasks`` sub-tasks, ``worker`` scripts each worker."""

    def handler(request: FakeRequest) -> FakeReply:
        if request.role == "planner":
            plan = [f"look up order A-{1000 + i}" for i in range(tasks)]
            return FakeReply(content=json.dumps({"tasks": plan}))
        if request.role == "reducer":
            return FakeReply(content="merged")
        return worker(request, turn_of(request))

    with FakeServer(handler) as server:
        run = swarmkit.run_sync(
            "Check the orders", **run_options(server, history=False, tools=tools, **extra))

    assert not server.handler_errors
    return run, server


def worker_requests(server: FakeServer) -> list[FakeRequest]:
    return [r for r in server.requests if r.step.startswith("worker-")]  # type: ignore[misc]


class Counter:
    """Counts the executions of a tool (what 'never executed' is checked against)."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []
        self.threads: set[str] = set()


def make_lookup(counter: Counter) -> Tool:
    @tool
    def lookup(order_id: str) -> dict[str, str]:
        """Look up an order.

        Args:
            order_id: The order's id.
        """
        counter.calls.append({"order_id": order_id})
        counter.threads.add(threading.current_thread().name)
        return {"order_id": order_id, "status": "shipped"}

    return lookup


# -- a single call -------------------------------------------------------------------------


def test_a_single_call_runs_the_tool_and_feeds_the_result_back() -> None:
    counter = Counter()
    lookup = make_lookup(counter)

    def worker(request: FakeRequest, turn: int) -> FakeReply:
        if turn == 0:
            return FakeReply(tool_calls=[("lookup", {"order_id": "A-17"})])
        return FakeReply(content=f"answer from {tool_messages(request)[0]['content']}")

    run, server = swarm(worker, [lookup])
    assert counter.calls == [{"order_id": "A-17"}]
    # A sync tool runs in a worker thread, never on the engine's loop.
    assert all(not name.startswith("swarmkit-loop") for name in counter.threads)
    assert counter.threads != {threading.main_thread().name}
    [call] = run.tool_calls
    assert (call.worker, call.hop, call.tool) == (1, 1, "lookup")
    assert json.loads(call.arguments) == {"order_id": "A-17"}
    assert json.loads(call.result or "") == {"order_id": "A-17", "status": "shipped"}
    assert call.error is None and call.source == "live"
    [worker_record] = run.workers
    assert worker_record.status == "completed" and worker_record.tool_calls == 1
    assert worker_record.calls == 2
    assert worker_record.output == 'answer from {"order_id":"A-17","status":"shipped"}'
    first, second = worker_requests(server)
    [spec] = first.body["tools"]
    assert spec["function"]["name"] == "lookup"
    assert spec["function"]["parameters"]["properties"]["order_id"]["description"] == \
        "The order's id."
    assert second.body["messages"][-1] == {
        "role": "tool", "tool_call_id": call.call_id,
        "content": '{"order_id":"A-17","status":"shipped"}',
    }
    assert second.body["messages"][-2]["tool_calls"][0]["id"] == call.call_id
    text = str(run)
    assert "tool calls" in text and "lookup" in text and "A-17" in text
    html = run._repr_html_()
    assert "tool calls (1)" in html and "<td>lookup</td>" in html


# -- parallel calls ------------------------------------------------------------------------


def rendezvous_tool(size: int, seen: dict[str, int]) -> Tool:
    """A tool whose calls wait until ``size`` of them have once been running together;
    from then on every call passes, so no call is ever left waiting for a partner."""
    state = {"in_flight": 0}
    arrived = asyncio.Event()

    @tool
    async def fetch(n: int) -> int:
        """Fetch item n."""
        state["in_flight"] += 1
        seen["peak"] = max(seen.get("peak", 0), state["in_flight"])
        seen["calls"] = seen.get("calls", 0) + 1
        if state["in_flight"] >= size:
            arrived.set()
        await asyncio.wait_for(arrived.wait(), DEADLOCK_GUARD)
        state["in_flight"] -= 1
        return n * 10

    return fetch


def parallel_worker(count: int) -> WorkerScript:
    def worker(request: FakeRequest, turn: int) -> FakeReply:
        if turn == 0:
            return FakeReply(tool_calls=[("fetch", {"n": n}) for n in range(count)])
        return FakeReply(content=",".join(m["content"] for m in tool_messages(request)))

    return worker


def test_parallel_calls_in_one_turn_run_concurrently_and_answer_in_order() -> None:
    seen: dict[str, int] = {}
    run, _ = swarm(parallel_worker(3), [rendezvous_tool(3, seen)])
    assert seen == {"peak": 3, "calls": 3}
    assert run.workers[0].output == "0,10,20"
    assert [c.call_id for c in run.tool_calls] == sorted(c.call_id for c in run.tool_calls)
    assert run.workers[0].tool_calls == 3


def test_parallel_calls_are_bounded_by_tool_concurrency() -> None:
    seen: dict[str, int] = {}
    run, _ = swarm(parallel_worker(6), [rendezvous_tool(2, seen)], tool_concurrency=2)
    assert seen == {"peak": 2, "calls": 6}
    assert run.workers[0].output == "0,10,20,30,40,50"


# -- rejected calls: never executed --------------------------------------------------------


def test_invalid_arguments_go_back_as_errors_and_never_execute() -> None:
    counter = Counter()

    def worker(request: FakeRequest, turn: int) -> FakeReply:
        if turn == 0:
            return FakeReply(tool_calls=[
                ("lookup", {"order_id": 5}),
                ("lookup", "{not json"),
                ("lookup", {"order_id": "A", "force": True}),
                ("lookup", "[1, 2]"),
            ])
        return FakeReply(content=" | ".join(m["content"] for m in tool_messages(request)))

    run, _ = swarm(worker, [make_lookup(counter)], max_tool_errors=10)
    assert counter.calls == []
    errors = [c.error or "" for c in run.tool_calls]
    assert "order_id: Input should be a valid string" in errors[0]
    assert "not valid JSON" in errors[1]
    assert "force: Extra inputs are not permitted" in errors[2]
    assert "must be a JSON object" in errors[3]
    assert all(e.startswith("ToolError: ") for e in errors)
    assert all(c.result is None for c in run.tool_calls)
    assert run.workers[0].status == "completed"
    assert run.workers[0].output == " | ".join(errors)


def test_an_unknown_tool_is_refused_and_a_tool_not_given_never_runs() -> None:
    counter, forbidden = Counter(), Counter()

    @tool
    def delete_everything() -> str:
        """Defined, but not given to the swarm."""
        forbidden.calls.append({})
        return "deleted"

    def worker(request: FakeRequest, turn: int) -> FakeReply:
        if turn == 0:
            return FakeReply(tool_calls=[("delete_everything", {}), ("nope", {})])
        return FakeReply(content=tool_messages(request)[0]["content"])

    run, server = swarm(worker, [make_lookup(counter)])
    assert forbidden.calls == [] and counter.calls == []
    assert [c.error for c in run.tool_calls] == [
        "ToolError: unknown tool 'delete_everything'; available tools: lookup",
        "ToolError: unknown tool 'nope'; available tools: lookup",
    ]
    assert [t["function"]["name"] for t in worker_requests(server)[0].body["tools"]] == \
        ["lookup"]
    assert run.workers[0].output == run.tool_calls[0].error


def test_no_tools_means_no_tool_loop_and_no_tools_in_the_request() -> None:
    def worker(request: FakeRequest, turn: int) -> FakeReply:
        return FakeReply(content="plain")

    run, server = swarm(worker, [])
    assert run.workers[0].output == "plain" and run.tool_calls == []
    assert all("tools" not in r.body for r in worker_requests(server))


# -- failing tools ---------------------------------------------------------------------------


def test_a_raising_tool_goes_back_as_tool_error_and_the_worker_goes_on() -> None:
    @tool
    def charge(amount: float) -> str:
        """Charge a card."""
        raise ValueError(f"card declined for {amount}")

    def worker(request: FakeRequest, turn: int) -> FakeReply:
        if turn == 0:
            return FakeReply(tool_calls=[("charge", {"amount": 12.5})])
        return FakeReply(content=f"saw: {tool_messages(request)[0]['content']}")

    run, _ = swarm(worker, [charge])
    [call] = run.tool_calls
    assert call.error == "ToolError: ValueError: card declined for 12.5"
    assert call.result is None
    assert run.workers[0].status == "completed"
    assert run.workers[0].output == "saw: ToolError: ValueError: card declined for 12.5"


def test_max_tool_errors_fails_the_worker_with_reason_tools() -> None:
    attempts = Counter()

    @tool
    def flaky(n: int) -> str:
        """Always fails."""
        attempts.calls.append({"n": n})
        raise RuntimeError("backend down")

    def always_calls(request: FakeRequest, turn: int) -> FakeReply:
        return FakeReply(tool_calls=[("flaky", {"n": turn})])

    run, server = swarm(always_calls, [flaky], max_tool_errors=2, max_tool_hops=5)
    [worker] = run.workers
    assert worker.status_label == "failed (tools)"
    assert worker.error is not None
    assert "stopped after 2 tool errors (max_tool_errors=2)" in worker.error
    assert "RuntimeError: backend down" in worker.error
    assert len(attempts.calls) == 2 and worker.tool_calls == 2
    assert len(worker_requests(server)) == 2  # no further model turn after the limit
    assert run.status == "failed"


def test_a_slow_tool_times_out_and_a_per_tool_timeout_wins() -> None:
    never = asyncio.Event()

    @tool
    async def slow(q: str) -> str:
        """Never answers."""
        await never.wait()
        return "unreachable"

    @tool(timeout=0.05)
    async def slower(q: str) -> str:
        """Never answers either."""
        await never.wait()
        return "unreachable"

    def worker(request: FakeRequest, turn: int) -> FakeReply:
        if turn == 0:
            return FakeReply(tool_calls=[("slow", {"q": "x"}), ("slower", {"q": "y"})])
        return FakeReply(content="gave up")

    run, _ = swarm(worker, [slow, slower], tool_timeout=0.1)
    assert [c.error for c in run.tool_calls] == [
        "ToolError: slow timed out after 0.1s",
        "ToolError: slower timed out after 0.05s",
    ]
    assert run.workers[0].status == "completed"


# -- bounds ----------------------------------------------------------------------------------


def test_results_are_truncated_with_a_visible_marker() -> None:
    @tool
    def dump() -> str:
        """A large result."""
        return "x" * 100

    def worker(request: FakeRequest, turn: int) -> FakeReply:
        if turn == 0:
            return FakeReply(tool_calls=[("dump", {})])
        return FakeReply(content=tool_messages(request)[0]["content"])

    run, _ = swarm(worker, [dump], max_tool_result_chars=10)
    expected = "x" * 10 + "…[truncated 90 chars]"
    assert run.tool_calls[0].result == expected
    assert run.workers[0].output == expected


def test_the_hop_limit_ends_with_one_answer_turn_without_tools() -> None:
    counter = Counter()

    def keeps_calling(request: FakeRequest, turn: int) -> FakeReply:
        if request.body.get("tool_choice") == "none":
            return FakeReply(content=f"final after {len(tool_messages(request))} results")
        return FakeReply(tool_calls=[("lookup", {"order_id": f"A-{turn}"})])

    run, server = swarm(keeps_calling, [make_lookup(counter)], max_tool_hops=2)
    assert [c["order_id"] for c in counter.calls] == ["A-0", "A-1"]
    assert [(c.hop, c.tool) for c in run.tool_calls] == [(1, "lookup"), (2, "lookup")]
    [worker] = run.workers
    assert worker.status == "completed" and worker.output == "final after 2 results"
    assert worker.calls == 3
    last = worker_requests(server)[-1]
    assert last.body["tool_choice"] == "none"
    assert last.body["messages"][-1] == {"role": "user", "content": FINAL_ANSWER_PROMPT}


def test_a_model_that_ignores_tool_choice_none_fails_the_worker() -> None:
    def stubborn(request: FakeRequest, turn: int) -> FakeReply:
        return FakeReply(tool_calls=[("lookup", {"order_id": "A"})])

    run, _ = swarm(stubborn, [make_lookup(Counter())], max_tool_hops=1)
    [worker] = run.workers
    assert worker.status_label == "failed (tools)"
    assert "still asked for tools after max_tool_hops=1" in (worker.error or "")


def test_zero_hops_sends_no_tools_at_all() -> None:
    counter = Counter()

    def worker(request: FakeRequest, turn: int) -> FakeReply:
        return FakeReply(content="no tools needed")

    run, server = swarm(worker, [make_lookup(counter)], max_tool_hops=0)
    assert run.workers[0].output == "no tools needed"
    assert all("tools" not in r.body for r in worker_requests(server))


def test_each_worker_counts_its_own_tool_calls() -> None:
    counter = Counter()

    def worker(request: FakeRequest, turn: int) -> FakeReply:
        index = int(request.step.split("-")[1])
        if turn == 0:
            return FakeReply(tool_calls=[("lookup", {"order_id": f"W{index}-{i}"})
                                         for i in range(index)])
        return FakeReply(content=f"worker {index} done")

    run, _ = swarm(worker, [make_lookup(counter)], tasks=3)
    assert [w.tool_calls for w in run.workers] == [1, 2, 3]
    assert sorted((c.worker, c.tool) for c in run.tool_calls) == \
        [(1, "lookup"), (2, "lookup"), (2, "lookup"), (3, "lookup"), (3, "lookup"),
         (3, "lookup")]
    assert run.status == "completed"


def test_plain_functions_are_accepted_and_run_json_round_trips_the_tool_calls() -> None:
    def add(a: int, b: int) -> int:
        return a + b

    def worker(request: FakeRequest, turn: int) -> FakeReply:
        if turn == 0:
            return FakeReply(tool_calls=[("add", {"a": 2, "b": "3"})])
        return FakeReply(content=tool_messages(request)[0]["content"])

    run, _ = swarm(worker, [add])
    assert run.workers[0].output == "5"
    assert Run.from_json(run.to_json()).tool_calls == run.tool_calls


def test_replay_recalls_tool_results_and_never_reruns_a_tool(tmp_path: Any) -> None:
    counter = Counter()
    lookup = make_lookup(counter)
    cassette = str(tmp_path / "tools.swarm.json")

    def worker(request: FakeRequest, turn: int) -> FakeReply:
        if turn == 0:
            return FakeReply(tool_calls=[("lookup", {"order_id": "A-1"}),
                                         ("lookup", {"order_id": "A-1"}),
                                         ("nope", {})])
        return FakeReply(content="recorded answer")

    recorded, _ = swarm(worker, [lookup], record=cassette)
    assert len(counter.calls) == 2
    replayed = swarmkit.run_sync("Check the orders", replay=cassette, history=False,
                                 tools=[lookup])
    assert len(counter.calls) == 2  # replay never runs a tool
    assert [c.source for c in replayed.tool_calls] == ["replay"] * 3
    strip = [(c.worker, c.hop, c.tool, c.arguments, c.result, c.error, c.duration)
             for c in recorded.tool_calls]
    assert strip == [(c.worker, c.hop, c.tool, c.arguments, c.result, c.error, c.duration)
                     for c in replayed.tool_calls]
    assert str(replayed) == str(recorded)
    # An MCP server named in a replay is not even started: results come from the cassette.
    marker = tmp_path / "started"
    again = swarmkit.run_sync(
        "Check the orders", replay=cassette, history=False,
        mcp_servers={"shop": [sys.executable, "-c", f"open({str(marker)!r}, 'w').close()"]},
    )
    assert str(again) == str(recorded)
    assert not marker.exists()
