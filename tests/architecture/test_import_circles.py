"""No import circle in jobtui/, deferred imports included.

Read with ``ast`` (nothing is imported): every import statement anywhere in a
module, inside functions too, is an edge; importing ``a.b.c`` also imports the
packages ``a`` and ``a.b`` (their ``__init__`` runs first), except the
importer's own packages, which are already loading. The one exception is an
import under ``if TYPE_CHECKING:``, which never runs (an annotation's name).
A lower floor never imports a higher one, not even later, inside a function
(docs/architecture.md).
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

#: Circles that exist today and who removes them. A circle not listed fails; a listed
#: one that is gone fails too, so that the list only shrinks.
KNOWN: set[frozenset[str]] = set()


def module_names(root: Path) -> dict[str, Path]:
    names = {}
    for path in root.rglob("*.py"):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names[".".join(parts)] = path
    return names


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test) in (
            "TYPE_CHECKING",
            "typing.TYPE_CHECKING",
        ):
            for inner in node.body:
                skipped.update(id(n) for n in ast.walk(inner))
    return skipped


def imports_of(module: str, tree: ast.AST, known: set[str], *, package: bool) -> set[str]:
    """The modules of ``known`` that ``module`` (a package when ``package``) imports."""
    skipped = _type_checking_nodes(tree)
    named: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            named.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                here = module.split(".") if package else module.split(".")[:-1]
                here = here[: len(here) - (node.level - 1)]
                base = ".".join(here + ([base] if base else []))
            named.add(base)
            named.update(f"{base}.{alias.name}" for alias in node.names)
    found: set[str] = set()
    for name in named:
        parts = name.split(".")
        for i in range(1, len(parts) + 1):
            candidate = ".".join(parts[:i])
            # the importer's own packages are loading already: not an edge
            if candidate in known and not (module + ".").startswith(candidate + "."):
                found.add(candidate)
    found.discard(module)
    return found


def circles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected parts of ``graph`` with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                part.add(w)
                if w == v:
                    break
            if len(part) > 1:
                found.append(frozenset(part))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_checker_sees_a_circle_closed_by_a_deferred_import() -> None:
    known = {"p", "p.a", "p.b", "p.c", "p.d", "p.e", "q"}
    graph = {
        "p.a": imports_of("p.a", ast.parse("from p import b\n"), known, package=False),
        "p.b": imports_of(
            "p.b", ast.parse("def f():\n    from p.a import x\n"), known, package=False
        ),
        # a TYPE_CHECKING import is no edge
        "p.c": imports_of("p.c", ast.parse("import p.d\n"), known, package=False),
        "p.d": imports_of(
            "p.d",
            ast.parse("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import p.c\n"),
            known,
            package=False,
        ),
        # a package's __init__ runs before its module: importing p.e reaches p, then p.a
        "p": imports_of("p", ast.parse("from .a import x\n"), known, package=True),
        "p.e": imports_of("p.e", ast.parse("x = 1\n"), known, package=False),
    }
    assert graph["p"] == {"p.a"}
    assert circles(graph) == [frozenset({"p.a", "p.b"})]
    graph["q"] = imports_of("q", ast.parse("import p.e\n"), known, package=False)
    assert graph["q"] == {"p", "p.e"}
    graph["p.a"] = imports_of("p.a", ast.parse("def f():\n    import q\n"), known, package=False)
    assert circles(graph) == [frozenset({"p", "p.a", "q"})]


def test_no_import_circle_in_jobtui() -> None:
    modules = module_names(REPO / "jobtui")
    known = set(modules)
    graph = {
        name: imports_of(
            name, ast.parse(path.read_text(), str(path)), known, package=path.name == "__init__.py"
        )
        for name, path in modules.items()
    }
    found = set(circles(graph))
    assert found - KNOWN == set(), sorted(sorted(c) for c in found - KNOWN)
    assert KNOWN - found == set(), f"gone, take them off KNOWN: {KNOWN - found}"
