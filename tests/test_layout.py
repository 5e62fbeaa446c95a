"""The package's layout, kept readable: a short top level, and one name per concept.

A newcomer reading only file names should guess right which one to open. Three rules,
each a list kept here (ARCHITECTURE.md's code map says the same in prose):

- ``swarmkit/`` holds at most ``MAX_TOP_LEVEL`` entries (modules and packages);
- a word that once named two different jobs (``WORDS``) appears only in the names that
  carry its one meaning now; a retired word in none;
- no two modules or packages anywhere in the tree share a name, except a concept that
  each layer has a part of (``ONE_CONCEPT_PER_LAYER``).

And the import paths that moved still import (``swarmkit._imports.MOVED``).
"""

from __future__ import annotations

import importlib
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from swarmkit._imports import MOVED

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "swarmkit"
MAX_TOP_LEVEL = 21
MAX_MODULE_LINES = 400  # one concept per module (ARCHITECTURE.md, "Size")

# word -> (its one meaning, the entries whose names may hold it). An empty tuple: the
# word is retired (it named two jobs: the event folder and the cassette builder, the
# database's write thread and the notebook file writer, ...).
WORDS: dict[str, tuple[str, tuple[str, ...]]] = {
    "recorder": ("retired: the RunRecord builder and the cassette builder", ()),
    "writer": ("retired: the database's write thread and the notebook file", ()),
    "replayed": ("retired: the tools' stand-ins and the notebook's replay cells", ()),
    "record": ("the run as data (RunRecord and its rows)",
               ("record", "record/runrecord", "engine/recordbuilder")),
    "schema": ("a typed worker output's JSON schema (--schema)", ("config/outputschema",)),
    "shape": ("the declared shape of what is read back from disk", ("record/fileshapes",)),
    "swarm": ("the swarm's configuration", ("config/swarmconfig",)),
    "option": ("the option table of a run", ("config/options",)),
    "flag": ("the %%swarm line's flags", ("magics/flags", "config/flagnames")),
    "compar": ("running and showing variants of one task side by side",
               ("comparison", "magics/compare")),
    "variant": ("one option set of a comparison", ("comparison/variants",)),
    "batch": ("batch mode (--batch): the Batch API",
              ("engine/batchservice", "engine/batchfanout", "provider/batchclient")),
    "call": ("one model call",
             ("record/modelcall", "engine/modelcaller", "engine/budgetedcalls",
              "provider/sharedcalls", "store/callstore", "store/packedcalls")),
    "replay": ("serving a run from its cassette, with no network",
               ("store/replay", "store/replayconfig", "export/replaycells")),
    "cassette": ("a run's calls as versioned JSON, for replay",
                 ("store/cassette", "store/cassettebuilder")),
    "display": ("what the user sees", ("display",)),
    "history": ("the SQLite run history",
                ("store/history", "display/history", "magics/history")),
    "export": ("a run as a notebook that replays offline",
               ("export", "export/exporter", "comparison/export", "magics/export")),
}

# A concept every layer has a part of, under the same name in each.
ONE_CONCEPT_PER_LAYER: dict[str, str] = {
    "__init__": "a package",
    "__main__": "python -m",
    "history": "the run history: kept (store), shown (display), its %swarm subcommands (magics)",
    "export": "a notebook that replays: writing one (export), for a comparison "
              "(comparison), %swarm export (magics)",
    "tools": "tools for workers (tools), --tools and %swarm mcp (magics)",
    "result": "what a front end leaves the user: a Run (api), a Comparison (comparison)",
    "cellsource": "the code of a replay cell: a run's %%swarm line (export), a "
                  "comparison's compare_sync call (comparison)",
    "engine": "the engine package, and its Engine",
}


def entries(folder: Path) -> list[str]:
    """A folder's modules and packages by name (``x.py`` and ``x.pyi`` are one)."""
    names = set()
    for path in folder.iterdir():
        if path.name == "__pycache__":
            continue
        names.add(path.stem if path.is_file() else path.name)
    return sorted(names)


def tree_names() -> list[str]:
    """Every module and package below ``swarmkit/``, as a path without ``.py``."""
    found = []
    for path in sorted(PACKAGE.rglob("*")):
        if "__pycache__" in path.parts or path == PACKAGE:
            continue
        if path.is_dir() or path.suffix == ".py":
            found.append(path.relative_to(PACKAGE).with_suffix("").as_posix())
    return found


