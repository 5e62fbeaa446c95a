"""The architecture, enforced: imports go one way.

``lint-imports`` checks the contracts in pyproject.toml (the layers, and who may import
``openai`` and ``swarmkit.testing``). The cycle check below reads every import statement
itself, those under ``if TYPE_CHECKING:`` and inside functions included: a function-local
import is for a heavy or optional dependency, never a way around a cycle.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "swarmkit"


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


def module_names() -> dict[str, Path]:
    names = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        names[".".join(parts)] = path
    return names


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


def import_graph() -> dict[str, set[str]]:
    """module -> the swarmkit modules it imports, wherever the statement is."""
    names = module_names()
    graph: dict[str, set[str]] = {name: set() for name in names}
    for name, path in names.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            targets = set(imported(node, name, path.name == "__init__.py"))
            # `from pkg import name`: the submodule pkg.name if there is one, else pkg.
            graph[name] |= {t for t in targets if t in names and t != name}
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
            component = []
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


def test_no_swarmkit_module_imports_itself_back() -> None:
    found = cycles(import_graph())
    assert not found, "modules that import each other in a loop:\n" + "\n".join(
        ", ".join(component) for component in found)
