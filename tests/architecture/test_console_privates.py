"""The console uses Textual's public API only: no underscored Textual internals.

Textual is pinned exactly, but its private attributes (DataTable's ``_data``,
``_update_dimensions``, render caches, a screen's binding chain ...) change
between releases without notice. An AST walk over jobtui/console flags:

- an import from a private Textual module (``textual._x``, ``textual.widgets._x``);
- ``obj._name`` where jobtui/console never defines ``_name`` itself (so it can
  only be someone else's private, Textual's);
- in a class built on a Textual class, an underscored name it defines or reads
  on ``self`` that one of its Textual base classes defines too (an override or
  a read of Textual's internal state, even when it looks like our own).
"""

from __future__ import annotations

import ast
import importlib
import inspect
import textwrap
from functools import cache
from pathlib import Path

import pytest

CONSOLE = Path(__file__).resolve().parents[2] / "jobtui" / "console"


def private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def module_name(path: Path) -> str:
    parts = path.relative_to(CONSOLE.parent.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def defined_names(tree: ast.AST) -> set[str]:
    """Underscored names a module defines: functions, class attributes, ``self._x = ...``."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for part in ast.walk(target):
                    if isinstance(part, ast.Name):
                        out.add(part.id)
                    elif isinstance(part, ast.Attribute):
                        out.add(part.attr)
    return {name for name in out if private(name)}


@cache
def textual_privates(cls: type) -> frozenset[str]:
    """Underscored names the Textual classes in ``cls``'s MRO define (class attributes,
    methods, and ``self._x`` set in their code)."""
    out: set[str] = set()
    for base in cls.__mro__:
        if not base.__module__.startswith("textual"):
            continue
        out.update(name for name in vars(base) if private(name))
        try:
            source = textwrap.dedent(inspect.getsource(base))
        except (OSError, TypeError):
            continue
        out.update(defined_names(ast.parse(source)))
    return frozenset(out)


def console_files() -> list[Path]:
    return sorted(CONSOLE.rglob("*.py"))


def findings(path: Path, ours: set[str]) -> list[str]:
    return scan(path.read_text(), str(path.relative_to(CONSOLE.parent.parent)), ours)


def scan(source: str, where: str, ours: set[str], module: str | None = "") -> list[str]:
    """What ``source`` (the module ``module``: derived from ``where`` when "", none for
    None) reaches of Textual's internals."""
    tree = ast.parse(source)
    out: list[str] = []
    for node in ast.walk(tree):
        modules = (
            [node.module or ""]
            if isinstance(node, ast.ImportFrom)
            else [alias.name for alias in node.names]
            if isinstance(node, ast.Import)
            else []
        )
        for name in modules:
            if name.startswith("textual") and any(private(part) for part in name.split(".")):
                out.append(f"{where}:{node.lineno}: imports {name}")
        if isinstance(node, ast.Attribute) and private(node.attr) and node.attr not in ours:
            out.append(f"{where}:{node.lineno}: reads .{node.attr}, not jobtui's own")
    if module is None:
        return out
    loaded = importlib.import_module(module or module_name(CONSOLE.parent.parent / where))
    for node in ast.walk(tree):
        if not isinstance(node, ast.ClassDef):
            continue
        cls = getattr(loaded, node.name, None)
        if not isinstance(cls, type):
            continue
        theirs = textual_privates(cls)
        if not theirs:
            continue
        mine = defined_names(node)
        for part in ast.walk(node):
            if (
                isinstance(part, ast.Attribute)
                and isinstance(part.value, ast.Name)
                and part.value.id in ("self", "cls")
                and private(part.attr)
            ):
                mine.add(part.attr)
        for name in sorted(mine & theirs):
            out.append(f"{where}: {node.name} uses {name}, which Textual's classes define")
    return out


def test_the_console_uses_no_private_textual_internals() -> None:
    ours: set[str] = set()
    for path in console_files():
        ours |= defined_names(ast.parse(path.read_text()))
    found = [line for path in console_files() for line in findings(path, ours)]
    assert found == []


@pytest.mark.parametrize(
    "source",
    [
        "from textual._two_way_dict import TwoWayDict\n",
        "import textual.widgets._data_table\n",
        "def f(screen):\n    return screen._modal_binding_chain\n",
    ],
)
def test_the_check_finds_imports_and_foreign_privates(source: str) -> None:
    ours = defined_names(ast.parse(source))
    assert scan(source, "bad.py", ours, module=None)


def test_the_check_finds_a_textual_private_used_on_self() -> None:
    """A JobTable-like DataTable subclass reading its base's internals (the old table)."""
    source = (
        "from textual.widgets import DataTable\n"
        "class Old(DataTable):\n"
        "    def f(self):\n"
        "        self._update_count += 1\n"
        "        return self._data\n"
    )
    found = scan(source, "old.py", defined_names(ast.parse(source)), module="support.private_demo")
    assert any("_data" in line for line in found) and any("_update_count" in line for line in found)
