"""A scripted tree: a FakeServer handler whose workers call ``split_task``.

    script = split_script({"worker-2": ["Postgres", "Qdrant", "Milvus"],
                           "worker-2.1": ["pgvector", "pgvecto.rs"]})
    with FakeServer(script) as server:
        run = swarmkit.run_sync("Survey the vector databases", depth=3, ...)

Each step named (``worker-<dotted id>``) answers its first turn with one ``split_task``
call of those sub-tasks, when its request offers the tool (at the run's depth it is
not offered, and the step answers as any worker); every other request, and the named
step's turns after the split, get ``then``'s reply (the built-in script by default).
``split_everywhere(n)`` splits every worker that is offered the tool into ``n``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from ..tools.split import SPLIT_TOOL
from .replies import FakeReply, FakeRequest

__all__ = ["offers_split", "split_everywhere", "split_reply", "split_script"]

SplitHandler = Callable[[FakeRequest], FakeReply | None]


def offers_split(request: FakeRequest) -> bool:
    """Whether ``request`` offers ``split_task`` and has not called a tool yet."""
    offered = any((spec.get("function") or {}).get("name") == SPLIT_TOOL
                  for spec in request.tools)
    return offered and not any(m.get("role") == "tool" for m in request.messages)


def split_reply(subtasks: Sequence[str]) -> FakeReply:
    """A reply that calls ``split_task`` with ``subtasks``."""
    return FakeReply(tool_calls=[(SPLIT_TOOL, {"subtasks": list(subtasks)})])


def split_script(
    splits: Mapping[str, Sequence[str]],
    then: Callable[[FakeRequest], FakeReply | None] | None = None,
) -> SplitHandler:
    """A handler: the steps of ``splits`` split into their sub-tasks, the rest ``then``
    (None: the server's built-in script)."""
    def handle(request: FakeRequest) -> FakeReply | None:
        subtasks = splits.get(request.step)
        if subtasks is not None and offers_split(request):
            return split_reply(subtasks)
        return None if then is None else then(request)

    return handle


def split_everywhere(children: int, label: str = "Part") -> SplitHandler:
    """A handler: every worker offered ``split_task`` splits into ``children`` sub-tasks
    (``"<label> <i> of <its step>"``), down to the run's depth; the rest the built-in
    script. A whole tree from one line, for tests and benchmarks."""
    def handle(request: FakeRequest) -> FakeReply | None:
        if request.role == "worker" and offers_split(request):
            return split_reply([f"{label} {i} of {request.step}"
                                for i in range(1, children + 1)])
        return None

    return handle
