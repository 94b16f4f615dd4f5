"""The console's data flows one way (docs/console.md, "How data flows").

- No module of the console imports the app but the app itself, and the
  console's modules import each other without a circle: screens ask the app
  through the ``Console`` protocol, which the app provides.
- No method of a widget or screen runs off the event loop: the refresh
  thread works on plain data (a copy of the table's rows), the details and
  run log workers get what they read as arguments.
"""

from __future__ import annotations

import ast
import inspect
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.console import console, seed, select_row, settle, wait_for
from support.watching import watch_threads

from jobtui.console.app import JobtuiApp
from jobtui.console.protocol import Console
from jobtui.console.screens.details import DetailsScreen
from jobtui.console.screens.runlog import RunLogScreen
from jobtui.core.model import Status
from jobtui.core.store import open_store

PACKAGE = Path(__file__).resolve().parents[2] / "jobtui" / "console"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def console_imports(path: Path) -> set[str]:
    """The console modules ``path`` imports, anywhere in it (TYPE_CHECKING and
    function-level imports included)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            # "from jobtui.console import formatting": the submodule, when it is one
            names = [
                f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in MODULES else node.module
                for a in node.names
            ]
        else:
            continue
        found |= {n for n in names if n in MODULES and MODULES[n].name != "__init__.py"}
    return found


GRAPH = {name: console_imports(path) for name, path in MODULES.items()}


def test_the_graph_sees_the_imports() -> None:
    """The parse finds what the app and a screen import (else the tests below prove nothing)."""
    assert "jobtui.console.screens.details" in GRAPH["jobtui.console.app"]
    assert "jobtui.console.formatting" in GRAPH["jobtui.console.screens.details"]
    assert "jobtui.console.protocol" in GRAPH["jobtui.console.screens.job_actions"]


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m != "jobtui.console.app"))
def test_only_the_app_imports_itself(module: str) -> None:
    assert "jobtui.console.app" not in GRAPH[module], f"{module} imports the app"


def cycles(graph: dict[str, set[str]]) -> Iterator[list[str]]:
    """Every import circle found by a depth-first walk (each reported once per back edge)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> Iterator[list[str]]:
        state[node] = 1
        path.append(node)
        for target in sorted(graph.get(node, ())):
            if state.get(target) == 1:
                yield [*path[path.index(target) :], target]
            elif target not in state:
                yield from visit(target)
        path.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            yield from visit(node)


def test_no_import_circle_in_the_console() -> None:
    assert list(cycles(GRAPH)) == []


def test_the_cycle_check_can_fail() -> None:
    assert list(cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}})) == [["a", "b", "c", "a"]]


def test_the_app_provides_what_screens_ask_of_it() -> None:
    assert issubclass(JobtuiApp, Console)
    for name, member in inspect.getmembers(Console, inspect.isfunction):
        if not name.startswith("_"):
            ours, theirs = inspect.signature(member), inspect.signature(getattr(JobtuiApp, name))
            assert list(ours.parameters) == list(theirs.parameters), name


# ---------------------------------------------------------------------- threads


async def test_no_widget_or_screen_method_runs_off_the_event_loop(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed(open_store(sqlite_url))
    calls = watch_threads(monkeypatch)
    loop_thread = threading.get_ident()
    async with console(sqlite_url) as (app, pilot, store):
        # ticks of every kind (changed, runners at 5, ids at 10) at refresh 0.2 s
        await wait_for(pilot, lambda: app.plan.tick >= 11)
        store.pause("alpha")  # another process changes a row
        table = app.main_screen.table
        await wait_for(
            pilot,
            lambda: any(
                j.status is Status.PAUSED and j.name == "alpha" for j in table.jobs.values()
            ),
        )
        await select_row(app, pilot, "gamma")
        await pilot.press("enter")
        await settle(app, pilot)
        assert isinstance(app.screen, DetailsScreen)
        await pilot.press("r")  # an action from the details screen
        await settle(app, pilot)
        await pilot.press("escape")
        await pilot.press("l")
        await settle(app, pilot)
        assert isinstance(app.screen, RunLogScreen)
        await pilot.press("escape")
        await settle(app, pilot)
    names = {name for name, _ in calls}
    assert {"JobTable.apply", "DetailsScreen.on_jobs_updated", "RunLogScreen.reload"} <= names
    off_loop = sorted({name for name, thread in calls if thread != loop_thread})
    assert off_loop == []


def test_the_refresh_workers_arguments_describe_cheaply() -> None:
    """@work describes a worker by its arguments' reprs, on the event loop, every tick:
    the table's rows handed to the refresh thread must not repr 10,000 Jobs."""
    from jobtui.console.widgets.job_cells import Shown

    shown = Shown(dict.fromkeys(range(10_000)), "name", False)  # type: ignore[arg-type]
    assert repr(shown) == "Shown(10000 jobs, sort_by='name')"
