"""``%swarm config`` shows every setting that takes effect: a key the session set is in
the printed table with its value (one line, cut when long), even one the table does not
list by default (the judge, the rubric, repeat, the prompts, a schema)."""

from __future__ import annotations

import pytest
from IPython.core.interactiveshell import InteractiveShell

from swarmkit.config.options import config_keys
from swarmkit.magics import SwarmMagics, swarm_config

SET = {
    "judge": "gpt-4.1",
    "rubric": "Names the right city.",
    "repeat": "3",
    "system_prompt": "Answer as a skeptical reviewer.",
    "reducer_prompt": "Merge into a table.",
    "planner_prompt": "Split into at most {max_workers} parts.",
    "judge_api_key_env": "JUDGE_KEY",
    "batch_poll": "2.5",
    "max_tool_hops": "2",
    "otel_content": "true",
}


def rows(shell: InteractiveShell, line: str) -> dict[str, tuple[str, str]]:
    table = shell.run_line_magic("swarm", line)
    return {key: (value, by) for key, value, by in table.rows}


@pytest.mark.parametrize(("key", "value"), SET.items())
def test_a_key_the_session_set_is_shown_with_its_value(
    shell: InteractiveShell, magics: SwarmMagics, key: str, value: str,
) -> None:
    assert key in config_keys()
    shown = rows(shell, f"config {key}='{value}'")
    expected = {"true": "True"}.get(value, value)
    assert shown[key] == (expected, "session")
    assert key not in rows(shell, f"config {key}=")  # unset: back out of the table


def test_a_long_prompt_is_shown_on_one_line_cut(
    shell: InteractiveShell, magics: SwarmMagics,
) -> None:
    prompt = "Answer as a skeptical reviewer who checks every claim twice.\n" * 4
    table = swarm_config(system_prompt=prompt)
    (value,) = [v for k, v, _ in table.rows if k == "system_prompt"]
    assert "\n" not in value and value.endswith("…") and len(value) == 72
    assert value.startswith("Answer as a skeptical reviewer who checks every claim twice. ")
