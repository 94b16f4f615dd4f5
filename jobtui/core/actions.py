"""Python actions: callables the deployer registers under a name.

A job row names an action; it never holds an import path. Actions come from
the ``jobtui.actions`` entry-point group of installed packages, or from
``register()`` in the process that runs the runners. An action is called as
``fn(ctx)`` with an ``ActionContext``; raising an exception fails the run.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any

from jobtui.core.errors import InvalidInput

GROUP = "jobtui.actions"


@dataclass
class ActionContext:
    """What an action gets: its job, the run's connection, and a way to notice abort."""

    job: Any  # jobtui.core.model.Job
    connection: Any  # sqlalchemy Connection in the run's transaction
    args: tuple[str, ...] = ()
    abort_event: threading.Event = field(default_factory=threading.Event)

    @property
    def aborted(self) -> bool:
        return self.abort_event.is_set()

    def sleep(self, seconds: float) -> None:
        """Sleep, but wake and raise ``ActionAborted`` as soon as the run is aborted."""
        if self.abort_event.wait(seconds):
            raise ActionAborted("aborted by operator")


class ActionAborted(Exception):
    """Raised inside an action when the operator aborts the run."""


Action = Callable[[ActionContext], Any]

_registered: dict[str, Action] = {}
_lock = threading.Lock()


def register(name: str, fn: Action) -> None:
    """Register ``fn`` under ``name`` for this process (tests, embedding applications)."""
    from jobtui.core.model import ACTION_NAME_RE

    if not ACTION_NAME_RE.fullmatch(name):
        raise InvalidInput(f"invalid action name {name!r}")
    with _lock:
        _registered[name] = fn


def unregister(name: str) -> None:
    with _lock:
        _registered.pop(name, None)


def available() -> dict[str, Action | None]:
    """Every registered action name (entry points are loaded lazily: value None)."""
    names: dict[str, Action | None] = {ep.name: None for ep in entry_points(group=GROUP)}
    with _lock:
        names.update(_registered)
    return names


def resolve(name: str) -> Action:
    """The callable registered as ``name``, or InvalidInput listing what is registered."""
    with _lock:
        if name in _registered:
            return _registered[name]
    for ep in entry_points(group=GROUP):
        if ep.name == name:
            fn = ep.load()
            if not callable(fn):
                raise InvalidInput(f"action {name!r} ({ep.value}) is not callable")
            return fn  # type: ignore[no-any-return,unused-ignore]
    known = ", ".join(sorted(available())) or "none"
    raise InvalidInput(f"unknown action {name!r}: registered actions are {known}")


def check_registered(name: str) -> None:
    if name not in available():
        known = ", ".join(sorted(available())) or "none"
        raise InvalidInput(f"unknown action {name!r}: registered actions are {known}")
