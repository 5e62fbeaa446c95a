"""``split_task``: the built-in tool of a tree (``depth`` > 1), offered by the tool loop.

Below the run's depth a worker's requests carry this tool after the user's; its call
hands the sub-tasks to the engine (``WorkerContext.split``, ``engine.subtree``),
which runs them as a child swarm and returns its reducer's answer. It never goes
through the call store's tool path: its result is not a side effect to record but the
outcome of model calls that the cache and the cassette serve one by one, so a replay
runs the child swarm again from the cassette, and shows it.

The description says when a split helps, so a model that has the choice splits a
broad sub-task and answers a narrow one itself.
"""

from __future__ import annotations

from typing import Any

from .definition import ToolArgumentsError

__all__ = ["SPLIT_TOOL", "split_spec", "split_subtasks"]

SPLIT_TOOL = "split_task"

_DESCRIPTION = (
    "Split your sub-task into {low} to {high} smaller sub-tasks that other workers "
    "answer in parallel; you then receive their merged answer and write your own answer "
    "from it. Use it only when your sub-task is broad: it covers several distinct items "
    "(products, regions, papers, files, questions) or independent parts that can each be "
    "answered on their own. Answer directly, without splitting, when your sub-task is "
    "narrow or its parts depend on each other. You may split once."
)


def split_spec(max_children: int) -> dict[str, Any]:
    """The ``tools`` entry of ``split_task`` for a run whose splits run at most
    ``max_children`` sub-tasks."""
    return {
        "type": "function",
        "function": {
            "name": SPLIT_TOOL,
            "description": _DESCRIPTION.format(low=2, high=max_children),
            "parameters": {
                "type": "object",
                "properties": {
                    "subtasks": {
                        "type": "array",
                        "items": {"type": "string"},
                        "minItems": 2,
                        "maxItems": max_children,
                        "description": "The smaller sub-tasks, each one self-contained "
                                       "sentence a worker can answer without the others.",
                    },
                },
                "required": ["subtasks"],
                "additionalProperties": False,
            },
        },
    }


def split_subtasks(arguments: dict[str, Any]) -> tuple[str, ...]:
    """The sub-tasks of a ``split_task`` call's parsed arguments; ToolArgumentsError when
    they are not a list of at least 2 strings. More than ``max_children`` is not an
    error: the engine cuts the split and says so."""
    subtasks = arguments.get("subtasks")
    extra = sorted(set(arguments) - {"subtasks"})
    if extra:
        raise ToolArgumentsError(f"split_task takes only 'subtasks', not {extra[0]!r}")
    if not isinstance(subtasks, list) or not all(isinstance(t, str) for t in subtasks):
        raise ToolArgumentsError("split_task: 'subtasks' must be an array of strings")
    if len([t for t in subtasks if t.strip()]) < 2:
        raise ToolArgumentsError("split_task: 'subtasks' needs at least 2 non-empty "
                                 "sub-tasks; answer a narrow sub-task yourself")
    return tuple(subtasks)
