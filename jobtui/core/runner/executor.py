"""Executing what a job runs, on the run's own connection.

``call`` runs ``CALL `schema`.`proc`(%s, ...)`` with bound arguments and drains
every result set; ``sql`` runs the one statement (draining its rows, so a
SELECT really executes to the end); ``action`` calls the registered Python
callable with an ``ActionContext``. The caller owns the transaction: it
commits after a success and rolls back after a failure or an abort. For an
action, ``Backend.check_action_granted`` first checks that an admin
allowed it to the owner (a refusal fails the run).

On MySQL/MariaDB a ``call`` or ``sql`` job runs only as its owner's DEFINER
procedure (``jobtui.core.backends.mysql.routines``), which the runner verified for the batch
beforehand and passes as ``routine``: ``CALL `db`.`jobtui_w_…`(%s, …)``, the
job's arguments bound. So the database applies the owner's rights, never the
runner's.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from sqlalchemy.engine import Connection

from jobtui.core import actions, owner_code
from jobtui.core.errors import RunAborted
from jobtui.core.model import Job

if TYPE_CHECKING:
    from jobtui.core.backends import Backend


def dbapi_connection(conn: Connection) -> Any:
    """The driver's own connection (PyMySQL or sqlite3) under a SQLAlchemy one."""
    return conn.connection.dbapi_connection


def execute(
    conn: Connection,
    job: Job,
    abort_event: threading.Event,
    *,
    backend: Backend,
    routine: owner_code.Verdict | None = None,
    schema_name: str = "",
    sql_owners: str = "admin",
) -> None:
    """Run ``job.what`` on ``conn`` inside a transaction the caller finishes; a call/sql
    job's statement through ``backend`` (``Backend.run_statement``).

    ``routine``: on MySQL/MariaDB, the verified routine of a ``call``/``sql``
    job in ``schema_name`` (``backends/mysql/routines.verify``); without one that passed, the
    run is refused (``owner_code.RoutineRefused``). ``sql_owners`` is accepted
    for compatibility and has no effect: every job runs with its owner's rights.
    """
    del sql_owners
    what = job.what
    if what.kind == "action":
        backend.check_action_granted(conn, job)  # the admins' allow-list
        fn = actions.resolve(what.target)
        ctx = actions.ActionContext(
            job=job, connection=conn, args=tuple(what.args), abort_event=abort_event
        )
        try:
            fn(ctx)
        except actions.ActionAborted as exc:
            raise RunAborted(str(exc) or "aborted") from exc
        return
    backend.run_statement(conn, what, routine=routine, schema_name=schema_name)


def commit(conn: Connection) -> None:
    if conn.in_transaction():
        conn.commit()
    else:
        raw = dbapi_connection(conn)
        raw.commit()


def rollback(conn: Connection, backend: Backend) -> None:
    if conn.in_transaction():
        conn.rollback()
    else:
        backend.rollback_driver(dbapi_connection(conn))
