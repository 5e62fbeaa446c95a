"""A dry run's own section: the plan it made and how to make its calls.

A dry run (``--dry-run``) ends ``planned``: it has a plan and no workers, so the tables
of a run (``%swarm show``, ``jswarm show``, the Run's repr) would show only its planner
call. For such a run they show the plan, numbered, and the step that makes its calls
(``--plan-from`` / ``plan_from=``, which take the run's id from the history).
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

from ..config.wording import counted

if TYPE_CHECKING:
    from ..record.runrecord import RunRecord

__all__ = ["planned_html", "planned_lines"]


def _is_planned(run: RunRecord) -> bool:
    return run.status == "planned" and bool(run.plan)


def _next_step(run: RunRecord) -> str:
    return (f"a dry run; to make its calls: %%swarm --plan-from {run.run_id} "
            f"(plan_from=\"{run.run_id}\" from Python)")


def planned_lines(run: RunRecord) -> list[str]:
    """The text section (heading, one line per sub-task, the next step), or none."""
    if not _is_planned(run):
        return []
    return [f"plan ({counted(len(run.plan), 'sub-task')})",
            *(f"{i}. {task}" for i, task in enumerate(run.plan, start=1)), _next_step(run), ""]


def planned_html(run: RunRecord) -> str:
    """The same section as HTML (the sub-tasks escaped), or an empty string."""
    if not _is_planned(run):
        return ""
    items = "".join(f"<li>{html.escape(task)}</li>" for task in run.plan)
    return (f"<p><b>plan ({counted(len(run.plan), 'sub-task')})</b></p>\n<ol>{items}</ol>\n"
            f'<p class="sk-note">{html.escape(_next_step(run))}</p>')
