"""Sub-tasks a user brings instead of asking the planner (``tasks=``, ``%%swarm --tasks``).

:func:`given_tasks` turns a list or tuple of strings, a pandas Series, or a pandas
DataFrame with a template (``"Review {title}: {body}"``, filled from each row with the
rules of cell interpolation: only ``{identifier}`` is a placeholder, ``{{``/``}}`` are
literal braces, any other brace text stays as written) into the run's plan. pandas is
never imported: a Series and a DataFrame are recognised by what they are, so a user
without pandas pays nothing. Every wrong input is a one-line ConfigError saying what to do.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..errors import ConfigError
from .template import fill, placeholders
from .wording import kind_of

__all__ = ["MAX_GIVEN_TASKS", "MAX_ONE_PROCESS_TASKS", "MAX_TASK_CHARS", "given_tasks",
           "one_process_limit"]

# One worker per given task: more than this is almost always a mistake (a whole table
# passed where a sample was meant), and each task is a model call. A run sharded over a
# cluster (cluster=) takes up to MAX_GIVEN_TASKS; its kernel keeps about 2 KB a worker
# (README, "Past one machine"), so a million is about 2 GB.
MAX_GIVEN_TASKS = 1_000_000
# In one process the workers share one core (about 1,400 calls a second), so 100,000 is
# already over a minute of CPU: past it a cluster is the tool. The memory a worker
# costs the kernel is the same either way, so this is no memory limit.
MAX_ONE_PROCESS_TASKS = 100_000
# A sub-task is a prompt, not a document: longer text belongs in a tool or the cell.
MAX_TASK_CHARS = 100_000

def _is_dataframe(value: Any) -> bool:
    return type(value).__name__ == "DataFrame" and hasattr(value, "columns")


def _is_series(value: Any) -> bool:
    return type(value).__name__ == "Series" and hasattr(value, "tolist")


def _rows(frame: Any, template: str) -> list[str]:
    columns = [str(c) for c in frame.columns]
    missing = [name for name in placeholders(template) if name not in columns]
    if missing:
        raise ConfigError(
            f"task_template names the column {{{missing[0]}}}, which the DataFrame does not "
            f"have; its columns are {', '.join(columns) or '(none)'}"
        )
    if not placeholders(template):
        raise ConfigError(
            "task_template names no column; write {column} where each row's value goes, "
            "e.g. \"Review {title}: {body}\""
        )
    used = placeholders(template)
    records: Iterable[Mapping[str, Any]] = frame.to_dict("records")
    tasks = []
    for index, row in enumerate(records):
        values = {str(k): v for k, v in row.items()}
        # A gap would reach the model as the text "nan" or "None": a prompt nobody meant.
        gap = next((name for name in used if _missing(values[name])), None)
        if gap is not None:
            raise ConfigError(
                f"tasks row {index} has no value in column {gap} ({_short(values[gap])}); "
                f"fill the gaps (df.fillna(\"\")) or drop those rows (df.dropna())"
            )
        tasks.append(fill(template, values))
    return tasks


def _missing(value: Any) -> bool:
    """None, NaN, or pandas' NA / NaT (recognised by type, as pandas is not imported)."""
    if value is None or type(value).__name__ in ("NAType", "NaTType"):
        return True
    return isinstance(value, float) and math.isnan(value)


def _strings(values: Sequence[Any], what: str) -> tuple[str, ...]:
    for index, value in enumerate(values):
        if not isinstance(value, str):
            raise ConfigError(
                f"tasks must be strings, but {what} {index} is {kind_of(value)} "
                f"({_short(value)}); convert it with str() or use a DataFrame with task_template"
            )
        if not value.strip():
            raise ConfigError(f"tasks {what} {index} is empty; drop it or write the sub-task")
        if len(value) > MAX_TASK_CHARS:
            raise ConfigError(
                f"tasks {what} {index} has {len(value):,} characters, over the "
                f"{MAX_TASK_CHARS:,} a sub-task may have; shorten it"
            )
    return tuple(value.strip() for value in values)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:39] + "…"


def given_tasks(value: Any, template: str | None = None) -> tuple[str, ...]:
    """The plan a user gave: one sub-task per item (or per DataFrame row)."""
    if _is_dataframe(value):
        if template is None:
            raise ConfigError(
                "tasks is a DataFrame: add task_template (--task-template) saying how a row "
                "reads, e.g. \"Review {title}: {body}\", or pass one column as a Series"
            )
        tasks = _strings(_rows(value, template), "row")
    else:
        if template is not None:
            raise ConfigError(
                "task_template fills a DataFrame's rows, but tasks is "
                f"{kind_of(value)}; drop task_template or pass a DataFrame"
            )
        if _is_series(value):
            tasks = _strings(value.tolist(), "item")
        elif isinstance(value, list | tuple):
            tasks = _strings(value, "item")
        else:
            raise ConfigError(
                f"tasks must be a list of strings, a pandas Series or a DataFrame with "
                f"task_template, not {kind_of(value)}"
            )
    if not tasks:
        raise ConfigError("tasks is empty: give at least one sub-task, or drop tasks to "
                          "let the planner split the task")
    if len(tasks) > MAX_GIVEN_TASKS:
        raise ConfigError(
            f"tasks has {len(tasks):,} sub-tasks, over the {MAX_GIVEN_TASKS:,} one run takes "
            "(one worker each); split them over several runs"
        )
    return tasks


def one_process_limit(count: int) -> None:
    """A one-line ConfigError when ``count`` given tasks are more than a run in one
    process takes (``MAX_ONE_PROCESS_TASKS``); a cluster run takes them."""
    if count > MAX_ONE_PROCESS_TASKS:
        raise ConfigError(
            f"tasks has {count:,} sub-tasks, over the {MAX_ONE_PROCESS_TASKS:,} a run in one "
            f"process takes; shard them with cluster=\"ray\" (--cluster ray, needs "
            f"jupyter-swarmkit[ray]), which takes {MAX_GIVEN_TASKS:,}, or split them over "
            "several runs"
        )
