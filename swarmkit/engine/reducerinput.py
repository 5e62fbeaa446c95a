"""What one reducer request may hold: its input limit, its messages, and how the workers'
outputs are split into parts that fit. Pure functions, shared by the run
(``reducetree``), the budget's hold for the reducer and the dry-run estimate.

Sizes are counted as :meth:`ChatRequest.prompt_token_bound` counts them (every byte of
the messages' JSON a token), never with a tokenizer: a request whose bound is within
the limit is within it whatever the model's tokenizer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..config.prompts import LOCAL_REDUCER_PROMPT
from ..config.swarmconfig import SwarmConfig
from ..record.modelcall import ChatRequest, canonical_json
from .budgetedcalls import build_request
from .prices import PriceTable

__all__ = [
    "DEFAULT_CONTEXT",
    "MERGE_INTRO",
    "MIN_ROOM",
    "PART_INTRO",
    "InputLimit",
    "Part",
    "cut",
    "fit",
    "head_bound",
    "input_limit",
    "layout",
    "merge_messages",
    "part_size",
    "reducer_messages",
    "reducer_prompts",
    "reducer_request",
    "worker_part",
]

# The context assumed for a reducer model the table does not know (a local server's
# model, say): small enough for the 8K-16K contexts local servers often run with.
DEFAULT_CONTEXT = 16_384
# The least room a request must leave for its inputs: below it, merging in parts could
# not make progress, and the limit is refused with a message rather than tried.
MIN_ROOM = 1024
PART_INTRO = ("The workers' answers are too long for one request, so they are merged in "
              "parts. Merge the answers below into one partial answer to the task; it will "
              "be merged with the other parts, so keep everything specific.")
MERGE_INTRO = ("The workers' answers were too long for one request, so they were merged in "
               "parts. Merge the partial answers below into one final answer to the task.")
# Each input adds three "\n" separators to the user message: two bytes each in JSON.
_SEPARATORS = 6


@dataclass(frozen=True, slots=True)
class InputLimit:
    """The most prompt tokens (as bounded) one reducer request may carry, and why."""

    tokens: int
    source: str  # said in a refusal: where the figure came from


def input_limit(config: SwarmConfig, prices: PriceTable) -> InputLimit:
    """``reducer_max_input_tokens`` if set; else the reducer model's context (from the
    model table, or ``DEFAULT_CONTEXT``) less its ``max_tokens``, room for its answer."""
    if config.reducer_max_input_tokens is not None:
        return InputLimit(config.reducer_max_input_tokens, "reducer_max_input_tokens")
    role = config.reducer
    context = prices.context(role.model)
    where = f"{role.model}'s context {context}"
    if context is None:
        context = DEFAULT_CONTEXT
        where = f"the default context {context} ({role.model} has none in the model table)"
    return InputLimit(context - role.max_tokens,
                      f"{where} less the reducer's max_tokens {role.max_tokens}")


@dataclass(frozen=True, slots=True)
class Part:
    """One input of a reducer request: a worker's output, or a partial answer over the
    workers ``first`` to ``last``."""

    label: str
    text: str
    first: int
    last: int
    topic: str | None = None  # a worker's sub-task: the small local model's label


def worker_part(index: int, subtask: str, output: str) -> Part:
    return Part(f"Worker {index} (sub-task: {subtask}):", output, index, index, subtask)


def merge_messages(
    prompt: str, task: str, parts: Sequence[Part], intro: str | None = None
) -> list[dict[str, str]]:
    """A reducer conversation over ``parts``, the ``intro`` (if any) after the task.

    With the small local model's prompt (``LOCAL_REDUCER_PROMPT``) the task comes last,
    as the question to answer, and each worker's output is headed by its sub-task alone
    ("Notes on ...:", never longer than the label it replaces, so the sizes counted here
    still bound it): a 135M model answers the last thing it read and repeats the
    headings it saw (benchmarks/README.md, issue 32).
    """
    local = prompt == LOCAL_REDUCER_PROMPT
    lines = [] if local else [f"Task: {task}", ""]
    if intro is not None:
        lines += [intro, ""]
    for part in parts:
        label = f"Notes on {part.topic}:" if local and part.topic is not None else part.label
        lines += [label, part.text, ""]
    if local:
        lines.append(f"Using these notes, answer: {task}")
    return [
        {"role": "system", "content": prompt},
        {"role": "user", "content": "\n".join(lines).rstrip()},
    ]


def reducer_messages(
    prompt: str, task: str, inputs: list[tuple[int, str, str]]
) -> list[dict[str, str]]:
    """The reducer's conversation: a pure function, so a Run's drill-down can show it."""
    return merge_messages(prompt, task, [worker_part(*item) for item in inputs])


def reducer_request(
    config: SwarmConfig,
    task: str,
    inputs: list[tuple[int, str, str]],
    max_tokens: int | None = None,
) -> ChatRequest:
    """The reducer's request over ``inputs`` (index, sub-task, output); a pure function."""
    messages = reducer_messages(config.reducer_prompt, task, inputs)
    stream = config.stream_reducer and not config.reducer.is_local
    extra: dict[str, Any] = {"stream": stream}
    if max_tokens is not None:
        extra["max_tokens"] = max_tokens
    return build_request(config, "reducer", messages, **extra)


