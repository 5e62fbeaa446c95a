"""How swarmkit's names are imported: on first use, and under the paths they had.

Two seams, both the import system's own:

- ``lazy_exports`` gives a package its PEP 562 ``__getattr__`` and ``__dir__``: the names
  it imports under ``if TYPE_CHECKING:`` (the one list, read by type checkers as imports)
  are loaded from their module the first time they are asked for. ``swarmkit`` and
  ``swarmkit.magics`` use it, so ``import swarmkit`` and ``%load_ext swarmkit`` import
  none of the run's machinery (openai, the engine, the store, ipywidgets); the first
  ``%%swarm`` cell or ``swarmkit.run`` call does.
- ``MovedPathFinder`` keeps the import paths of modules that moved when the package was
  laid out by concept (``record/``, ``compare/``, ``api/``, ``cli/``, and renamed modules
  inside the others). Each old path still imports, as an alias whose names are the new
  module's: a notebook exported by an earlier swarmkit (``from swarmkit.variants import
  Variant``) or a user's ``from swarmkit.runrecord import RunRecord`` keeps working and
  prints nothing (an exported notebook is checked output for output). ``MOVED`` is the
  whole list; tests/test_layout.py imports every entry and compares it with its target.
"""

from __future__ import annotations

import ast
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Final

__all__ = ["MOVED", "MovedPathFinder", "lazy_exports"]

MOVED: Final[dict[str, str]] = {
    "swarmkit.batchapi": "swarmkit.engine.batchservice",
    "swarmkit.budget": "swarmkit.engine.budget",
    "swarmkit.calls": "swarmkit.record.modelcall",
    "swarmkit.comparing": "swarmkit.comparison.runner",
    "swarmkit.config.swarm": "swarmkit.config.swarmconfig",
    "swarmkit.display.compared": "swarmkit.comparison.view",
    "swarmkit.engine.batched": "swarmkit.engine.batchfanout",
    "swarmkit.engine.budgeted": "swarmkit.engine.budgetedcalls",
    "swarmkit.engine.recorder": "swarmkit.engine.recordbuilder",
    "swarmkit.engine.swarm": "swarmkit.engine.engine",
    "swarmkit.engine.typed": "swarmkit.engine.typedworker",
    "swarmkit.events": "swarmkit.record.events",
    "swarmkit.export.comparison": "swarmkit.comparison.export",
    "swarmkit.export.replaycell": "swarmkit.export.cellsource",
    "swarmkit.export.replayed": "swarmkit.export.replaycells",
    "swarmkit.export.writer": "swarmkit.export.notebookfile",
    "swarmkit.jsontext": "swarmkit.record.jsontext",
    "swarmkit.magics.display": "swarmkit.magics.output",
    "swarmkit.magics.options": "swarmkit.magics.flags",
    "swarmkit.modelcaller": "swarmkit.engine.modelcaller",
    "swarmkit.outputschema": "swarmkit.config.outputschema",
    "swarmkit.pricing": "swarmkit.engine.prices",
    "swarmkit.provider.batch": "swarmkit.provider.batchclient",
    "swarmkit.provider.call": "swarmkit.provider.openaiprovider",
    "swarmkit.provider.shared": "swarmkit.provider.sharedcalls",
    "swarmkit.records": "swarmkit.record.rows",
    "swarmkit.result": "swarmkit.api.result",
    "swarmkit.runrecord": "swarmkit.record.runrecord",
    "swarmkit.schema": "swarmkit.record.fileshapes",
    "swarmkit.store.recorder": "swarmkit.store.cassettebuilder",
    "swarmkit.store.writer": "swarmkit.store.writethread",
    "swarmkit.tasks": "swarmkit.config.tasks",
    "swarmkit.template": "swarmkit.config.template",
    "swarmkit.terminal": "swarmkit.cli.terminal",
    "swarmkit.tools.replayed": "swarmkit.tools.standins",
    "swarmkit.urls": "swarmkit.config.urls",
    "swarmkit.usage": "swarmkit.record.usage",
    "swarmkit.variants": "swarmkit.comparison.variants",
}


class _AliasLoader(importlib.abc.Loader):
    """Makes the old path a module of its own whose names are the new module's.

    Its own object, not the new module under a second key: the import system stamps
    ``__spec__`` on whatever the loader returns, and the real module keeps its own."""

    def __init__(self, target: str) -> None:
        self.target = target

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        return types.ModuleType(spec.name)

    def exec_module(self, module: types.ModuleType) -> None:
        target = importlib.import_module(self.target)
        module.__doc__ = f"Moved to ``{self.target}``; this path is an alias of it."
        module.__all__ = list(getattr(target, "__all__", ()))

        def __getattr__(name: str) -> object:
            return getattr(target, name)

        module.__dict__["__getattr__"] = __getattr__
        module.__dict__["__dir__"] = lambda: sorted(set(dir(target)))


class MovedPathFinder(importlib.abc.MetaPathFinder):
    """Finds an old import path (``MOVED``) that no file answers any more."""

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: types.ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        moved_to = MOVED.get(fullname)
        if moved_to is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(moved_to))

    @classmethod
    def install(cls) -> None:
        """Once per process; last on ``sys.meta_path``, so a real module always wins."""
        if not any(isinstance(finder, cls) for finder in sys.meta_path):
            sys.meta_path.append(cls())



def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def lazy_exports(package: str, source: str) -> tuple[Callable[[str], object],
                                                     Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package`` (its ``__name__``), whose file is
    ``source`` (its ``__file__``): each name imported under ``if TYPE_CHECKING:`` there
    is imported from its module on first access, then kept in the package's namespace.

    A name asked for that the block does not hold is an ``AttributeError``, as for any
    module; an import error in the named module surfaces as it is, at first use."""
    tree = ast.parse(Path(source).read_text(encoding="utf-8"), source)
    where: dict[str, tuple[str, str]] = {}
    for node in tree.body:
        if not (isinstance(node, ast.If) and _is_type_checking(node.test)):
            continue
        for statement in node.body:
            if isinstance(statement, ast.ImportFrom):
                module = importlib.util.resolve_name(
                    "." * statement.level + (statement.module or ""), package)
                for alias in statement.names:
                    where[alias.asname or alias.name] = (module, alias.name)

    def __getattr__(name: str) -> object:
        found = where.get(name)
        if found is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(found[0]), found[1])
        sys.modules[package].__dict__[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*sys.modules[package].__dict__, *where})

    return __getattr__, __dir__
