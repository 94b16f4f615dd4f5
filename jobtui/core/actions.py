"""Python actions: callables the deployer registers under a name.

A job row names an action; it never holds an import path. Actions come from
the ``jobtui.actions`` entry-point group of installed packages, or from
``register()`` in the process that runs the runners. An action is called as
``fn(ctx)`` with an ``ActionContext``; raising an exception fails the run.

An action is privileged code: it runs as the worker's OS user on the
runner's connection. On MySQL/MariaDB an admin decides which accounts may use
which actions (``jobtui_action_grant``: fnmatch patterns per account, written
by ``jobtui grant ACCOUNT --actions PATTERN``); the runner refuses an action
job whose owner no pattern allows (``check_granted``). SQLite has no
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
from sqlalchemy.exc import DBAPIError

from jobtui.core import schema
from jobtui.core.dberrors import NO_SUCH_TABLE, PERMISSION_ERRORS, error_code
from jobtui.core.errors import InvalidInput
from jobtui.core.privileges import PermissionRefused, parse_account, quote_account

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
# Access errors ("may not read") and "no such table" (a schema older than the allow-list).
_UNREADABLE = {*PERMISSION_ERRORS, NO_SUCH_TABLE}


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


def grant_account(account: str) -> str:
    """``user@host`` as the owner column holds it (CURRENT_USER()), from any accepted form."""
    user, host = parse_account(account)
    text_ = f"{user}@{host}"
    width = schema.action_grant.c.account.type.length or 190  # type: ignore[attr-defined]
    if len(text_) > width:
        raise InvalidInput(
            f"invalid account {account!r} for an action grant: user@host is at most {width} "
            "characters"
        )
    return text_


def action_grant_statements(
    account: str,
    database: str,
    *,
    grant: Iterable[str] = (),
    revoke: Iterable[str] = (),
) -> list[str]:
    """The statements that allow (``grant``) or take back (``revoke``) action patterns.

    One row per (account, pattern) in ``database``'s jobtui_action_grant; the
    account is stored as ``user@host``, exactly as a job's owner column holds it.
    """
    from jobtui.core.model import quote_identifier

    owner = grant_account(account)
    grant = check_patterns(grant) if grant else []
    revoke = check_patterns(revoke) if revoke else []
    both = [p for p in grant if p in revoke]
    if both:
        raise InvalidInput(
            f"action pattern {both[0]!r} is both granted and revoked: give it to one of "
            "--actions and --revoke-actions"
        )
    table = f"{quote_identifier(database)}.{quote_identifier(schema.action_grant.name)}"
    return [
        *(
            f"INSERT INTO {table} (`account`, `pattern`) VALUES ('{owner}', '{p}') "
            "ON DUPLICATE KEY UPDATE `account` = `account`"
            for p in grant
        ),
        *(f"DELETE FROM {table} WHERE `account` = '{owner}' AND `pattern` = '{p}'" for p in revoke),
    ]


def granted_patterns(conn: Connection, account: str) -> list[str]:
    """The patterns jobtui_action_grant holds for ``account`` (``user@host``)."""
    t = schema.action_grant
    rows = conn.execute(select(t.c.pattern).where(t.c.account == account)).scalars()
    return [str(p) for p in rows]


def is_granted(patterns: Iterable[str], name: str) -> bool:
    return any(fnmatchcase(name, p) for p in patterns)


def _not_granted(account: str, name: str) -> str:
    try:
        who = quote_account(*parse_account(account))
    except InvalidInput:  # an owner no grant could name: nothing to suggest for it
        who = "ACCOUNT"
    return (
        f"the job's owner {account!r} may not use action {name!r}: no pattern in "
        f"{schema.action_grant.name} allows it (an admin allows it with `jobtui grant "
        f"{who} --actions PATTERN --apply`, docs/privileges.md)"
    )


def check_granted(conn: Connection, job: Any) -> None:
    """Before a run (MySQL/MariaDB, ``Backend.check_action_granted``): PermissionRefused
    unless a pattern allows the job's owner.

    The runner's guarantee: every owner, every run, whatever submit checked.
    An allow-list the runner cannot read refuses too.
    """
    try:
        patterns = granted_patterns(conn, job.owner)
    except DBAPIError as exc:
        if error_code(exc) in _UNREADABLE:
            raise PermissionRefused(
                f"the runner cannot read {schema.action_grant.name}, so it runs no action: its "
                "account needs SELECT on that table (`jobtui grant ACCOUNT --runner`; an "
                "older schema: an admin runs `jobtui init`)"
            ) from None
        raise
    if not is_granted(patterns, job.what.target):
        raise PermissionRefused(_not_granted(job.owner, job.what.target))


def refuse_ungranted(conn: Connection, account: str, name: str) -> None:
    """At submit/change: InvalidInput when the account may read the allow-list and no
    pattern allows ``name``. An operator may not read it: the runner then decides.
    MySQL/MariaDB (``Backend.refuse_ungranted``): SQLite allows every registered action."""
    try:
        patterns = granted_patterns(conn, account)
    except DBAPIError as exc:
        if error_code(exc) in _UNREADABLE:
            return
        raise
    if not is_granted(patterns, name):
        raise InvalidInput(_not_granted(account, name))
