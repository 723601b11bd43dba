"""How a package that every process imports shows its public names without loading every module
behind them (PEP 562).

A package face (`viz_app/store/__init__.py`, `viz_app/labels/__init__.py`) lists what callers
import from it as ordinary imports under `if TYPE_CHECKING:`, which readers and type checkers
follow, and ends with `__getattr__, __dir__ = lazy(__name__, __file__)`: a name is then loaded
from its module the first time it is asked for. A pool's worker that needs the rubric (one module
of `labels/`) or the index's rows (one room of `store/pool_index/`) so loads that module, not the
label database's stores and SQLAlchemy with it. The list under TYPE_CHECKING is the one list:
`lazy` reads it from the face's own source.
"""

from __future__ import annotations

import ast
import importlib
import sys
from collections.abc import Callable
from pathlib import Path


def face_names(path: str | Path) -> dict[str, tuple[str, str]]:
    """Each name a face shows -> the module it comes from and its name there, as the face's
    `if TYPE_CHECKING:` block imports them (`import x as y` shows x as y: a face never shows a
    name that is also one of its package's modules, which importing that module would hide)."""
    tree = ast.parse(Path(path).read_text("utf-8"), str(path))
    found: dict[str, tuple[str, str]] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            for statement in node.body:
                if isinstance(statement, ast.ImportFrom) and statement.module:
                    for alias in statement.names:
                        found[alias.asname or alias.name] = (statement.module, alias.name)
    return found


def lazy(package: str, path: str) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """The `__getattr__` and `__dir__` of a face: a name of its TYPE_CHECKING imports is
    imported from its module when first asked for, and kept in the package."""
    where = face_names(path)

    def __getattr__(name: str) -> object:
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, original = where[name]
        value = getattr(importlib.import_module(module), original)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *where})

    return __getattr__, __dir__
