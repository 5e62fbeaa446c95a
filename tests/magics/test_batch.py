"""``%%swarm --batch`` and ``%swarm resume`` of a batch run whose process died, in a real
IPython shell against the loopback FakeServer's Batch API."""

from __future__ import annotations

from pathlib import Path

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

from swarmkit.api.result import Run
from swarmkit.magics import SwarmMagics
from swarmkit.testing import FakeServer
from tests.support.batches import killed_after_submitting
from tests.support.fakekey import KEY_ENV, run_options, swarm_line


def test_batch_flag_then_resume_of_a_dead_batch_run(
    shell: InteractiveShell, magics: SwarmMagics, tmp_path: Path, fake_key: str
) -> None:
    history = tmp_path / "history.db"
    shell.run_line_magic("swarm", f"config batch_poll=0.02 history_path={history}")
    with FakeServer(plan_tasks=3) as server:
        with capture_output() as captured:
            shell.run_cell_magic("swarm", swarm_line(server, "--quiet --batch"),
                                 "Name three rivers")
        run = shell.user_ns["_swarm"]
        assert isinstance(run, Run) and run.status == "completed"
        assert run.config["batch"] is True and server.batches.created == 1
        assert server.count("worker-*") == 0  # no worker asked live
        assert "Final answer merging 3 results" in captured.outputs[-1].data["text/plain"]
        # A batch's calls are in no cassette: export says so at once and writes nothing.
        with pytest.raises(UsageError, match=r"sent its workers to the Batch API, whose calls "
                           r"are not in a cassette.*run it without --batch to export it"):
            shell.run_line_magic("swarm", f"export {tmp_path / 'batch.ipynb'}")
        assert list(tmp_path.glob("batch*")) == []

        dead = killed_after_submitting(server.batches, "Name three capes", run_options(
            server, batch=True, batch_poll=60, history_path=str(history)), (KEY_ENV, fake_key))

        with capture_output() as captured:
            shell.run_line_magic("swarm", f"resume {dead} --base-url {server.base_url}")
        resumed = shell.user_ns["_swarm"]
        assert captured.stdout.startswith(f"%swarm resume: run {dead} (running, 3 sub-tasks)")
        assert resumed.status == "completed" and resumed.config["resume"] == dead
        assert server.batches.created == 2  # the first cell's and the dead run's: no third
        assert resumed.answer == "Final answer merging 3 results"
