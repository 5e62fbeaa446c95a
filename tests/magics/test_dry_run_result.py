"""A dry run's result leads somewhere: it is in ``_swarm`` (and ``--out``), it prints
its run id, ``--plan-from`` takes the result or that id and makes only the planned
calls, and ``%swarm show`` (``jswarm show``, the Run's tables) shows a planned run's
plan and how to make its calls."""

from __future__ import annotations

from typing import Any

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

import swarmkit
from swarmkit.errors import ConfigError
from swarmkit.magics import SwarmMagics
from swarmkit.magics.dryrun import DryRun
from swarmkit.testing import FakeServer
from tests.support.fakekey import run_options, swarm_line

pytestmark = pytest.mark.usefixtures("fake_key")

TASK = "Name three capitals"


def cell(shell: InteractiveShell, line: str) -> list[Any]:
    with capture_output() as captured:
        shell.run_cell_magic("swarm", line, TASK)
    return captured.outputs


def test_a_dry_run_lands_in_swarm_and_out_and_prints_its_run_id(
    shell: InteractiveShell, magics: SwarmMagics, server: FakeServer,
) -> None:
    (shown,) = cell(shell, swarm_line(server, "--dry-run --out plan --workers 3"))
    plan = shell.user_ns["plan"]
    assert isinstance(plan, DryRun) and shell.user_ns["_swarm"] is plan
    assert len(plan.plan) == 3 and len(plan.run_id) == 12
    text = shown.data["text/plain"]
    assert (f"run {plan.run_id}: kept in the history as planned; to make its calls: "
            f"%%swarm --plan-from {plan.run_id}") in text
    assert plan.run_id in shown.data["text/html"]


@pytest.mark.parametrize("source", ["plan", "id"])
def test_plan_from_takes_the_dry_runs_result_or_its_id_and_asks_no_planner(
    shell: InteractiveShell, magics: SwarmMagics, server: FakeServer, source: str,
) -> None:
    cell(shell, swarm_line(server, "--dry-run --out plan --workers 3"))
    plan = shell.user_ns["plan"]
    server.clear()
    given = "plan" if source == "plan" else plan.run_id
    cell(shell, swarm_line(server, f"--plan-from {given} --no-cache"))
    run = shell.user_ns["_swarm"]
    assert run.status == "completed" and tuple(run.plan) == plan.plan
    assert server.counts_by_step() == {"worker-1": 1, "worker-2": 1, "worker-3": 1,
                                       "reducer": 1}


def test_plan_from_a_variable_that_is_neither_a_run_nor_a_dry_run_is_refused(
    shell: InteractiveShell, magics: SwarmMagics, server: FakeServer,
) -> None:
    shell.user_ns["numbers"] = [1, 2]
    with pytest.raises(UsageError, match="--plan-from numbers is a list, not a Run or a dry "
                                         "run"):
        cell(shell, swarm_line(server, "--plan-from numbers"))


def test_show_of_a_planned_run_shows_its_plan_and_the_next_step(
    shell: InteractiveShell, magics: SwarmMagics, server: FakeServer,
) -> None:
    cell(shell, swarm_line(server, "--dry-run --out plan --workers 3"))
    plan = shell.user_ns["plan"]
    with capture_output() as captured:
        shell.run_line_magic("swarm", f"show {plan.run_id}")
    (shown,) = captured.outputs
    text = shown.data["text/plain"]
    listed = "\n".join(f"{i}. {t}" for i, t in enumerate(plan.plan, start=1))
    assert f"plan (3 sub-tasks)\n{listed}\n" in text
    assert f"to make its calls: %%swarm --plan-from {plan.run_id}" in text
    html = shown.data["text/html"]
    assert "<ol><li>" in html and f"--plan-from {plan.run_id}" in html


def test_run_sync_plan_from_takes_a_dry_run_and_refuses_what_has_no_plan(
    server: FakeServer,
) -> None:
    dry = DryRun("t", ("first sub-task", "second sub-task"), (), run_id="abc123abc123")
    run = swarmkit.run_sync("t", plan_from=dry, **run_options(server, history=False))
    assert tuple(run.plan) == dry.plan and server.count("planner") == 0
    with pytest.raises(ConfigError, match="plan_from takes a Run, a dry run's result or a "
                                          "run id, not a dict"):
        swarmkit.run_sync("t", plan_from={"plan": ["x"]}, **run_options(server,
                                                                         history=False))
