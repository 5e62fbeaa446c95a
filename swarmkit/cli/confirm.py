"""``jswarm run --confirm-over USD``: the planner first, then a question when the forecast
is over the amount.

In a terminal the plan and its forecast are printed and ``run N workers? [y/N/e]`` is
asked: ``y`` runs it, ``e`` opens ``$EDITOR`` (``$VISUAL``, else ``vi``) on the plan,
one sub-task a line, then asks again; anything else runs nothing. With no terminal
(stdin not a TTY) nothing is asked: one line naming ``--yes``, exit 2, after the
planner's call only. ``--yes`` runs it unasked (the review says ``yes``).
"""

from __future__ import annotations

import asyncio
import os
import shlex
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from ..api.gate import confirm_threshold, over_threshold
from ..api.planning import Plan, plan
from ..config.wording import counted
from ..errors import ConfigError
from ..record.review import ApprovedBy

__all__ = ["YES_FLAG", "Held", "confirm_plan", "edit_in_editor", "needs_confirming"]

YES_FLAG = "--yes"
# With these the plan is given, not made: there is no planner's plan to stop for.
_GIVEN_PLAN = ("tasks", "resume", "replay")


@dataclass(frozen=True, slots=True)
class Held:
    """The plan was not approved: the line that says why, for the exit."""

    message: str


def needs_confirming(options: dict[str, Any]) -> bool:
    """The run's options set ``confirm_over`` (flag or environment) and its plan is the
    planner's to make."""
    if any(options.get(name) is not None for name in _GIVEN_PLAN):
        return False
    return confirm_threshold(options) is not None


def edit_in_editor(tasks: list[str], editor: str) -> list[str]:
    """``tasks`` after the user edited them in ``editor``, one a line; blank lines and
    lines starting ``#`` are left out."""
    with tempfile.TemporaryDirectory(prefix="jswarm-plan-") as folder:
        path = Path(folder, "plan.txt")
        path.write_text("# one sub-task a line; delete a line to drop it, add one to add "
                        "it\n" + "\n".join(tasks) + "\n", encoding="utf-8")
        try:
            done = subprocess.run([*shlex.split(editor), str(path)], check=False)
        except OSError as exc:
            raise ConfigError(f"$EDITOR {editor!r} could not be started ({exc}); set "
                              "EDITOR to an editor command") from None
        if done.returncode != 0:
            raise ConfigError(f"$EDITOR {editor!r} exited with status {done.returncode}; "
                              "the plan is unchanged")
        lines = path.read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def _ask(made: Plan, reason: str, stdin: TextIO, stream: TextIO) -> ApprovedBy | Held:
    while True:
        stream.write(f"{made!r}\n{reason}\n")
        stream.write(f"run {counted(len(made.tasks), 'worker')}? [y/N/e] ")
        stream.flush()
        answer = stdin.readline().strip().lower()
        if answer in ("y", "yes"):
            return "yes"
        if answer not in ("e", "edit"):
            return Held("not run (answered no); nothing but the planner's call was made")
        editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
        made.tasks[:] = edit_in_editor(list(made.tasks), editor)
        if not made.tasks:
            return Held("not run: the edited plan has no sub-task left")


def confirm_plan(task: str, options: dict[str, Any], *, yes: bool, stdin: TextIO,
                 stream: TextIO) -> tuple[Plan, ApprovedBy | None] | Held:
    """Make the plan; return it with how it was approved (None: under the threshold,
    nobody was asked), or :class:`Held` when it is not to run."""
    limit = confirm_threshold(options)
    assert limit is not None
    made = asyncio.run(plan(task, **options))
    reason = over_threshold(made.forecast, limit)
    if reason is None:
        return made, None
    if yes:
        stream.write(f"{made!r}\n{reason}; running it ({YES_FLAG})\n")
        return made, "yes"
    if not stdin.isatty():
        return Held(f"not run: {reason}; no terminal to ask: pass {YES_FLAG} to run it "
                    f"(plan {made.run_id} is in the history)")
    answer = _ask(made, reason, stdin, stream)
    return answer if isinstance(answer, Held) else (made, answer)
