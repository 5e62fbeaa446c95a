"""The browser suite's fixtures: one JupyterLab, one chromium and one scripted FakeServer.

Every test here is marked ``browser`` and is skipped when chromium, Playwright or
JupyterLab is missing, so the README's test command never needs a browser. Run it with
``python -m pytest -m browser tests/browser -p no:cacheprovider`` (see ``.ci/browser``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from swarmkit.testing import FakeServer
from tests.browser.lab import CHROMIUM, CHROMIUM_ARGS, JupyterLab, Script, have_browser

_ROOT = Path(__file__).resolve().parents[2]
_WHY_NOT = have_browser()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    # Asked for by marker only: a plain `pytest` (the README's command) never opens one.
    asked = "browser" in (config.option.markexpr or "")
    why_not = _WHY_NOT if asked else "run it with -m browser (see .ci/browser)"
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.browser)
            if why_not is not None:
                item.add_marker(pytest.mark.skip(reason=f"browser suite: {why_not}"))


@pytest.fixture(scope="session")
def script() -> Script:
    return Script()


@pytest.fixture(scope="session")
def server(script: Script) -> Iterator[FakeServer]:
    with FakeServer(script, lifetime=1800) as fake:
        yield fake


@pytest.fixture
def scripted(script: Script, server: FakeServer) -> Iterator[Script]:
    """The script, reset for this test (no latency, four tasks, the built-in replies,
    no faults)."""
    script.plan_tasks, script.latency, script.replies = 4, {}, None
    server.clear_faults()
    yield script
    server.clear_faults()


@pytest.fixture(scope="session")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JupyterLab]:
    root = tmp_path_factory.mktemp("lab")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        filter(None, [str(_ROOT), os.environ.get("PYTHONPATH")])),
        "OPENAI_API_KEY": "sk-browser-test", "SWARMKIT_HISTORY": str(root / "history.db")}
    server = JupyterLab(root, env)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def chromium() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if report.when == "call" and report.failed and "browser_context" in item.fixturenames:
        # What the page showed when the test failed, for the person reading the log.
        where = Path(os.environ.get("SWARMKIT_BROWSER_FAILURES", item.config.rootpath /
                                    ".browser-failures"))
        context = item.funcargs["browser_context"]  # type: ignore[attr-defined]
        for n, page in enumerate(context.pages):
            where.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(where / f"{item.name}-{n}.png"), full_page=True)
    return report


@pytest.fixture
def browser_context(chromium: Any, lab: JupyterLab) -> Iterator[Any]:
    """This test's own browser context: its pages are closed and its kernels shut down
    however the test ends."""
    context = chromium.new_context()
    try:
        yield context
    finally:
        context.close()
        lab.shutdown_kernels()


@pytest.fixture
def light(lab: JupyterLab) -> JupyterLab:
    lab.set_theme("JupyterLab Light")
    return lab


@pytest.fixture
def shots(tmp_path: Path) -> Path:
    """Where screenshots go: ``SWARMKIT_SCREENSHOTS`` (e.g. docs/images) or a temp dir."""
    target = os.environ.get("SWARMKIT_SCREENSHOTS")
    return Path(target) if target else tmp_path