def test_the_top_level_is_short() -> None:
    top = entries(PACKAGE)
    assert len(top) <= MAX_TOP_LEVEL, (
        f"swarmkit/ has {len(top)} entries (at most {MAX_TOP_LEVEL}): {', '.join(top)}; "
        "put a module into the package of its concept")


def test_no_module_is_over_the_size_limit() -> None:
    sizes = {path.relative_to(ROOT).as_posix(): len(path.read_text(encoding="utf-8").splitlines())
             for path in PACKAGE.rglob("*.py")}
    over = {name: lines for name, lines in sizes.items() if lines > MAX_MODULE_LINES}
    assert not over, (f"modules over {MAX_MODULE_LINES} lines (split them by concept): "
                      + ", ".join(f"{name} {lines}" for name, lines in sorted(over.items())))


def test_the_top_level_holds_only_packages_and_modules() -> None:
    for name in entries(PACKAGE):
        path = PACKAGE / name
        assert (path.with_suffix(".py")).is_file() or (path / "__init__.py").is_file(), (
            f"swarmkit/{name} is neither a module nor a package; package data goes in the "
            "package that reads it")


def strays(word: str, names: list[str]) -> list[str]:
    """The names holding ``word`` that ``WORDS`` does not give it to."""
    allowed = WORDS[word][1]
    return [name for name in names if word in name.rsplit("/", 1)[-1] and name not in allowed]


def repeated(names: list[str]) -> dict[str, list[str]]:
    """Module names used more than once in the tree, other than one concept per layer."""
    by_name: dict[str, list[str]] = defaultdict(list)
    for name in names:
        by_name[name.rsplit("/", 1)[-1]].append(name)
    return {leaf: paths for leaf, paths in by_name.items()
            if len(paths) > 1 and leaf not in ONE_CONCEPT_PER_LAYER}


def package_names() -> list[str]:
    # swarmkit.testing is the public test kit: its modules are named for the tests.
    return [name for name in tree_names() if not name.startswith("testing")]


@pytest.mark.parametrize("word", sorted(WORDS))
def test_a_word_keeps_one_meaning(word: str) -> None:
    meaning, allowed = WORDS[word]
    found = strays(word, package_names())
    assert not found, (
        f"{', '.join(found)}: {word!r} means {meaning!r}"
        + ("; rename it to say its job" if allowed else ", a word no name uses now; rename it"))


def test_no_two_modules_share_a_name_unless_they_are_one_concept() -> None:
    found = repeated(package_names())
    assert not found, "names used for more than one module: " + "; ".join(
        f"{name}: {', '.join(paths)}" for name, paths in sorted(found.items()))


def test_the_name_rules_catch_what_the_layout_used_to_have() -> None:
    # The names of the layout before this one, each rule failing on its own case.
    before = ["engine/recorder", "store/recorder", "store/writer", "export/writer",
              "config/swarm", "engine/swarm", "schema", "outputschema", "tools/replayed",
              "export/replayed", "history", "store/history"]
    assert strays("recorder", before) == ["engine/recorder", "store/recorder"]
    assert strays("writer", before) == ["store/writer", "export/writer"]
    assert strays("swarm", before) == ["config/swarm", "engine/swarm"]
    assert strays("schema", before) == ["schema", "outputschema"]
    assert strays("replayed", before) == ["tools/replayed", "export/replayed"]
    assert set(repeated(before)) == {"recorder", "writer", "swarm", "replayed"}


@pytest.mark.parametrize("old", sorted(MOVED))
def test_a_moved_import_path_still_imports_the_same_names(old: str) -> None:
    new = MOVED[old]
    assert not (ROOT / (old.replace(".", "/") + ".py")).exists(), f"{old} is a file again"
    moved, target = importlib.import_module(old), importlib.import_module(new)
    assert moved.__all__ == target.__all__
    for name in target.__all__:
        assert getattr(moved, name) is getattr(target, name), f"{old}.{name}"


def test_from_an_old_path_import_works_in_a_fresh_process() -> None:
    # An exported notebook of an earlier swarmkit: imports with no warning printed.
    code = ("from swarmkit.variants import Variant\n"
            "from swarmkit.runrecord import RunRecord\n"
            "import swarmkit.engine.swarm as old\n"
            "import swarmkit\n"
            "assert RunRecord is swarmkit.RunRecord and old.Engine.__name__ == 'Engine'\n"
            "print(Variant.__module__)")
    done = subprocess.run([sys.executable, "-W", "error", "-c", code], capture_output=True,
                          text=True, cwd=ROOT, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "swarmkit.comparison.variants"
    assert done.stderr == ""
