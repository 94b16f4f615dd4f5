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

REPO = Path(__file__).resolve().parents[1]
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