def _size(text: str) -> int:
    """Bytes ``text`` adds to the request's JSON (what the prompt bound counts)."""
    return len(canonical_json(text).encode()) - 2


def part_size(part: Part) -> int:
    """What ``part`` adds to a request's prompt bound: an upper bound, exact but for the
    trailing whitespace the message loses."""
    return _size(part.label) + _size(part.text) + _SEPARATORS


def head_bound(config: SwarmConfig, task: str) -> int:
    """The prompt bound of a request in a tree with no inputs yet (the larger intro):
    each input adds its ``part_size`` to it."""
    intro = max(PART_INTRO, MERGE_INTRO, key=len)
    head = merge_messages(config.reducer_prompt, task, [], intro)
    head[1]["content"] += "\n"  # merge_messages strips it; an input puts it back
    return build_request(config, "reducer", head).prompt_token_bound()


def cut(text: str, room: int) -> str:
    """``text`` cut so that it adds at most ``room`` to a request, ending with a note that
    says so; ``text`` itself when it fits."""
    if _size(text) <= room:
        return text

    def noted(keep: int) -> str:
        return (f"{text[:keep]}\n[cut to fit the reducer's context: the first {keep} of "
                f"{len(text)} characters]")

    low, high = 0, len(text)  # the longest prefix whose noted text fits
    while low < high:
        mid = (low + high + 1) // 2
        if _size(noted(mid)) <= room:
            low = mid
        else:
            high = mid - 1
    return noted(low)


def fit(part: Part, room: int) -> Part:
    """``part`` cut to add at most ``room`` (at least ``MIN_ROOM // 2``) to a request: its
    text first, and its label (a long sub-task) to half the room if that is not enough."""
    if part_size(part) <= room:
        return part
    label = part.label
    if _size(label) > room // 2:
        label = _shorten(label, room // 2)
    text = cut(part.text, room - _size(label) - _SEPARATORS)
    return Part(label, text, part.first, part.last, part.topic if label == part.label else None)


def _shorten(label: str, room: int) -> str:
    """``label`` cut to at most ``room`` bytes, ending ``…):`` like a worker's label."""
    low, high = 0, len(label)
    while low < high:
        mid = (low + high + 1) // 2
        if _size(label[:mid] + "…):") <= room:
            low = mid
        else:
            high = mid - 1
    return label[:low] + "…):"


def layout(sizes: Sequence[int], room: int) -> tuple[list[int], list[range]]:
    """Split inputs of ``sizes``, in order, into parts of at most ``room`` each.

    Returns the size each input is cut to (an input larger than a part is cut) and the
    parts. When every input would go alone (so a level would not shrink), each is cut
    to half a part, so a part always holds at least two inputs and the tree ends.
    """
    caps = [min(size, room) for size in sizes]
    parts = _pack(caps, room)
    if len(parts) == len(caps) > 1:
        caps = [min(size, room // 2) for size in sizes]
        parts = _pack(caps, room)
    return caps, parts


def _pack(sizes: Sequence[int], room: int) -> list[range]:
    parts: list[range] = []
    start, used = 0, 0
    for index, size in enumerate(sizes):
        if index > start and used + size > room:
            parts.append(range(start, index))
            start, used = index, 0
        used += size
    parts.append(range(start, len(sizes)))
    return parts


def reducer_prompts(
    config: SwarmConfig, task: str, plan: Sequence[str], output: int, partial: int,
    limit: int,
) -> list[int]:
    """The prompt bound of every reducer call over ``plan``'s workers if each output adds
    ``output`` and each partial answer ``partial`` (in prompt-bound units): one figure
    when they fit in one request, else the parts of each level and the final merge."""
    skeleton = reducer_request(config, task, [(i, t, "") for i, t in enumerate(plan, 1)])
    whole = skeleton.prompt_token_bound() + len(plan) * output
    if whole <= limit or not plan:
        return [whole]
    head = head_bound(config, task)
    room = max(limit - head, MIN_ROOM)
    sizes = [part_size(worker_part(i, t, "")) + output for i, t in enumerate(plan, 1)]
    prompts: list[int] = []
    level = 1
    while True:
        caps, parts = layout(sizes, room)
        if len(parts) == 1:
            return [*prompts, head + sum(caps)]
        prompts += [head + sum(caps[i] for i in part) for part in parts]
        label = part_size(Part(f"Partial answer {level}.{len(parts)} (workers 1-"
                               f"{len(plan)}):", "", 1, len(plan)))
        sizes = [label + partial] * len(parts)
        level += 1
