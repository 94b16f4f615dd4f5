"""Executing what a job runs, on the run's own connection.

``call`` runs ``CALL `schema`.`proc`(%s, ...)`` with bound arguments and drains
every result set; ``sql`` runs the one statement (draining its rows, so a
SELECT really executes to the end); ``action`` calls the registered Python
callable with an ``ActionContext``. The caller owns the transaction: it
commits after a success and rolls back after a failure or an abort. For an
action, ``jobtui.core.actions.check_granted`` first checks that an admin
allowed it to the owner (a refusal fails the run).

On MySQL/MariaDB a ``call`` or ``sql`` job runs only as its owner's DEFINER
procedure (``jobtui.core.routines``), which the runner verified for the batch
beforehand and passes as ``routine``: ``CALL `db`.`jobtui_w_…`(%s, …)``, the
job's arguments bound. So the database applies the owner's rights, never the
runner's.
"""

from __future__ import annotations

import sqlite3
import threading
from typing import Any

from sqlalchemy.engine import Connection

from jobtui.core import actions, routines
from jobtui.core.model import Job, strip_trailing_semicolon

FETCH_BATCH = 1000


class RunAborted(Exception):
    """The run was stopped on request (operator abort, runner shutdown)."""


def dbapi_connection(conn: Connection) -> Any:
    """The driver's own connection (PyMySQL or sqlite3) under a SQLAlchemy one."""
    return conn.connection.dbapi_connection


def execute(
    conn: Connection,
    job: Job,
    abort_event: threading.Event,
    *,
    routine: routines.Verdict | None = None,
    schema_name: str = "",
    sql_owners: str = "admin",
) -> None:
    """Run ``job.what`` on ``conn`` inside a transaction the caller finishes.

    ``routine``: on MySQL/MariaDB, the verified routine of a ``call``/``sql``
    job in ``schema_name`` (``routines.verify``); without one that passed, the
    run is refused (``routines.RoutineRefused``). ``sql_owners`` is accepted
    for compatibility and has no effect: every job runs with its owner's rights.
    """
    del sql_owners
    what = job.what
    if what.kind == "action":
        actions.check_granted(conn, job)  # the admins' allow-list (MySQL/MariaDB)
        fn = actions.resolve(what.target)
        ctx = actions.ActionContext(
            job=job, connection=conn, args=tuple(what.args), abort_event=abort_event
        )
        try:
            fn(ctx)
        except actions.ActionAborted as exc:
            raise RunAborted(str(exc) or "aborted") from exc
        return
    raw = dbapi_connection(conn)
    if isinstance(raw, sqlite3.Connection):
        if what.kind != "sql":
            raise RuntimeError(f"{what.kind} jobs need MySQL/MariaDB; on SQLite use sql or action")
        if not raw.in_transaction:
            raw.execute("BEGIN")
        cur = raw.cursor()
        try:
            cur.execute(strip_trailing_semicolon(what.target))
            while cur.fetchmany(FETCH_BATCH):
                pass
        finally:
            cur.close()
        return
    name = routines.check(routine)
    cur = raw.cursor()
    try:
        cur.execute(routines.call_statement(schema_name, name, len(what.args)), list(what.args))
        _drain(cur)
    finally:
        cur.close()


def _drain(cur: Any) -> None:
    """Read every row of every result set (a CALL returns one per SELECT, plus a status)."""
    while True:
        while cur.fetchmany(FETCH_BATCH):
            pass
        if not cur.nextset():
            break


def commit(conn: Connection) -> None:
    if conn.in_transaction():
        conn.commit()
    else:
        raw = dbapi_connection(conn)
        raw.commit()


def rollback(conn: Connection) -> None:
    if conn.in_transaction():
        conn.rollback()
    else:
        raw = dbapi_connection(conn)
        if isinstance(raw, sqlite3.Connection):
            if raw.in_transaction:
                raw.execute("ROLLBACK")
        else:
            raw.rollback()
