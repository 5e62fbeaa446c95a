"""The architecture, enforced: imports go one way, everywhere in the repository.

``lint-imports`` checks the contracts in pyproject.toml (the layers, and who may import
``openai`` and ``swarmkit.testing``). The cycle check below reads every import statement
itself, those under ``if TYPE_CHECKING:`` and inside functions included, of every Python
file in the repository: the ``swarmkit`` and ``tests`` packages (a module is its dotted
path from the root: ``tests.support.kernel``) and the folders of scripts (``notebooks/``,
``benchmarks/``, ``.ci/``), where each script runs with its own folder first on
``sys.path``, so a bare ``import common`` is the sibling ``common.py`` (a script is named
by its path: ``benchmarks/common``). A function-local import is for a heavy or optional
dependency, never a way around a cycle; inside swarmkit, a function-local import of
swarmkit's own modules is counted, and each one has to give its reason here.

Only import statements are read: a file loaded by its path (tests/test_tutorials.py loads
notebooks/record.py) or a module named in a string (``importlib.import_module``, the lazy
re-exports of ``swarmkit._imports``, whose list is the ``if TYPE_CHECKING:`` block read
here) is not an edge.
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

from swarmkit._imports import MOVED

ROOT = Path(__file__).resolve().parent.parent
# Packages: a module is its dotted path from the root, which is on sys.path (pytest's
# pythonpath, or the scripts' own sys.path line). `tests` is a namespace package.
PACKAGES = ("swarmkit", "tests")
# Folders of scripts, each run with its folder first on sys.path; only the files directly
# in it. A script importing a package module resolves it as a package module would.
SCRIPT_FOLDERS = ("notebooks", "benchmarks", ".ci", "binder")


def test_the_import_contracts_hold() -> None:
    pytest.importorskip("importlinter", reason="lint-imports comes with the dev extra")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    # The function behind the `lint-imports` console script, run on this checkout.
    done = subprocess.run(
        [sys.executable, "-c", "from importlinter.cli import lint_imports_command as main; main()",
         "--no-cache", "--no-logo"],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r"Contracts: [1-9]\d* kept, 0 broken\.", done.stdout), done.stdout


@dataclass(frozen=True)
class Source:
    """One Python file of the repository, as the import graph names it."""

    name: str  # "swarmkit.display.tables", "tests.support.kernel", "benchmarks/common"
    path: Path
    is_package: bool  # an __init__.py: its relative imports start at itself
    folder: str | None  # a script's folder: its siblings come first on its sys.path


@dataclass(frozen=True)
class Import:
    """One import statement and the repository's modules it may load."""

    source: Source
    line: int
    local: bool  # inside a function body (a method's too), so run when that is called
    targets: frozenset[str]


def sources(root: Path = ROOT) -> dict[str, Source]:
    """Every Python file under the packages and script folders of ``root``, by name."""
    found: dict[str, Source] = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            is_package = parts[-1] == "__init__"
            name = ".".join(parts[:-1] if is_package else parts)
            found[name] = Source(name, path, is_package, None)
    for folder in SCRIPT_FOLDERS:
        for path in sorted((root / folder).glob("*.py")):
            name = f"{folder}/{path.stem}"
            found[name] = Source(name, path, False, folder)
    return found


def imported(node: ast.Import | ast.ImportFrom, module: str, is_package: bool) -> Iterator[str]:
    """The dotted names an import statement in ``module`` may load (not yet resolved)."""
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
        return
    base = node.module or ""
    if node.level:
        parts = module.split(".")
        parts = parts[: len(parts) - node.level + (1 if is_package else 0)]
        base = ".".join([*parts, base] if base else parts)
    yield base
    yield from (f"{base}.{alias.name}" for alias in node.names)


def resolved(name: str, source: Source, known: Mapping[str, Source]) -> str | None:
    """The repository module a dotted name loads when ``source`` imports it, if any.

    In a script, a sibling file shadows everything of that first name (``import common``,
    ``from record import x``); otherwise a package module, or the module an old path of
    swarmkit's moved to (``swarmkit._imports.MOVED``)."""
    if source.folder is not None:
        sibling = f"{source.folder}/{name.partition('.')[0]}"
        if sibling in known:
            return sibling
    name = MOVED.get(name, name)
    return name if name in known else None


