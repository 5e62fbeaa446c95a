"""A batch run whose process dies after submitting its batch (for the resume tests)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

from swarmkit.store import History
from swarmkit.testing.batches import FakeBatches

__all__ = ["killed_after_submitting"]

ROOT = Path(__file__).resolve().parents[2]


def killed_after_submitting(batches: FakeBatches, task: str, options: dict[str, Any],
                            key: tuple[str, str]) -> str:
    """Start ``run_sync(task, **options)`` (a batch run keeping its history) in a child
    process with the key variable ``key`` set, and SIGKILL it once its batch is created
    (at the FakeServer's ``batches``) and its id is in the history: the cell closed, the
    kernel dead. Returns the dead run's id."""
    history = Path(options["history_path"])
    script = textwrap.dedent(f"""
        import swarmkit
        swarmkit.run_sync({task!r}, **{options!r})
    """)
    env = {**os.environ, key[0]: key[1],
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    child = subprocess.Popen([sys.executable, "-c", script], env=env)
    try:
        deadline = time.monotonic() + 60
        while True:
            assert child.poll() is None, "the run ended before it could be killed"
            assert time.monotonic() < deadline, "no batch reached the history"
            if batches.created and history.exists():
                with History(history) as stored:
                    runs = [r for r in stored.recent(5) if r.task == task]
                    if runs and stored.load_run(runs[0].run_id).batches:
                        break
            time.sleep(0.05)
    finally:
        child.kill()
        child.wait()
    return runs[0].run_id
