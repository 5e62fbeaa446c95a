"""Test-wide isolation only: no test writes a history database into the repository."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _private_history(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Each test gets its own history (and so its own cache): a swarm run in one test is
    # never a cache hit in another. Subprocesses and kernels inherit the variable.
    monkeypatch.setenv("SWARMKIT_HISTORY", str(tmp_path / "swarmkit-history.db"))