def statements(tree: ast.AST, local: bool = False
               ) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
    """Every import statement in ``tree``, and whether it is inside a function."""
    for child in ast.iter_child_nodes(tree):
        if isinstance(child, ast.Import | ast.ImportFrom):
            yield child, local
        yield from statements(
            child, local or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef))


def imports(root: Path = ROOT) -> Iterator[Import]:
    """Every import statement of the repository, with the modules of it each one loads."""
    known = sources(root)
    for source in known.values():
        tree = ast.parse(source.path.read_text(encoding="utf-8"), str(source.path))
        for node, local in statements(tree):
            if source.folder is not None and isinstance(node, ast.ImportFrom) and node.level:
                continue  # a script is no package: a relative import fails when it runs
            names = imported(node, source.name, source.is_package)
            # `from pkg import name`: the submodule pkg.name if there is one, else pkg.
            targets = {resolved(name, source, known) for name in names} - {None, source.name}
            yield Import(source, node.lineno, local, frozenset(t for t in targets if t))


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """module -> the repository's modules it imports, wherever the statement is."""
    graph: dict[str, set[str]] = {name: set() for name in sources(root)}
    for found in imports(root):
        graph[found.source.name] |= found.targets
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph[node]):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component: list[str] = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_graph_sees_type_checking_and_local_imports() -> None:
    graph = import_graph()
    # Under `if TYPE_CHECKING:` (the session's Run) and at the top of a package module.
    assert "swarmkit.api.result" in graph["swarmkit.magics.session"]
    assert "swarmkit.tools.registry" in graph["swarmkit.tools"]
    # Under `if TYPE_CHECKING:` in a lazy package: the names it loads on first use.
    assert "swarmkit.magics.extension" in graph["swarmkit"]
    # A cycle the check must catch: the sample closes a loop through a local import.
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_the_graph_sees_the_tests_and_the_scripts() -> None:
    graph = import_graph()
    # tests: a package whose modules import swarmkit and each other by dotted name.
    assert "tests.support.notebooks" in graph["notebooks/conftest"]
    assert "swarmkit.magics.liveswitch" in graph["notebooks/conftest"]
    # Scripts: a bare name is the sibling file, and the packages are there too.
    assert {"benchmarks/common", "benchmarks/compare"} <= graph["benchmarks/run"]
    assert "tests.support.kernel" in graph["benchmarks/kernel"]
    assert {"notebooks/recording_models", "notebooks/record_prompts"} <= graph["notebooks/record"]
    assert ".ci/newest_python" in graph


def test_the_graph_resolves_a_script_folder_and_catches_a_cycle_of_two_scripts(
        tmp_path: Path) -> None:
    files = {
        "swarmkit/__init__.py": "",
        "swarmkit/core.py": "from . import __version__\n",
        "tests/support/__init__.py": "",
        "tests/support/kernel.py": "import swarmkit.core\n",
        # run -> common at the top; common -> run inside a function: a cycle all the same.
        "benchmarks/run.py": "import common\nfrom tests.support.kernel import x\n",
        "benchmarks/common.py": "def later() -> None:\n    from run import main\n",
        # A sibling shadows a package of the same name; another folder's script is unseen.
        "notebooks/swarmkit.py": "",
        "notebooks/record.py": "import common\nimport swarmkit.core\nfrom . import x\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    graph = import_graph(tmp_path)
    assert graph == {
        "swarmkit": set(), "swarmkit.core": {"swarmkit"},
        "tests.support": set(), "tests.support.kernel": {"swarmkit.core"},
        "benchmarks/run": {"benchmarks/common", "tests.support.kernel"},
        "benchmarks/common": {"benchmarks/run"},
        "notebooks/swarmkit": set(), "notebooks/record": {"notebooks/swarmkit"},
    }
    assert cycles(graph) == [["benchmarks/common", "benchmarks/run"]]


def test_the_graph_covers_every_python_file_of_the_repository() -> None:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs a git checkout to list the repository's files")
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z", "--", "*.py"],
        capture_output=True, text=True, cwd=ROOT, check=True, timeout=60,
    ).stdout.split("\0")
    files = {ROOT / name for name in listed if name and (ROOT / name).is_file()}
    seen = {source.path for source in sources().values()}
    assert files <= seen, "Python files outside PACKAGES and SCRIPT_FOLDERS:\n" + "\n".join(
        sorted(str(path.relative_to(ROOT)) for path in files - seen))


