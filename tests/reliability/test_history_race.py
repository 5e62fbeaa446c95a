"""Kernels opening a brand-new history database at the same moment all succeed.

Switching a new SQLite file to WAL needs an exclusive lock; SQLite answers a race for it
with SQLITE_BUSY at once rather than waiting, which used to fail one kernel's run with
"history database ... cannot be used (database is locked)".
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from swarmkit.store import History

ROOT = Path(__file__).resolve().parents[2]
OPENERS = 4
ROUNDS = 5
# Each opener spins until the gate file appears, so they all open within microseconds.
SCRIPT = """import pathlib, sys
sys.path.insert(0, sys.argv[3])
from swarmkit.store import History
gate = pathlib.Path(sys.argv[2])
while not gate.exists():
    pass
History(sys.argv[1]).close()
"""


def test_first_open_of_a_new_history_by_several_kernels_at_once_never_fails(
    tmp_path: Path,
) -> None:
    for round_ in range(ROUNDS):
        path, gate = tmp_path / f"history-{round_}.db", tmp_path / f"go-{round_}"
        openers = [
            subprocess.Popen([sys.executable, "-c", SCRIPT, str(path), str(gate), str(ROOT)],
                             stderr=subprocess.PIPE, text=True)
            for _ in range(OPENERS)
        ]
        time.sleep(0.5)  # let them import and reach the gate (a late one only races less)
        gate.touch()
        for opener in openers:
            _, err = opener.communicate(timeout=60)
            assert opener.returncode == 0, err.strip().splitlines()[-1]
        with History(path) as history:
            assert history.recent() == []
