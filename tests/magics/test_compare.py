"""``%%swarm --compare`` in a real IPython shell against the loopback FakeServer: variants
side by side, shared calls made once, a dry run per variant, the refusals, an interrupt."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output
from nbclient import NotebookClient

from swarmkit.comparison.result import Comparison
from swarmkit.magics import SwarmMagics
from swarmkit.magics.compare import ComparisonHandle
from swarmkit.magics.dryrun import CompareDryRun
from swarmkit.store import History
from swarmkit.testing import FakeReply, FakeRequest, FakeServer, wait_until
from tests.support.fakekey import KEY_ENV, swarm_line
from tests.support.interrupts import sigint_when
from tests.support.kernel import KernelSession, kernel_env

NAMES = ("_swarm", "c", "d", "brief", "thorough")
TIMEOUT = 60
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
GRID = "--compare worker_model=gpt-4.1-mini,gpt-4.1 --compare reducer_prompt=@brief,@thorough"


@pytest.fixture(autouse=True)
def _names(shell: InteractiveShell) -> Iterator[None]:
    shell.user_ns["brief"] = "Answer in one line."
    shell.user_ns["thorough"] = "Answer with a table."
    yield
    for name in NAMES:
        shell.user_ns.pop(name, None)


def slow_second_half(request: FakeRequest) -> FakeReply | None:
    """Workers 1 and 2 answer at once, 3 and 4 take half a minute (an interrupt ends them)."""
    if slow(request):
        return FakeReply(content=f"{request.model} is slow", latency=30.0)
    return by_model(request)


def slow(request: Any) -> bool:
    return request.step in ("worker-3", "worker-4")


def by_model(request: FakeRequest) -> FakeReply | None:
    """Workers answer in their model's words, so the reducers' inputs differ by model."""
    if request.role == "worker":
        return FakeReply(content=f"{request.model} says: {request.last_user_message[-30:]}")
    return None


def test_a_2x2_grid_makes_each_shared_call_once_and_shows_one_side_by_side_view(
    shell: InteractiveShell, magics: SwarmMagics, server: FakeServer, tmp_path: Path
) -> None:
    with capture_output() as captured:
        # The notice is printed before the first request reaches the server.
        noticed: list[bool] = []

        def handler(request: FakeRequest) -> FakeReply | None:
            noticed.append(captured.stdout.startswith("comparing 4 variants: "))
            return by_model(request)

        server.handler = handler
        shell.run_cell_magic("swarm", swarm_line(server, f"{GRID} --out c"),
                             "Compare three databases for {{a team}}")
    counts = server.counts_by_step()
    # One planner for the four variants, one set of workers per worker model, a reducer
    # per variant (each sees other outputs or another prompt).
    assert counts["planner"] == 1
    assert sum(n for step, n in counts.items() if step.startswith("worker")) == 2 * 4
    assert counts["reducer"] == 4
    assert noticed and all(noticed)

    comparison = shell.user_ns["_swarm"]
    assert isinstance(comparison, Comparison) and shell.user_ns["c"] is comparison
    assert magics.last_run is comparison
    assert len(comparison.runs) == 4
    assert [run.status for run in comparison.runs] == ["completed"] * 4
    assert comparison.task == "Compare three databases for {a team}"
    assert comparison.labels == (
        "worker_model=gpt-4.1-mini · reducer_prompt=@brief",
        "worker_model=gpt-4.1-mini · reducer_prompt=@thorough",
        "worker_model=gpt-4.1 · reducer_prompt=@brief",
        "worker_model=gpt-4.1 · reducer_prompt=@thorough",
    )
    assert comparison.runs[1].config["reducer_prompt"] == "Answer with a table."
    assert comparison.shared_calls == 3 + 2 * 4  # three planners, two sets of workers

    # The cell's one output is the side-by-side view; stdout holds only the notice.
    (output,) = captured.outputs
    assert output.data["text/plain"] == comparison.view().text()
    assert output.data["text/html"] == comparison.view().html()
    for label in comparison.labels:
        assert label in output.data["text/plain"]
    assert captured.stdout == ("comparing 4 variants: " + "; ".join(comparison.labels) + "\n")

    # Every variant's Run is in the history, as a single run's is.
    path = os.environ["SWARMKIT_HISTORY"]

    def saved() -> bool:
        with History(path) as history:
            return {s.run_id for s in history.recent(10)} >= {r.run_id for r in comparison.runs}

    assert wait_until(saved)
    # The cache is on in a notebook, as for a single run: the same cell again is free.
    before = server.count()
    with capture_output():
        shell.run_cell_magic("swarm", swarm_line(server, GRID),
                             "Compare three databases for {{a team}}")
    assert server.count() == before
    again = shell.user_ns["_swarm"]
    assert [r.status for r in again.runs] == ["completed"] * 4
    assert all(c.source == "cache" for r in again.runs for c in r.calls)
    assert magics.last_run is again
    # %swarm last shows the comparison again.
    with capture_output() as shown:
        shell.run_line_magic("swarm", "last")
    assert shown.outputs[0].data["text/plain"] == again.view().text()
    # %swarm export writes the whole comparison: a notebook and one cassette per variant,
    # whose replay export checks against this view (tests/export/test_export_comparison).
    notebook = tmp_path / "compared.ipynb"
    with capture_output():
        result = shell.run_line_magic("swarm", f"export {notebook}")
    cassettes = [tmp_path / f"compared.{n}.swarm.json" for n in range(1, 5)]
    assert result.notebook == notebook and all(path.is_file() for path in cassettes)
    assert "compare_sync" in notebook.read_text(encoding="utf-8")
    with pytest.raises(UsageError, match=r"not exporting: .*compared\.ipynb and .*"
                       r"compared\.4\.swarm\.json already exist; add --force"):
        shell.run_line_magic("swarm", f"export {notebook}")


def test_the_notice_names_four_variants_then_counts_the_rest(
    shell: InteractiveShell, magics: SwarmMagics, server: FakeServer
) -> None:
    with capture_output() as captured:
        shell.run_cell_magic("swarm", swarm_line(
            server, "--quiet --workers 2 --compare temperature=0,0.2,0.4,0.6,0.8"),
            "Name two seas")
    assert captured.stdout.startswith("comparing 5 variants: temperature=0; ")
    assert captured.stdout.endswith("; temperature=0.6; and 1 more\n")
    assert [run.config["worker"]["temperature"] for run in shell.user_ns["_swarm"].runs] == [
        0.0, 0.2, 0.4, 0.6, 0.8]


def test_dry_run_compare_asks_each_distinct_planner_once_and_prices_every_variant(
    shell: InteractiveShell, magics: SwarmMagics, server: FakeServer
) -> None:
    with capture_output() as captured:
        shell.run_cell_magic("swarm", swarm_line(server, f"--dry-run {GRID} --out d"),
                             "Name four capitals")
    assert server.counts_by_step() == {"planner": 1}  # the same planner: asked once
    estimate = shell.user_ns["d"]
    assert isinstance(estimate, CompareDryRun) and shell.user_ns["_swarm"] is estimate
    assert len(estimate.estimates) == 4 and all(len(e.plan) == 4 for e in estimate.estimates)
    # The planner was paid by one variant; the others were served its answer.
    spent = [e.roles[0].cost_usd for e in estimate.estimates]
    assert spent[0] > 0 and spent[1:] == [0, 0, 0]
    # gpt-4.1's workers cost more than gpt-4.1-mini's, so the bound follows the model.
    bounds = [e.cost_usd for e in estimate.estimates]
    assert bounds[2] > bounds[0] and estimate.cost_usd == sum(bounds)
    (output,) = captured.outputs
    text = output.data["text/plain"]
    assert text.startswith("dry run: 4 variants, 16 workers planned")
    for label in estimate.labels:
        assert label in text
    assert "\ntotal " in text and "at most" in text
    assert captured.stdout.startswith("comparing 4 variants: ")

    server.clear()
    with capture_output():
        shell.run_cell_magic("swarm", swarm_line(
            server, "--dry-run --compare planner_model=gpt-4.1-mini,gpt-4.1"), "Name two ports")
    assert server.counts_by_step() == {"planner": 2}  # two planners: each asked


@pytest.mark.parametrize(("extra", "says"), [
    ("--compare model=a,b --replay x.swarm.json", "--compare cannot --replay"),
    ("--compare model=a,b --record x.swarm.json", "--compare cannot --record"),
    ("--compare modle=a,b", "--compare modle: no such option"),
    ("--compare model", "write KEY=VALUE,VALUE"),
    ("--compare system=@brief,@missing", "'missing' names no variable in the notebook"),
    ("--compare model=a,a", "a value is listed twice"),
    ("--compare model=a", "needs at least two variants"),
    ("--compare model=a,b --compare model=c,d", "--compare model is given twice"),
    ("--compare model=a,b,c --max-variants 2", "over the cap of 2; drop some values or "
     "raise it with --max-variants 3"),
    ("--compare model=a,b,c,d,e,f,g,h,i", "9 variants, over the cap of 8"),
    ("--compare budget=1,2", "one budget covers every variant"),
    ("--compare workers=0,2", "--compare variant workers=0:"),
    ("--max-variants 3", "--max-variants caps --compare"),
    ("--compare model=a,b --max-variants x", "--max-variants must be a whole number"),
])
def test_refusals_are_one_line_usage_errors_before_any_request(
    shell: InteractiveShell, magics: SwarmMagics, server: FakeServer, extra: str, says: str
) -> None:
    with capture_output() as captured, pytest.raises(UsageError) as caught:
        shell.run_cell_magic("swarm", swarm_line(server, extra), "Name two rivers")
    message = str(caught.value)
    assert says in message and len(message.splitlines()) == 1, message
    assert message.startswith("%%swarm: ")
    assert server.count() == 0 and captured.stdout == "" and not captured.outputs
    assert "_swarm" not in shell.user_ns


def test_a_variant_whose_model_has_no_key_is_refused_before_any_request(
    shell: InteractiveShell, magics: SwarmMagics, server: FakeServer, fake_key: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("NO_SUCH_KEY_VAR", raising=False)
    # No --base-url: a hosted model, so each variant's key is checked before any call.
    line = (f"--model gpt-4.1-mini --api-key-env {KEY_ENV} "
            f"--compare api_key_env={KEY_ENV},NO_SUCH_KEY_VAR")
    with pytest.raises(UsageError, match=r"^%%swarm: --compare variant "
                       r"api_key_env=NO_SUCH_KEY_VAR: no API key for the planner model"):
        shell.run_cell_magic("swarm", line, "Name a sea")
    assert server.count() == 0


def test_record_set_for_the_session_is_refused_too(
    shell: InteractiveShell, magics: SwarmMagics, server: FakeServer
) -> None:
    magics.session_options = {"record": "session.swarm.json"}
    with pytest.raises(UsageError, match=r"record set \(by %swarm config\); unset it"):
        shell.run_cell_magic("swarm", swarm_line(server, "--compare model=a,b"), "Name a lake")
    assert server.count() == 0


def test_help_lists_the_compare_flags(shell: InteractiveShell, magics: SwarmMagics) -> None:
    with capture_output() as captured:
        shell.run_cell_magic("swarm", "--help", "ignored")
    assert "--compare KEY=V1,V2" in captured.stdout and "--max-variants N" in captured.stdout
    assert "once per variant" in captured.stdout


def test_interrupt_cancels_every_variant_and_keeps_what_finished(
    shell: InteractiveShell, magics: SwarmMagics, server: FakeServer
) -> None:
    """A real SIGINT lands in the waiting cell, as a kernel interrupt does."""

    server.handler = slow_second_half
    # Once every variant is slow: sub-tasks 1 and 2 finished in both variants
    # (--concurrency 2 started 3 and 4).
    trigger = sigint_when(lambda: sum(1 for r in server.requests if slow(r)) >= 4)
    with capture_output() as captured:
        shell.run_cell_magic("swarm", swarm_line(
            server, "--concurrency 2 --compare worker_model=gpt-4.1-mini,gpt-4.1"),
            "Name four islands")
    trigger.join()
    comparison = shell.user_ns["_swarm"]
    assert isinstance(comparison, Comparison) and len(comparison.runs) == 2
    for run in comparison.runs:
        assert run.status == "cancelled" and run.error == "run interrupted"
        assert [w.status for w in run.workers][:2] == ["completed", "completed"]
        assert {w.status for w in run.workers[2:]} == {"cancelled"}
    assert captured.stdout.endswith(
        "comparison cancelled (interrupt): 2 variants, workers finished 2 of 4 · 2 of 4; "
        "partial comparison in _swarm\n")
    (output,) = captured.outputs
    assert output.data["text/plain"] == comparison.view().text()
    assert wait_until(lambda: server.in_flight == 0)


def test_background_compare_returns_a_handle_and_lands_in_swarm(
    shell: InteractiveShell, magics: SwarmMagics, server: FakeServer
) -> None:
    server.latency = 0.05
    with capture_output() as captured:
        handle = shell.run_cell_magic("swarm", swarm_line(
            server, "--background --out c --compare reducer_prompt=@brief,@thorough"),
            "Name three deserts")
    assert isinstance(handle, ComparisonHandle) and shell.user_ns["_swarm_handle"] is handle
    assert "; the Comparison goes to _swarm>" in repr(handle)
    comparison = handle.result()
    assert isinstance(comparison, Comparison)
    assert wait_until(lambda: shell.user_ns.get("c") is comparison)
    assert shell.user_ns["_swarm"] is comparison
    assert repr(handle) == "<ComparisonHandle 2 variants completed; the Comparison is in _swarm>"
    assert server.counts_by_step()["planner"] == 1 and server.count("reducer") == 2
    # the placeholder, whose display is updated with the view when the comparison ends
    assert len(captured.outputs) == 1


def test_repeat_runs_each_variant_k_times_and_the_same_cell_again_is_cached(
    shell: InteractiveShell, magics: SwarmMagics, server: FakeServer
) -> None:
    line = swarm_line(server, "--repeat 2 --compare reducer_prompt=@brief,@thorough")
    with capture_output() as captured:
        shell.run_cell_magic("swarm", line, "Name three deserts")
    comparison = shell.user_ns["_swarm"]
    assert isinstance(comparison, Comparison)
    assert [len(group) for group in comparison.repeats] == [2, 2]
    # Two repeats, two seeds: the planner asked twice, once per repeat, shared by the
    # two variants; a reducer per variant and repeat.
    assert server.count("planner") == 2 and server.count("reducer") == 4
    (output,) = captured.outputs
    assert output.data["text/plain"] == comparison.view().text()
    before = server.count()
    with capture_output():
        shell.run_cell_magic("swarm", line, "Name three deserts")
    assert server.count() == before  # the notebook's cache serves every repeat
    again = shell.user_ns["_swarm"]
    assert all(c.source == "cache" for group in again.repeats for r in group for c in r.calls)


@pytest.mark.parametrize(("command", "status", "answer"), [
    ("cancel", "cancelled", False), ("stop --merge", "stopped", True)])
def test_cancel_and_stop_reach_every_variant_of_a_background_compare(
    shell: InteractiveShell, magics: SwarmMagics, server: FakeServer, command: str,
    status: str, answer: bool,
) -> None:
    server.handler = slow_second_half
    with capture_output():
        handle = shell.run_cell_magic("swarm", swarm_line(
            server, "--background --concurrency 2 --compare worker_model=gpt-4.1-mini,gpt-4.1"),
            "Name four forests")
    assert wait_until(lambda: sum(1 for r in server.requests if slow(r)) >= 4)
    assert handle.state == "running"
    with capture_output() as captured:
        shell.run_line_magic("swarm", command)
    comparison = shell.user_ns["_swarm"]
    assert isinstance(comparison, Comparison) and handle.done()
    for run in comparison.runs:
        assert run.status == status and (run.answer is not None) == answer
        assert [w.status for w in run.workers][:2] == ["completed", "completed"]
    kept = "the comparison" if answer else "partial comparison"
    assert captured.stdout == (f"comparison {status}: 2 variants, workers finished 2 of 4 · "
                               f"2 of 4; {kept} in _swarm\n")
    assert wait_until(lambda: server.in_flight == 0)


# -- in a real kernel: the live lanes, replaced by the view ------------------------------------


@pytest.mark.kernel
def test_in_a_notebook_the_cell_keeps_the_view_and_no_widget(tmp_path: Path) -> None:
    with FakeServer(by_model, lifetime=120, latency=0.05) as server:
        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_code_cell("%load_ext swarmkit"),
                    nbformat.v4.new_code_cell(
                        f"%%swarm --model gpt-4.1-mini --base-url {server.base_url} "
                        "--compare worker_model=gpt-4.1-mini,gpt-4.1\nName three rivers")]
        client = NotebookClient(nb, timeout=TIMEOUT, kernel_name="python3",
                                resources={"metadata": {"path": str(tmp_path)}})
        client.execute(env=kernel_env(tmp_path / "history.db", OPENAI_API_KEY="sk-test"))
    notice, view = nb.cells[1].outputs  # the lanes' display was replaced in place
    assert notice["output_type"] == "stream"
    assert notice["text"].startswith("comparing 2 variants: worker_model=gpt-4.1-mini; ")
    assert view["output_type"] == "display_data" and WIDGET_VIEW not in view["data"]
    assert "worker_model=gpt-4.1 " in view["data"]["text/plain"]
    assert 'class="swarmkit swarmkit-compare"' in view["data"]["text/html"]


@pytest.mark.kernel
def test_kernel_interrupt_replaces_the_lanes_with_the_partial_comparison(
    tmp_path: Path,
) -> None:
    with FakeServer(slow_second_half, lifetime=120) as server, KernelSession(
            env=kernel_env(tmp_path / "history.db", OPENAI_API_KEY="sk-test"), cwd=tmp_path,
            timeout=TIMEOUT) as kernel:
        reply, printed = kernel.execute("%load_ext swarmkit")
        assert reply["status"] == "ok", printed
        messages: list[dict[str, Any]] = []
        interrupted = threading.Event()

        def interrupt_when_both_are_slow() -> None:
            shown = any(m["msg_type"] == "display_data" for m in messages)
            if (not interrupted.is_set() and shown
                    and sum(1 for r in server.requests if slow(r)) >= 4):
                interrupted.set()
                kernel.interrupt()

        reply, printed = kernel.execute(
            f"%%swarm --model gpt-4.1-mini --base-url {server.base_url} --concurrency 2 "
            "--compare worker_model=gpt-4.1-mini,gpt-4.1\nName four capes",
            on_busy=interrupt_when_both_are_slow, messages=messages)
        assert interrupted.is_set() and reply["status"] == "ok"
        assert printed.endswith(
            "comparison cancelled (interrupt): 2 variants, workers finished 2 of 4 · 2 of 4; "
            "partial comparison in _swarm\n"), printed
        shown = [m for m in messages if m["msg_type"] == "display_data"]
        updated = [m for m in messages if m["msg_type"] == "update_display_data"]
        assert len(shown) == 1 and len(updated) == 1
        assert WIDGET_VIEW in shown[0]["content"]["data"]
        assert (updated[0]["content"]["transient"]["display_id"]
                == shown[0]["content"]["transient"]["display_id"])
        assert WIDGET_VIEW not in updated[0]["content"]["data"]
        assert any(m["msg_type"] == "comm_close" for m in messages)
        reply, printed = kernel.execute(
            "print([(r.status, [w.status for w in r.workers]) for r in _swarm.runs])")
        assert printed.strip() == str([("cancelled", ["completed", "completed", "cancelled",
                                                      "cancelled"])] * 2)
        assert wait_until(lambda: server.in_flight == 0)