def test_no_module_in_the_repository_imports_itself_back() -> None:
    found = cycles(import_graph())
    assert not found, "modules that import each other in a loop:\n" + "\n".join(
        ", ".join(component) for component in found)


# swarmkit's own modules imported inside a function, each with the reason it has to be
# there: (importing module, imported module) -> why. Empty: every one is at the top.
LOCAL_IMPORTS_OF_SWARMKIT: dict[tuple[str, str], str] = {}


def test_swarmkit_imports_its_own_modules_at_the_top() -> None:
    found: dict[tuple[str, str], list[str]] = {}
    for statement in imports():
        if not statement.local or statement.source.name.split(".")[0] != "swarmkit":
            continue
        where = statement.source.path.relative_to(ROOT)
        for target in sorted(statement.targets):
            if target.split(".")[0] == "swarmkit":
                found.setdefault((statement.source.name, target), []).append(
                    f"{where}:{statement.line}: {target}")
    new = [line for key, lines in sorted(found.items())
           if key not in LOCAL_IMPORTS_OF_SWARMKIT for line in lines]
    assert not new, ("swarmkit modules imported inside a function (import them at the top, "
                     "or give the reason in LOCAL_IMPORTS_OF_SWARMKIT):\n" + "\n".join(new))
    stale = sorted(set(LOCAL_IMPORTS_OF_SWARMKIT) - set(found))
    assert not stale, f"LOCAL_IMPORTS_OF_SWARMKIT lists imports that are gone: {stale}"


# Where swarmkit imports a module by name at run time (importlib.import_module): the
# seams that load on first use, each with why. A new one is a local import by another
# name and fails the test below until it is listed here.
IMPORTS_BY_NAME: dict[str, str] = {
    "swarmkit/_imports.py": "lazy_exports and the moved paths' aliases: the one lazy seam",
    "swarmkit/cli/launch.py": "the command's module, so a Ctrl-C while it loads exits 130",
    "swarmkit/cli/runargs.py": "--tools MODULE:NAME: the user's own module",
    "swarmkit/magics/commands.py": "a %swarm subcommand's module, loaded when it is first used",
}


def test_modules_imported_by_name_are_the_listed_seams() -> None:
    found = set()
    for source in sources().values():
        if source.name.split(".")[0] != "swarmkit" or source.name.startswith("swarmkit.testing"):
            continue
        path = source.path
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Call) and (
                    (isinstance(node.func, ast.Attribute) and node.func.attr == "import_module")
                    or (isinstance(node.func, ast.Name)
                        and node.func.id in ("import_module", "__import__"))):
                found.add(path.relative_to(ROOT).as_posix())
    assert found == set(IMPORTS_BY_NAME), (
        f"imports by name outside the listed seams: {sorted(found - set(IMPORTS_BY_NAME))}; "
        f"listed but gone: {sorted(set(IMPORTS_BY_NAME) - found)}")


# The swarmkit modules that import ipywidgets (inside their classes, so that `import
# swarmkit` stays light): the live views and the plan's review widget, nothing else.
IPYWIDGETS_IMPORTERS = {"swarmkit.display.widget", "swarmkit.display.reviewwidget"}


def test_only_the_widget_modules_import_ipywidgets() -> None:
    found = set()
    for source in sources().values():
        if source.name.split(".")[0] != "swarmkit":
            continue
        tree = ast.parse(source.path.read_text(encoding="utf-8"), str(source.path))
        for node, _local in statements(tree):
            names = ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""])
            if any(name.split(".")[0] == "ipywidgets" for name in names):
                found.add(source.name)
    assert found == IPYWIDGETS_IMPORTERS, sorted(found ^ IPYWIDGETS_IMPORTERS)
