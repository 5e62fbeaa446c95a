"""The prompts swarmkit writes for each role when the user gives none: the defaults for
any model, and a small local model's (the embedded one, any ``local:`` one).

``swarmkit.api.resolve_models`` swaps a role's default for the local one only when the
role runs on a local model and the user kept the default; the engine recognises the local
prompts by equality, to lay out the requests a small model follows.
"""

from __future__ import annotations

__all__ = [
    "DEFAULT_PLANNER_PROMPT",
    "DEFAULT_REDUCER_PROMPT",
    "DEFAULT_SYSTEM_PROMPT",
    "LOCAL_PLANNER_PROMPT",
    "LOCAL_REDUCER_PROMPT",
    "LOCAL_SYSTEM_PROMPT",
]

DEFAULT_SYSTEM_PROMPT = (
    "You are one worker in a team. Solve only the sub-task you are given, concisely and "
    "concretely. Your answer will be merged with the other workers' answers."
)
DEFAULT_REDUCER_PROMPT = (
    "You merge the answers of several workers into one final answer to the original task. "
    "Resolve contradictions, drop repetition, and keep what is specific."
)
DEFAULT_PLANNER_PROMPT = (
    "Split the user's task into at most {max_workers} independent sub-tasks that can be "
    'worked on in parallel. Reply with JSON only: {{"tasks": ["sub-task 1", ...]}}.'
)
# A small local model's prompts (the embedded model, any ``local:`` one), used in place of
# the defaults above when a role runs on it (``swarmkit.api.resolve_models``; a prompt a
# user gave is kept): short plain instructions it follows, no example values it would
# copy, none of swarmkit's labels it would repeat. The planner's also gets worked
# examples (``engine.planner.PLAN_EXAMPLES``). Figures: benchmarks/README.md, issue 32.
LOCAL_PLANNER_PROMPT = (
    "You plan work. Split the user's task into at most {max_workers} short parts. When "
    "the task names several things, write one part for each thing, starting with its "
    "name. Write each part as a plain sentence of words. Reply with JSON only."
)
LOCAL_SYSTEM_PROMPT = (
    "You are a helpful expert. Answer the question below in three or four short, "
    "factual sentences. Stay on its topic."
)
LOCAL_REDUCER_PROMPT = (
    "You are a helpful assistant. Answer the user's question using the notes before it: "
    "write one short paragraph for each topic of the notes, starting with the topic's "
    "name."
)
