"""The committed tutorials are what re-recording their outputs writes: ``python
notebooks/record.py --outputs`` on an unchanged tree is a no-op.

Each tutorial is re-executed offline from its cassettes into a temporary folder (the
committed notebook untouched) and compared with the committed one, cell by cell. Ignored,
as nbval ignores them: execution counts, the notebook's and the cells' metadata, and
widget view ids. Unlike nbval, the outputs' own metadata is compared too: swarmkit's
provenance there (the replaying session's config) is what a stale tutorial gets wrong
first, e.g. when an option is added.
"""

from __future__ import annotations

import difflib
import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"

def _record() -> ModuleType:
    spec = importlib.util.spec_from_file_location("record", ROOT / "notebooks" / "record.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


RECORD = _record()


def comparable(notebook: nbformat.NotebookNode) -> list[dict[str, Any]]:
    """The cells as plain data, without what nbval ignores."""
    cells = []
    for cell in json.loads(nbformat.writes(notebook))["cells"]:
        outputs = cell.get("outputs", [])
        for output in outputs:
            output.pop("execution_count", None)
            view = output.get("data", {}).get(WIDGET_VIEW)
            if isinstance(view, dict):
                view.pop("model_id", None)
        cells.append({"cell_type": cell["cell_type"], "source": cell["source"],
                      "outputs": outputs})
    return cells


def first_difference(committed: list[dict[str, Any]], fresh: list[dict[str, Any]]) -> str:
    if len(committed) != len(fresh):
        return f"{len(committed)} cells committed, {len(fresh)} re-recorded"
    for number, (old, new) in enumerate(zip(committed, fresh, strict=True), start=1):
        if old != new:
            lines = difflib.unified_diff(
                json.dumps(old, indent=1, sort_keys=True).splitlines(),
                json.dumps(new, indent=1, sort_keys=True).splitlines(),
                "committed", "re-recorded", n=1, lineterm="")
            return f"cell {number}:\n" + "\n".join(list(lines)[:40])
    return ""


def test_the_difference_of_two_tutorials_names_the_cell_and_ignores_execution_counts() -> None:
    book = nbformat.v4.new_notebook()
    book.cells = [nbformat.v4.new_code_cell("1 + 1"), nbformat.v4.new_code_cell("print(2)")]
    book.cells[0].outputs = [nbformat.v4.new_output(
        "execute_result", {"text/plain": "2"}, execution_count=1)]
    again = nbformat.from_dict(json.loads(nbformat.writes(book)))
    again.cells[0].outputs[0].execution_count = 7
    again.cells[0].metadata["tags"] = ["any"]
    assert first_difference(comparable(book), comparable(again)) == ""
    again.cells[1].outputs = [nbformat.v4.new_output("stream", name="stdout", text="3\n")]
    assert first_difference(comparable(book), comparable(again)).startswith("cell 2:\n")


@pytest.mark.kernel
@pytest.mark.slow
@pytest.mark.parametrize("key", sorted(RECORD.TUTORIALS))
def test_re_recording_a_tutorials_outputs_changes_nothing(key: str, tmp_path: Path) -> None:
    file_name = RECORD.TUTORIALS[key][0]
    fresh = RECORD.refresh_outputs(file_name, into=tmp_path)
    committed = nbformat.read(ROOT / "notebooks" / file_name, as_version=4)
    difference = first_difference(comparable(committed),
                                  comparable(nbformat.read(fresh, as_version=4)))
    assert not difference, (f"notebooks/{file_name} is not what re-recording writes; run "
                            f"python notebooks/record.py --outputs {key}\n{difference}")


def _record_command(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(ROOT / "notebooks" / "record.py"), *args],
                          capture_output=True, text=True, timeout=120, check=False)


def test_record_help_lists_the_options_and_the_tutorials() -> None:
    done = _record_command("--help")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: python notebooks/record.py")
    assert "--outputs" in done.stdout and "  05  05-exploring-prompts.ipynb\n" in done.stdout
    assert done.stderr == ""


def test_record_refuses_an_unknown_tutorial_in_one_line() -> None:
    done = _record_command("--outputs", "08")
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1] == ("python notebooks/record.py: error: no tutorial "
                                            "'08'; choose from 01, 02, 03, 04, 05, 06, 07")
