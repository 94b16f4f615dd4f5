"""Which thread calls the console's widgets and screens: every call to their own methods, recorded.

The console's one-way data flow (docs/console.md, "How data flows") says a widget is
called on the event loop only; tests/architecture/test_console_flow.py and the events view's
test check it with this recorder.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable
from typing import Any

import pytest

from jobtui.console.screens.details import DetailsScreen
from jobtui.console.screens.main import MainScreen
from jobtui.console.screens.runlog import RunLogScreen
from jobtui.console.widgets.job_table import JobTable
from jobtui.console.widgets.status_line import StatusLine

WATCHED = (JobTable, MainScreen, DetailsScreen, RunLogScreen, StatusLine)


def watch_threads(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """Record (qualified name, thread id) of every call to the watched classes' own methods."""
    calls: list[tuple[str, int]] = []

    def recorded(name: str, method: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            calls.append((name, threading.get_ident()))
            return method(*args, **kwargs)

        # Textual counts a handler's parameters through __wrapped__ (functools.wraps).
        wrapper.__wrapped__ = method  # type: ignore[attr-defined]
        wrapper.__name__ = method.__name__
        wrapper.__qualname__ = method.__qualname__
        return wrapper

    for cls in WATCHED:
        for name, value in list(vars(cls).items()):
            if (
                inspect.isfunction(value)
                and not inspect.iscoroutinefunction(value)
                and not name.startswith("__")
            ):
                monkeypatch.setattr(cls, name, recorded(value.__qualname__, value))
    return calls
