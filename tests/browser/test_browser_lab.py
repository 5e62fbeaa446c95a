"""``%%swarm`` in a real JupyterLab 4 with ipywidgets 8, in headless chromium.

What a user sees is checked in the page itself: the text, the computed colours and the
row heights. Tests marked ``display_branch`` pin behaviour delivered by the display
work of issue 15 (failure reasons, dark theme colours, narrow rows, <details> rows); the
rest pins the run lifecycle (one output per cell, ticking clocks, Cancel,
Stop-and-merge, interrupt). Screenshots go to ``SWARMKIT_SCREENSHOTS`` when it is set.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest

from swarmkit.testing import FakeServer, Fault, FaultRule
from tests.browser.lab import UI_TIMEOUT, JupyterLab, NotebookPage, Script, write_notebook

pytestmark = pytest.mark.browser

# Behaviour delivered by the display branch of issue 15; the lead runs it merged.
display_branch = pytest.mark.display_branch

WIDE = {"width": 1280, "height": 900}
NARROW = {"width": 800, "height": 1000}
STATIC = ".swarmkit-run"  # the static bundle's root element
DASHBOARD = ".jp-OutputArea-output .widget-vbox"  # the live dashboard (ipywidgets VBox)


def swarm_cell(server: FakeServer, extra: str, task: str) -> str:
    return (f"%%swarm --model gpt-4.1-mini --base-url {server.base_url} --no-cache {extra}\n"
            f"{task}")


def open_notebook(browser_context: Any, lab: JupyterLab, name: str, cells: list[str],
                  viewport: dict[str, int] = WIDE) -> NotebookPage:
    write_notebook(lab.root / name, cells)
    page = browser_context.new_page()
    page.set_viewport_size(viewport)
    return NotebookPage(page, lab, name).open()


def wait_dashboard(nb: NotebookPage, cell: int = 1) -> Any:
    dashboard = nb.output_area(cell).locator(".widget-vbox").first
    dashboard.wait_for(timeout=UI_TIMEOUT)
    return dashboard


def wait_static(nb: NotebookPage, cell: int = 1) -> Any:
    static = nb.output_area(cell).locator(STATIC).first
    static.wait_for(timeout=UI_TIMEOUT)
    return static


def click_button(nb: NotebookPage, label: str, cell: int = 1) -> None:
    nb.output_area(cell).locator("button", has_text=label).first.click()


# -- one output per cell, and a reopen with a fresh kernel ----------------------------------


def test_a_run_leaves_one_output_that_survives_a_reopen(
    browser_context: Any, light: JupyterLab, server: FakeServer, scripted: Script, shots: Path
) -> None:
    scripted.latency = {"worker-*": 2.0}
    nb = open_notebook(browser_context, light, "reopen.ipynb", [
        "%load_ext swarmkit",
        swarm_cell(server, "--workers 4", "Compare four rivers by length and basin"),
    ])
    nb.run_all()
    wait_dashboard(nb)
    nb.output_area(1).get_by_text("running", exact=False).first.wait_for(timeout=UI_TIMEOUT)
    nb.screenshot(shots / "light-wide-running.png", cell=1)
    wait_static(nb)
    nb.screenshot(shots / "light-wide-final.png", cell=1)
    _assert_one_output(nb)
    nb.save()
    nb.page.close()
    light.shutdown_kernels()

    page = browser_context.new_page()
    page.set_viewport_size(WIDE)
    reopened = NotebookPage(page, light, "reopen.ipynb").open()
    wait_static(reopened)
    text = reopened.page.locator(".jp-Notebook").inner_text()
    assert "Error displaying widget" not in text and "model not found" not in text
    _assert_one_output(reopened)
    reopened.page.close()


def _assert_one_output(nb: NotebookPage) -> None:
    area = nb.output_area(1)
    assert area.locator(".jp-OutputArea-output").count() == 1
    assert area.locator(".widget-vbox").count() == 0  # no dashboard left above the tables
    assert area.locator(STATIC).count() == 1
    assert area.locator(f"{STATIC} svg").count() == 1  # the timeline, once
    assert area.get_by_text("4 workers (4 completed)", exact=False).count() == 1


# -- a live view that looks alive ---------------------------------------------------------


def test_the_header_clock_ticks_during_a_6s_call(
    browser_context: Any, light: JupyterLab, server: FakeServer, scripted: Script
) -> None:
    scripted.plan_tasks = 1
    scripted.latency = {"worker-*": 6.0}
    nb = open_notebook(browser_context, light, "tick.ipynb", [
        "%load_ext swarmkit", swarm_cell(server, "--workers 1", "Describe one comet"),
    ])
    nb.run_all()
    dashboard = wait_dashboard(nb)
    dashboard.get_by_text("s…", exact=False).first.wait_for(timeout=UI_TIMEOUT)
    clocks: list[str] = []
    for _ in range(8):  # no event arrives while the worker's call is in flight
        text = dashboard.inner_text() if dashboard.count() else ""
        clocks += re.findall(r"(\d+\.\d)s…", text)
        time.sleep(0.5)
    assert len(set(clocks)) >= 3, clocks
    wait_static(nb)
    nb.page.close()


# -- Cancel, Stop and merge, interrupt, clicked in the page ---------------------------------


def two_of_four_done(browser_context: Any, lab: JupyterLab, server: FakeServer, scripted: Script,
                     name: str, extra: str) -> NotebookPage:
    """A run of four workers, shown once two have finished and two hang."""
    scripted.latency = {"worker-3": 60.0, "worker-4": 60.0}
    nb = open_notebook(browser_context, lab, name, [
        "%load_ext swarmkit", swarm_cell(server, f"--workers 4 {extra}", "Name four passes"),
    ])
    nb.run_all()
    wait_dashboard(nb).get_by_text("2/4", exact=False).first.wait_for(timeout=UI_TIMEOUT)
    return nb


def test_cancel_clicked_in_the_page_leaves_the_cancelled_tables(
    browser_context: Any, light: JupyterLab, server: FakeServer, scripted: Script
) -> None:
    nb = two_of_four_done(browser_context, light, server, scripted, "cancel.ipynb", "--background")
    click_button(nb, "Cancel")
    static = wait_static(nb)
    assert "cancelled" in static.inner_text()
    assert nb.output_area(1).locator(".widget-vbox").count() == 0
    nb.page.close()


def test_stop_and_merge_clicked_in_the_page_merges_what_finished(
    browser_context: Any, light: JupyterLab, server: FakeServer, scripted: Script, shots: Path
) -> None:
    nb = two_of_four_done(browser_context, light, server, scripted, "merge.ipynb", "--background")
    click_button(nb, "Stop and merge")
    static = wait_static(nb)
    text = static.inner_text()
    assert "stopped" in text and "Final answer merging 2 results" in text
    nb.screenshot(shots / "light-wide-stopped.png", cell=1)
    nb.page.close()


def test_interrupt_replaces_the_frozen_dashboard_with_the_partial_tables(
    browser_context: Any, light: JupyterLab, server: FakeServer, scripted: Script
) -> None:
    nb = two_of_four_done(browser_context, light, server, scripted, "interrupt.ipynb", "")
    nb.interrupt()
    static = wait_static(nb)
    assert "cancelled" in static.inner_text()
    nb.output_area(1).get_by_text("swarm cancelled (interrupt): 2 of 4 workers finished",
                                  exact=False).first.wait_for(timeout=UI_TIMEOUT)
    assert nb.output_area(1).locator(".widget-vbox").count() == 0
    nb.page.close()


# -- the display branch's items, checked in the page ------------------------------------------


@display_branch
def test_a_failed_workers_reason_is_visible_in_the_page(
    browser_context: Any, light: JupyterLab, server: FakeServer, scripted: Script
) -> None:
    server.add_fault(FaultRule(Fault.status(400), step="worker-2"))
    nb = open_notebook(browser_context, light, "failed.ipynb", [
        "%load_ext swarmkit", swarm_cell(server, "--workers 4", "Name four canyons"),
    ])
    nb.run_all()
    static = wait_static(nb)
    text = static.inner_text()
    assert "failed" in text and "400" in text  # the one-line error, not only "provider"
    nb.page.close()


_CONTRAST = """(root) => {
  const rgb = (c) => (c.match(/[\\d.]+/g) || []).map(Number);
  const lum = ([r, g, b]) => { const f = (v) => { v /= 255;
      return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b); };
  const background = (el) => { for (let e = el; e; e = e.parentElement) {
      const c = rgb(getComputedStyle(e).backgroundColor);
      if (c.length >= 3 && (c.length < 4 || c[3] > 0.5)) return c.slice(0, 3); }
    return [255, 255, 255]; };
  const worst = [];
  for (const el of root.querySelectorAll('*')) {
    const own = [...el.childNodes].some(n => n.nodeType === 3 && n.textContent.trim());
    if (!own) continue;
    const style = getComputedStyle(el);
    if (style.visibility === 'hidden' || style.display === 'none') continue;
    const svg = el instanceof SVGElement;
    const fg = rgb(svg && style.fill && style.fill !== 'none' ? style.fill : style.color);
    const bg = background(svg ? el.closest('svg') : el);
    const [a, b] = [lum(fg) + 0.05, lum(bg) + 0.05];
    worst.push([Math.max(a, b) / Math.min(a, b), el.textContent.trim().slice(0, 30)]);
  }
  worst.sort((x, y) => x[0] - y[0]);
  return worst.slice(0, 5);
}"""


@display_branch
def test_dark_theme_text_contrasts_with_its_background(
    browser_context: Any, lab: JupyterLab, server: FakeServer, scripted: Script, shots: Path
) -> None:
    lab.set_theme("JupyterLab Dark")
    scripted.latency = {"worker-*": 2.0}
    try:
        nb = open_notebook(browser_context, lab, "dark.ipynb", [
            "%load_ext swarmkit", swarm_cell(server, "--workers 4", "Name four deltas"),
        ])
        nb.run_all()
        dashboard = wait_dashboard(nb)
        dashboard.get_by_text("running", exact=False).first.wait_for(timeout=UI_TIMEOUT)
        nb.screenshot(shots / "dark-wide-running.png", cell=1)
        live = dashboard.evaluate(_CONTRAST)
        static = wait_static(nb)
        nb.screenshot(shots / "dark-wide-final.png", cell=1)
        final = static.evaluate(_CONTRAST)
        nb.page.close()
    finally:
        lab.set_theme("JupyterLab Light")
    assert live and live[0][0] >= 3, live
    assert final and final[0][0] >= 3, final


@display_branch
def test_rows_stay_one_or_two_lines_at_800px(
    browser_context: Any, light: JupyterLab, server: FakeServer, scripted: Script, shots: Path
) -> None:
    scripted.plan_tasks = 16
    scripted.latency = {"worker-*": 1.5}
    nb = open_notebook(browser_context, light, "narrow.ipynb", [
        "%load_ext swarmkit",
        swarm_cell(server, "--workers 16 --concurrency 4",
                   "Survey sixteen coastal cities: climate risk, transit, housing and jobs"),
    ], viewport=NARROW)
    nb.run_all()
    dashboard = wait_dashboard(nb)
    dashboard.get_by_text("running", exact=False).first.wait_for(timeout=UI_TIMEOUT)
    nb.screenshot(shots / "light-narrow-running.png")  # the window, file browser open
    live_rows = dashboard.locator("tr").evaluate_all("rs => rs.map(r => r.offsetHeight)")
    static = wait_static(nb)
    nb.screenshot(shots / "light-narrow-final.png")
    static_rows = static.locator("table").first.locator("tr").evaluate_all(
        "rs => rs.map(r => r.offsetHeight)")
    line = nb.page.evaluate(
        "() => parseFloat(getComputedStyle(document.querySelector('.jp-Notebook')).lineHeight)"
        " || 20")
    nb.page.close()
    assert max(live_rows) <= 2.6 * line, live_rows
    assert max(static_rows) <= 2.6 * line, static_rows


@display_branch
def test_a_worker_row_expands_to_show_its_output(
    browser_context: Any, light: JupyterLab, server: FakeServer, scripted: Script
) -> None:
    nb = open_notebook(browser_context, light, "details.ipynb", [
        "%load_ext swarmkit", swarm_cell(server, "--workers 4", "Name four fjords"),
    ])
    nb.run_all()
    static = wait_static(nb)
    output = static.get_by_text("Result for:", exact=False).first
    assert not output.is_visible()  # collapsed until asked for
    static.locator("details summary").first.click()
    output.wait_for(timeout=UI_TIMEOUT)
    assert output.is_visible()
    nb.page.close()


# -- variants side by side ------------------------------------------------------------------


def _voiced(request: Any) -> Any:
    """Workers speak in the voice their system prompt ends with; the answer says which
    voice the reducer read, so two worker prompts give two answers."""
    from swarmkit.testing import FakeReply

    if request.role == "worker":
        return FakeReply(content=f"Noted in a {request.messages[0]['content'].split()[-1]} "
                                 "voice.")
    if request.role == "reducer":
        voice = "terse" if "a terse voice" in request.last_user_message else "lavish"
        return FakeReply(content=f"Pick Qdrant: the {voice} reading of three notes.")
    return None


# What a mark's text shows on: its translucent tint over the background behind it.
_MARK_CONTRAST = """(root) => {
  const rgba = (c) => { const v = (c.match(/[\\d.]+/g) || []).map(Number);
    return v.length === 3 ? [...v, 1] : v; };
  const lum = ([r, g, b]) => { const f = (v) => { v /= 255;
      return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b); };
  const page = (el) => { for (let e = el.parentElement; e; e = e.parentElement) {
      const c = rgba(getComputedStyle(e).backgroundColor);
      if (c.length >= 4 && c[3] > 0.5) return c; }
    return [255, 255, 255, 1]; };
  const over = (top, under) => top.slice(0, 3).map((v, i) => v * top[3] + under[i] * (1 - top[3]));
  return [...root.querySelectorAll('ins.sk-ins, del.sk-del')].map((el) => {
    const style = getComputedStyle(el);
    const back = over(rgba(style.backgroundColor), page(el));
    const [a, b] = [lum(over(rgba(style.color), back)) + 0.05, lum(back) + 0.05];
    return [Math.max(a, b) / Math.min(a, b), el.textContent, el.offsetWidth > 0];
  });
}"""


@pytest.mark.parametrize("theme", ["Light", "Dark"])
def test_compared_variants_show_their_differences_in_the_page(
    browser_context: Any, lab: JupyterLab, server: FakeServer, scripted: Script,
    shots: Path, theme: str,
) -> None:
    scripted.plan_tasks, scripted.replies = 3, _voiced
    scripted.latency = {"worker-*": 1.5}  # long enough to see the lanes
    lab.set_theme(f"JupyterLab {theme}")
    cells = [
        "%load_ext swarmkit\n"
        "terse = 'Write in a voice that is terse'\n"
        "lavish = 'Write in a voice that is lavish'",
        swarm_cell(server, "--workers 3 --compare system=@terse,@lavish",
                   "Pick a vector database"),
    ]
    try:
        nb = open_notebook(browser_context, lab, f"compare-{theme.lower()}.ipynb", cells,
                           viewport=NARROW)
        nb.run_all()
        lanes = nb.output_area(1).locator(".sk-lane")
        lanes.first.wait_for(timeout=UI_TIMEOUT)
        lane_count = lanes.count()
        nb.screenshot(shots / f"compare-{theme.lower()}-800-running.png", cell=1)
        view = nb.output_area(1).locator(".swarmkit-compare").first
        view.wait_for(timeout=UI_TIMEOUT)
        nb.screenshot(shots / f"compare-{theme.lower()}-800.png", cell=1)
        text = view.inner_text()
        marks = view.evaluate(_MARK_CONTRAST)
        contrast = view.evaluate(_CONTRAST)
        fits = view.evaluate("(el) => el.scrollWidth <= el.clientWidth + 1")
        nb.page.close()
    finally:
        lab.set_theme("JupyterLab Light")
    assert lane_count == 2  # one live lane per variant while it ran
    assert "2 variants" in text and "same plan for every variant: 3 sub-tasks" in text
    assert "system=@terse (baseline)" in text and "Pick Qdrant: the terse reading" in text
    assert sorted((m[1], m[2]) for m in marks) == [("lavish", True), ("terse", True)], marks
    assert min(m[0] for m in marks) >= 4.5, marks  # the marked words read on their tint
    assert contrast and contrast[0][0] >= 3, contrast
    assert fits  # at 800 px the columns wrap; nothing scrolls sideways


# -- scores inside a comparison (issue 27) --------------------------------------------------

_JUDGE_HELD = 10.0  # s the terse runs' judge takes: the window in which to see a scored lane


def _voiced_and_judged(request: Any) -> Any:
    """``_voiced``, and a judge that gives the lavish answer 9 and the terse one 3. The
    terse runs' judge answers late, so the lavish lanes show their scores while the
    comparison still runs."""
    import json

    from swarmkit.testing import FakeReply

    if request.role == "judge":
        lavish = "the lavish reading" in request.last_user_message
        return FakeReply(content=json.dumps({"score": 9 if lavish else 3, "reason": "graded"}),
                         latency=None if lavish else _JUDGE_HELD)
    return _voiced(request)


# Each row of the scores table as its cells' text, and which rows carry the winner class.
_SCORE_ROWS = """(view) => {
  const block = [...view.querySelectorAll('h4')].find(h => h.textContent === 'scores');
  const table = block && block.parentElement.querySelector('table');
  if (!table) return null;
  const cells = (tr, tag) => [...tr.querySelectorAll(tag)].map(c => c.textContent.trim());
  // A heading row per score (its th), then a row per variant (its tds).
  return {head: cells(table.querySelector('thead tr'), 'th'),
          rows: [...table.querySelectorAll('tbody tr')].map(tr =>
              tr.classList.contains('sk-score-name') ? cells(tr, 'th') : cells(tr, 'td')),
          winners: [...table.querySelectorAll('tbody tr')].map(tr =>
              tr.classList.contains('sk-winner')),
          box: [table.parentElement.scrollWidth, table.parentElement.clientWidth]};
}"""

# Whether the winner mark lies inside what its scrolling box shows, unscrolled.
_MARK_SHOWN = """(mark) => {
  const box = mark.closest('.sk-scroll').getBoundingClientRect();
  const own = mark.getBoundingClientRect();
  return [own.left >= box.left && own.right <= box.right + 1, own.right, box.right];
}"""


@pytest.mark.parametrize("theme", ["Light", "Dark"])
def test_a_scored_comparison_shows_its_scores_and_winner_in_the_page(
    browser_context: Any, lab: JupyterLab, server: FakeServer, scripted: Script,
    shots: Path, theme: str,
) -> None:
    scripted.plan_tasks, scripted.replies = 2, _voiced_and_judged
    scripted.latency = {"worker-*": 1.5}  # long enough to see the lanes
    lab.set_theme(f"JupyterLab {theme}")
    cells = [
        "%load_ext swarmkit\n"
        "import swarmkit\n"
        "terse = 'Write in a voice that is terse'\n"
        "lavish = 'Write in a voice that is lavish'\n"
        "def short(answer):\n"
        "    return len(answer) < 400\n"
        "has_db = swarmkit.Check.contains('Qdrant')",
        swarm_cell(server, "--workers 2 --compare system=@terse,@lavish --check short,has_db "
                           "--judge gpt-4.1-mini --repeat 2", "Pick a vector database"),
    ]
    name = theme.lower()
    try:
        nb = open_notebook(browser_context, lab, f"compare-scores-{name}.ipynb", cells,
                           viewport=NARROW)
        nb.run_all()
        lanes = nb.output_area(1).locator(".sk-lane")
        # A lavish run scored by its judge while the terse runs' judge is still held.
        lanes.locator(".sk-lane-scores", has_text="judge").first.wait_for(timeout=UI_TIMEOUT)
        live = lanes.evaluate_all("ls => ls.map(l => l.innerText)")
        nb.screenshot(shots / f"compare-scores-{name}-800-running.png", cell=1)
        # The lanes' text only: the Stop and merge button's contrast is not this test's.
        live_contrast = sorted(lanes.evaluate_all(f"ls => ls.flatMap(l => ({_CONTRAST})(l))"))
        view = nb.output_area(1).locator(".swarmkit-compare").first
        view.wait_for(timeout=UI_TIMEOUT)
        nb.screenshot(shots / f"compare-scores-{name}-800.png", cell=1)
        text = view.inner_text()
        table = view.evaluate(_SCORE_ROWS)
        # The cell, so _CONTRAST reads the mark itself (it walks the root's descendants).
        mark_contrast = view.locator("tr.sk-winner td:has(.sk-winner-mark)").evaluate(
            _CONTRAST)
        shown = view.locator("tr.sk-winner .sk-winner-mark").evaluate(_MARK_SHOWN)
        repeats = view.locator("table.sk-repeats").evaluate(
            "(t) => [t.parentElement.scrollWidth, t.parentElement.clientWidth]")
        repeats_text = view.locator("table.sk-repeats").inner_text()
        contrast = view.evaluate(_CONTRAST)
        fits = view.evaluate("(el) => el.scrollWidth <= el.clientWidth + 1")
        nb.page.close()
    finally:
        lab.set_theme("JupyterLab Light")
    labels = [lane.splitlines()[0].split(" · ")[:2] for lane in live]
    assert labels == [[f"system=@{voice}", f"repeat {r} of 2"]
                      for voice in ("terse", "lavish") for r in (1, 2)], live
    scored = "scores: short 1.00 · contains('Qdrant') 1.00 · judge 0.90"
    assert any(scored in lane for lane in live[2:]), live
    assert not any("judge" in lane for lane in live[:2]), live  # their judge is held
    assert live_contrast and live_contrast[0][0] >= 3, live_contrast

    assert "2 variants" in text and "\nscores\n" in text
    assert table is not None, text
    assert table["head"] == ["variant", "mean ± spread", "range"]
    assert table["rows"] == [
        ["short · 2 repeats"],
        ["system=@terse", "1.00 ± 0.00", "1.00–1.00"],
        ["system=@lavish", "1.00 ± 0.00", "1.00–1.00"],
        ["contains('Qdrant') · 2 repeats"],
        ["system=@terse", "1.00 ± 0.00", "1.00–1.00"],
        ["system=@lavish", "1.00 ± 0.00", "1.00–1.00"],
        ["judge · 2 repeats"],
        ["system=@terse", "0.30 ± 0.00", "0.30–0.30"],
        ["system=@lavish winner", "0.90 ± 0.00", "0.90–0.90"],
    ], table
    # Ties mark no winner: only the judge's lavish row, not the baseline's, is marked.
    assert table["winners"] == [False] * 8 + [True], table
    assert "winner: the highest mean, marked only when" in text
    # The repeats block: each variant's cost and wall time per run, and its total.
    assert "repeats · 2 per variant" in text and "total cost" in repeats_text
    assert repeats_text.count("±") == 4, repeats_text
    assert mark_contrast and mark_contrast[0][1] == "winner", mark_contrast
    assert mark_contrast[0][0] >= 3, mark_contrast  # the mark reads on the page
    assert contrast and contrast[0][0] >= 3, contrast
    # At 800 px (the file browser open) nothing scrolls sideways, so the winner mark is
    # in sight.
    assert fits
    assert table["box"][0] <= table["box"][1] + 1, f"scores table {table['box']} px"
    assert repeats[0] <= repeats[1] + 1, f"repeats table {repeats} px"  # all its columns
    assert shown[0], f"winner mark ends at {shown[1]:.0f} px, its box at {shown[2]:.0f} px"


# -- the plan's review (issue 31) --------------------------------------------------------------

REVIEW = ".jp-OutputArea-output .widget-vbox"  # the review widget (an ipywidgets VBox)


def _sent_to_workers(server: FakeServer, task: str) -> list[str]:
    """The sub-tasks the workers of ``task`` were sent, in worker order."""
    asked = [r for r in server.requests if r.step.startswith("worker-")
             and f"Overall task: {task}" in r.body["messages"][-1]["content"]]
    return [r.body["messages"][-1]["content"].split("): ", 1)[1]
            for r in sorted(asked, key=lambda r: int(r.step.split("-")[1]))]


@pytest.mark.parametrize("theme", ["Light", "Dark"])
def test_a_review_cell_runs_what_was_typed_and_added_and_not_what_was_unticked(
    browser_context: Any, lab: JupyterLab, server: FakeServer, scripted: Script,
    shots: Path, theme: str,
) -> None:
    scripted.latency = {"worker-*": 3.0}  # long enough to see the dashboard
    name = theme.lower()
    task = f"{theme}: compare four rivers by length, basin and the cities on their banks"
    typed = "The Nile: its length, its basin, and the cities on its banks"
    added = "The Mekong: the dams along it and what they changed downstream"
    lab.set_theme(f"JupyterLab {theme}")
    try:
        nb = open_notebook(browser_context, lab, f"review-{name}.ipynb", [
            "%load_ext swarmkit", swarm_cell(server, "--workers 4 --review", task),
            "print('the kernel is free while the review waits')"])
        nb.run_all()  # the last cell runs too: the review's cell has returned
        nb.wait_text("the kernel is free while the review waits", cell=2)
        review = nb.output_area(1).locator(REVIEW).first
        boxes = review.locator("textarea")
        review.get_by_text("Run 4 workers").wait_for(timeout=UI_TIMEOUT)
        nb.interrupt()  # an interrupt while the review waits spends nothing, ends nothing
        nb.wait_kernel_idle()
        proposed = [boxes.nth(i).input_value() for i in range(boxes.count())]
        boxes.nth(0).fill(typed)
        review.locator(".widget-checkbox input").nth(1).uncheck()
        review.locator("button", has_text="Add a sub-task").click()
        boxes.nth(4).wait_for(timeout=UI_TIMEOUT)
        boxes.nth(4).fill(added)
        run = review.locator("button", has_text="Run 4 workers")
        run.wait_for(timeout=UI_TIMEOUT)  # the count follows the edits: 4 - 1 + 1
        review.get_by_text("forecast for 4 workers", exact=False).wait_for(timeout=UI_TIMEOUT)
        nb.screenshot(shots / f"review-{name}-wide.png", cell=1)
        nb.page.set_viewport_size(NARROW)
        nb.page.wait_for_timeout(800)  # JupyterLab lays the panels out again
        nb.screenshot(shots / f"review-{name}-800.png", cell=1)
        fits = review.evaluate("(el) => el.scrollWidth <= el.clientWidth + 1")
        contrast = sorted(review.locator(".swarmkit").evaluate_all(
            f"els => els.flatMap(el => ({_CONTRAST})(el))"))
        nb.page.set_viewport_size(WIDE)
        assert _sent_to_workers(server, task) == []  # nothing sent before Run
        run.click()
        wait_dashboard(nb).get_by_text("4 running", exact=False).first.wait_for(
            timeout=UI_TIMEOUT)
        nb.screenshot(shots / f"review-{name}-wide-running.png", cell=1)
        static = wait_static(nb)
        nb.screenshot(shots / f"review-{name}-wide-final.png", cell=1)
        nb.page.set_viewport_size(NARROW)
        nb.page.wait_for_timeout(800)
        nb.screenshot(shots / f"review-{name}-800-final.png", cell=1)
        text = static.inner_text()
        area = nb.output_area(1)
        outputs = area.locator(".jp-OutputArea-output").count()
        left = area.locator(".widget-vbox").count()
        nb.page.close()
    finally:
        lab.set_theme("JupyterLab Light")
    assert len(proposed) == 4 and proposed[0] != typed
    assert _sent_to_workers(server, task) == [typed, proposed[2], proposed[3], added]
    assert proposed[1] not in _sent_to_workers(server, task)
    assert "4 workers (4 completed)" in text
    assert "plan reviewed: 4 proposed · 1 edited · 1 dropped · 1 added" in text
    assert outputs == 1 and left == 0  # the tables in the review's place, no widget left
    assert fits  # at 800 px the review wraps; nothing scrolls sideways
    assert contrast and contrast[0][0] >= 3, contrast
