"""Python actions: callables the deployer registers under a name.

A job row names an action; it never holds an import path. Actions come from
the ``jobtui.actions`` entry-point group of installed packages, or from
``register()`` in the process that runs the runners. An action is called as
``fn(ctx)`` with an ``ActionContext``; raising an exception fails the run.

An action is privileged code: it runs as the worker's OS user on the
runner's connection. On MySQL/MariaDB an admin decides which accounts may use
which actions (``jobtui_action_grant``: fnmatch patterns per account, written
by ``jobtui grant ACCOUNT --actions PATTERN``); the runner refuses an action
job whose owner no pattern allows (``check_granted`` in backends/mysql/grants.py).
This module keeps what the patterns are and how they match. SQLite has no
accounts: every registered action is allowed there. docs/privileges.md.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from importlib.metadata import entry_points
from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Connection

from jobtui.core import schema
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


# ---------------------------------------------------------------------- who may use which

# An action name's characters (model.ACTION_NAME_RE), / (alert commands' paths:
# ``alert:/usr/local/bin/page``, jobtui.core.alerts) plus fnmatch's * ? [ ] !: no quote
# or backslash, so a pattern is safe inside the printed statements' string literals.
PATTERN_RE = re.compile(r"[A-Za-z0-9_.:/\-*?\[\]!]{1,128}")
PATTERN_ACCEPTED = (
    "an fnmatch pattern of 1-128 characters from A-Z a-z 0-9 _ . : / - and * ? [ ] ! "
    "(e.g. reports.* or reports.daily; alert:/usr/local/bin/page for an alert command)"
)


def check_patterns(values: Iterable[str]) -> list[str]:
    """Validated patterns, comma-separated values split, duplicates dropped (exit 2 if bad)."""
    patterns: list[str] = []
    for value in values:
        for part in str(value).split(","):
            pattern = part.strip()
            if not PATTERN_RE.fullmatch(pattern):
                raise InvalidInput(f"invalid action pattern {pattern!r}: {PATTERN_ACCEPTED}")
            if pattern not in patterns:
                patterns.append(pattern)
    if not patterns:
        raise InvalidInput(f"no action pattern given: {PATTERN_ACCEPTED}")
    return patterns


def granted_patterns(conn: Connection, account: str) -> list[str]:
    """The patterns jobtui_action_grant holds for ``account`` (``user@host``)."""
    t = schema.action_grant
    rows = conn.execute(select(t.c.pattern).where(t.c.account == account)).scalars()
    return [str(p) for p in rows]


def is_granted(patterns: Iterable[str], name: str) -> bool:
    return any(fnmatchcase(name, p) for p in patterns)
