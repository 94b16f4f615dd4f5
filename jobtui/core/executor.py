"""Executing what a job runs, on the run's own connection.

``call`` runs ``CALL `schema`.`proc`(%s, ...)`` with bound arguments and drains
every result set; ``sql`` runs the one statement (draining its rows, so a
SELECT really executes to the end); ``action`` calls the registered Python
callable with an ``ActionContext``. The caller owns the transaction: it
commits after a success and rolls back after a failure or an abort. On
MySQL/MariaDB ``jobtui.core.privileges`` first checks that the job's owner may
do what it runs, and for an action ``jobtui.core.actions.check_granted`` that
an admin allowed it to the owner (a refusal fails the run).
"""

from __future__ import annotations

import functools
import sqlite3
import threading
from typing import Any

from sqlalchemy.engine import Connection

from jobtui.core import actions, privileges
from jobtui.core.model import Job, quote_identifier, split_procedure, strip_trailing_semicolon

FETCH_BATCH = 1000


class RunAborted(Exception):
    """The run was stopped on request (operator abort, runner shutdown)."""


def dbapi_connection(conn: Connection) -> Any:
    """The driver's own connection (PyMySQL or sqlite3) under a SQLAlchemy one."""
    return conn.connection.dbapi_connection


@functools.lru_cache(maxsize=4096)
def call_statement(target: str, nargs: int) -> str:
    """``CALL `schema`.`proc`(%s, ...)``: identifiers validated and quoted, args bound."""
    schema_name, proc = split_procedure(target)
    marks = ", ".join(["%s"] * nargs)
    return f"CALL {quote_identifier(schema_name)}.{quote_identifier(proc)}({marks})"


def execute(
    conn: Connection, job: Job, abort_event: threading.Event, *, sql_owners: str = "admin"
) -> None:
    """Run ``job.what`` on ``conn`` inside a transaction the caller finishes.

    ``sql_owners``: whose ``sql`` jobs run on MySQL/MariaDB ("admin": the
    runner's own account or a jobtui_admin; "any": every owner's).
    """
    privileges.check_may_run(conn, job, sql_owners=sql_owners)
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
    cur = raw.cursor()
    try:
        if what.kind == "call":
            cur.execute(call_statement(what.target, len(what.args)), list(what.args))
        else:
            # No parameters: PyMySQL then leaves % signs in the statement alone.
            cur.execute(strip_trailing_semicolon(what.target))
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
