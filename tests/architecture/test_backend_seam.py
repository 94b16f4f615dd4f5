"""The database is decided once: no code outside jobtui/core/backends/ branches on it.

Read with ``ast`` (nothing is imported): a comparison with a dialect's or a backend's
name, an ``is_sqlite`` or ``.mysql`` switch, or an ``isinstance`` check against a
driver's connection class outside the backends means a dialect difference leaked
out of its seam (docs/architecture.md, "The backend seam").
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BACKENDS = REPO / "jobtui" / "core" / "backends"
SOURCES = sorted(
    p for p in (REPO / "jobtui").rglob("*.py") if BACKENDS not in p.parents and p.parent != BACKENDS
)


def leaks(tree: ast.AST) -> list[str]:
    found = []
    for node in ast.walk(tree):
        text = ast.unparse(node) if isinstance(node, ast.expr) else ""
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            for side in sides:
                if isinstance(side, ast.Attribute) and side.attr == "name":
                    owner = ast.unparse(side.value)
                    if owner.endswith(("dialect", "backend")):
                        found.append(f"line {node.lineno}: {text}")
        elif (
            (isinstance(node, ast.Attribute) and node.attr in ("is_sqlite", "mysql"))
            or (isinstance(node, ast.Name) and node.id == "is_sqlite")
            or (
                isinstance(node, ast.Call)
                and ast.unparse(node.func) == "isinstance"
                and len(node.args) == 2
                and ast.unparse(node.args[1]).endswith(("sqlite3.Connection", "Connection"))
                and "sqlite3" in ast.unparse(node.args[1]) + ast.unparse(node.args[0])
            )
        ):
            found.append(f"line {node.lineno}: {text}")
    return found


def test_the_checker_sees_each_kind_of_leak() -> None:
    code = (
        "if engine.dialect.name == 'sqlite': pass\n"
        "if store.backend.name != 'mysql': pass\n"
        "if store.is_sqlite: pass\n"
        "if self.mysql: pass\n"
        "if isinstance(raw, sqlite3.Connection): pass\n"
        "if store.backend.has_accounts: pass\n"  # a capability: allowed
    )
    assert len(leaks(ast.parse(code))) == 5


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(REPO)))
def test_no_database_branch_outside_the_backends(path: Path) -> None:
    assert not leaks(ast.parse(path.read_text(), str(path))), path


# ---------------------------------------------------------------- each database's package

#: Modules outside jobtui/core/backends/ that still import a database's package, and why:
#: each leaves this list when it moves into backends/mysql/ or asks the Backend instead.
STILL_REACHING_IN: set[str] = set()

DATABASE_PACKAGES = ("jobtui.core.backends.mysql", "jobtui.core.backends.sqlite")


def imported_modules(tree: ast.AST) -> list[tuple[int, str]]:
    """Every module an import statement anywhere in ``tree`` names (in functions too):
    ``import a.b`` gives a.b; ``from a import b`` gives a and a.b (b may be a module)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.append((node.lineno, node.module))
            found += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names]
    return found


def reaches_in(tree: ast.AST) -> list[str]:
    """One entry per import statement that names a database's package or a module in it."""
    lines = {
        line
        for line, name in imported_modules(tree)
        if any(name == p or name.startswith(p + ".") for p in DATABASE_PACKAGES)
    }
    return [f"line {line}" for line in sorted(lines)]


def test_the_import_checker_sees_each_way_in() -> None:
    code = (
        "import jobtui.core.backends.mysql.batch\n"
        "from jobtui.core.backends.sqlite.engine import sqlite_engine\n"
        "from jobtui.core.backends import mysql\n"
        "def later():\n"
        "    from jobtui.core.backends.mysql.sqlapi import calls\n"
        "from jobtui.core.backends import Backend\n"  # the contract: allowed
        "from jobtui.core.backends.registry import backend_for\n"  # the registry: allowed
    )
    assert len(reaches_in(ast.parse(code))) == 4


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(REPO)))
def test_only_the_backends_import_a_database_package(path: Path) -> None:
    found = reaches_in(ast.parse(path.read_text(), str(path)))
    if str(path.relative_to(REPO)) in STILL_REACHING_IN:
        assert found, f"{path} no longer imports a database package: take it off the list"
    else:
        assert not found, (path, found)


# ---------------------------------------------------------------- capabilities, not has_accounts

#: Modules outside jobtui/core/backends/ that still read ``has_accounts``: each leaves this
#: list when it asks an optional part or a capability named for its meaning instead.
STILL_READING_HAS_ACCOUNTS: set[str] = set()


def reads_has_accounts(tree: ast.AST) -> list[str]:
    """One entry per place that reads ``has_accounts``: as an attribute, or by its name
    (``getattr``)."""
    return [
        f"line {node.lineno}: {ast.unparse(node)}"
        for node in ast.walk(tree)
        if (isinstance(node, ast.Attribute) and node.attr == "has_accounts")
        or (isinstance(node, ast.Constant) and node.value == "has_accounts")
    ]


def test_the_has_accounts_checker_sees_each_read() -> None:
    code = (
        "if store.backend.has_accounts: pass\n"
        "mine = ctx.backend.has_accounts and owner != me\n"
        "flag = getattr(backend, 'has_accounts')\n"
        "if backend.job_routines.present: pass\n"  # an optional part asked: allowed
        "if backend.action_allow_list: pass\n"  # a capability named for its meaning: allowed
    )
    assert len(reads_has_accounts(ast.parse(code))) == 3


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(REPO)))
def test_callers_ask_the_backend_not_has_accounts(path: Path) -> None:
    """An optional part (``job_routines``, ``sql_interface``, ``grants``) or a capability named for
    what it means (``action_allow_list``) is asked instead (docs/architecture.md, "The
    backend seam")."""
    found = reads_has_accounts(ast.parse(path.read_text(), str(path)))
    if str(path.relative_to(REPO)) in STILL_READING_HAS_ACCOUNTS:
        assert found, f"{path} no longer reads has_accounts: take it off the list"
    else:
        assert not found, (path, found)
