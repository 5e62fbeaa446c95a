"""A tree (``--depth 2``) in a real JupyterLab: worker 2 splits its sub-task into three,
live and final, light and dark, wide and at 800 px. What the user sees is checked in the
page: each child's row under its parent's with its own status, the counters of splits
and leaves, the depth column, contrast and row heights. Screenshots ``tree-*.png`` go to
``SWARMKIT_SCREENSHOTS`` when it is set (docs/images)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from swarmkit.testing import FakeServer, split_script
from tests.browser.lab import UI_TIMEOUT, JupyterLab, Script
from tests.browser.test_browser_lab import (
    _CONTRAST,
    NARROW,
    WIDE,
    open_notebook,
    swarm_cell,
    wait_dashboard,
    wait_static,
)

pytestmark = pytest.mark.browser

SPLIT = {"worker-2": ["Postgres with pgvector", "Qdrant", "Milvus"]}
# The first cells of a worker table's body rows, as the page shows them.
_FIRST_CELLS = "(t) => [...t.querySelectorAll('tbody tr')].map(r => r.cells[0].innerText.trim())"
_HEIGHTS = "(t) => [...t.querySelectorAll('tr')].map(r => r.offsetHeight)"


@pytest.mark.parametrize(("theme", "width"), [("light", "wide"), ("dark", "wide"),
                                              ("light", "800"), ("dark", "800")])
def test_a_depth_2_run_shows_its_tree_live_and_final(
    browser_context: Any, lab: JupyterLab, server: FakeServer, scripted: Script,
    shots: Path, theme: str, width: str,
) -> None:
    scripted.plan_tasks, scripted.replies = 3, split_script(SPLIT)
    scripted.latency = {"worker-1": 1.0, "worker-3": 1.0, "worker-2.*": 6.0}
    lab.set_theme(f"JupyterLab {theme.title()}")
    cells = ["%load_ext swarmkit",
             swarm_cell(server, "--workers 3 --concurrency 4 --depth 2",
                        "Survey the vector databases for a small team")]
    try:
        nb = open_notebook(browser_context, lab, f"tree-{theme}-{width}.ipynb", cells,
                           viewport=WIDE if width == "wide" else NARROW)
        nb.run_all()
        dashboard = wait_dashboard(nb)
        dashboard.get_by_text("running (split: 0/3 done)").first.wait_for(timeout=UI_TIMEOUT)
        workers = dashboard.locator("table", has_text="tokens in").first
        live_ids = workers.evaluate(_FIRST_CELLS)
        live_text = dashboard.inner_text()
        live_heights = workers.evaluate(_HEIGHTS)
        # The swarm's sections: the Stop and merge button's contrast is not this test's.
        live_contrast = sorted(dashboard.locator(".swarmkit").evaluate_all(
            f"els => els.flatMap(e => ({_CONTRAST})(e))"))
        nb.screenshot(shots / f"tree-{theme}-{width}-running.png", cell=1)
        static = wait_static(nb)
        table = static.locator("table.sk-workers").first
        final_ids = table.evaluate(_FIRST_CELLS)
        depths = table.evaluate(
            "(t) => [...t.querySelectorAll('tbody tr')].map(r => r.cells[1].innerText)")
        final_text = static.inner_text()
        final_heights = table.evaluate(_HEIGHTS)
        final_contrast = static.evaluate(_CONTRAST)
        # Tall enough for the whole output, the timeline included (same width).
        size = WIDE if width == "wide" else NARROW
        nb.page.set_viewport_size({"width": size["width"], "height": 2000})
        nb.screenshot(shots / f"tree-{theme}-{width}-final.png", cell=1)
        # The parent's drill-down: its split call and its children's answers.
        parent = table.locator("tbody tr").nth(1).locator("details").first
        parent.locator("summary").click()
        opened = parent.locator(".sk-drill").first
        opened.get_by_text("child answers (3 of 3)").wait_for(timeout=UI_TIMEOUT)
        drill_text = opened.inner_text()
        if (theme, width) == ("light", "wide"):
            parent.scroll_into_view_if_needed()
            nb.screenshot(shots / "tree-light-wide-drilldown.png", cell=1)
        line = nb.page.evaluate(
            "() => parseFloat(getComputedStyle(document.querySelector('.jp-Notebook'))"
            ".lineHeight) || 20")
        nb.page.close()
    finally:
        lab.set_theme("JupyterLab Light")
    # Live: each child's row right under its parent's, marked, with its own status.
    assert [i.replace("\u2009", " ") for i in live_ids] == [
        "1", "2", "↳ 2.1", "↳ 2.2", "↳ 2.3", "3"], live_ids
    assert "tree: 3 children in 1 split" in live_text
    # Final: dotted ids, a depth column, the tree counted on the totals line.
    assert final_ids == ["1", "2", "2.1", "2.2", "2.3", "3"], final_ids
    assert depths == ["1", "1", "2", "2", "2", "1"], depths
    assert "tree: 6 workers, 1 split, 5 leaves, depth 2" in final_text
    assert "reducer (splits)" in final_text and "workers · depth 2" in final_text
    assert "split_task" in drill_text and "2.2 · completed · Qdrant" in drill_text
    assert live_contrast and live_contrast[0][0] >= 3, live_contrast
    assert final_contrast and final_contrast[0][0] >= 3, final_contrast
    assert max(live_heights) <= 2.6 * line, live_heights
    assert max(final_heights) <= 2.6 * line, final_heights
