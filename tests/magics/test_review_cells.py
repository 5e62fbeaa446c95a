"""The notebook's side of a reviewed plan that is not the review widget: ``--dry-run``
shows the expected cost next to the bound once the history has runs (``--confirm-over``
in a cell opens the review widget: tests/magics/test_reviewcell.py)."""

from __future__ import annotations

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

from swarmkit.magics import SwarmMagics
from swarmkit.magics.dryrun import DryRun
from swarmkit.testing import FakeServer
from tests.support.fakekey import MODEL, swarm_line

pytestmark = pytest.mark.usefixtures("fake_key")


def test_dry_run_shows_the_expected_cost_next_to_the_bound(
    shell: InteractiveShell, magics: SwarmMagics, server: FakeServer
) -> None:
    with capture_output() as before:
        shell.run_cell_magic("swarm", swarm_line(server, "--dry-run --out d"), "Name lakes")
    first = shell.user_ns["d"]
    assert isinstance(first, DryRun) and first.expected_usd is None
    assert "expected: no earlier run of" in before.outputs[0].data["text/plain"]
    with capture_output():
        shell.run_cell_magic("swarm", swarm_line(server, "--quiet"), "Name rivers")
    with capture_output() as after:
        shell.run_cell_magic("swarm", swarm_line(server, "--dry-run --out d"), "Name hills")
    estimate = shell.user_ns["d"]
    text = after.outputs[0].data["text/plain"]
    assert estimate.expected_usd is not None and estimate.cost_usd is not None
    assert estimate.expected_usd < estimate.cost_usd
    assert f"expected: from 1 earlier run of {MODEL} in this history" in text
    assert "at most" in text and "expected" in after.outputs[0].data["text/html"]

