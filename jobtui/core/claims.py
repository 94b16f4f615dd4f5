"""The claim protocol's small pieces: lock names, and what a driver error means to a runner.

MySQL/MariaDB: a job is executed only by the connection that holds
``GET_LOCK(lock_name(key, schema, job id), 0)``. The server releases the lock
when that connection goes away, and keeps it while an orphaned statement of
a vanished client still runs. SQLite: the job row's lease (``locked_by``,
``locked_until``) written inside ``BEGIN IMMEDIATE``. docs/runners.md tells
the whole protocol; the statements of each database are its backend's
(``jobtui.core.backends``).

Named locks are server-wide and any account may take or probe one, so their
names hold a keyed digest (HMAC-SHA256 with a random key kept in
``jobtui_secret``, which runners and admins read and operators cannot): an
operator can neither take a job's lock to stop it nor ask ``IS_USED_LOCK``
which jobs run (docs/privileges.md).
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import sqlite3
from typing import Any

from sqlalchemy import select, text
from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError, IntegrityError

from jobtui.core import schema
from jobtui.core.db import mask_text
from jobtui.core.dberrors import error_code
from jobtui.core.errors import JobtuiError, PermissionDenied
from jobtui.core.executor import RunAborted

LOCK_PREFIX = "jobtui"
MAX_LOCK_NAME = 64

# MySQL client/server error codes meaning the connection is gone.
DISCONNECT_CODES = {2006, 2013, 2014, 2045, 2055, 1927, 1053, 1152, 1158, 1159, 1160, 1161}
QUERY_INTERRUPTED = 1317  # KILL QUERY
CONNECTION_KILLED = 1927  # MariaDB: "Connection was killed"
DUPLICATE_KEY = 1062


def lock_name(key: str, schema_name: str, job_id: int | str) -> str:
    """``jobtui:`` + hex HMAC-SHA256(key, ``<schema>:<job id>``), cut to 64 characters.

    Without the key nobody can tell which name belongs to which job (or which
    database), so an account that may not read ``jobtui_secret`` can neither
    block a job by taking its lock nor see which jobs run.
    """
    if not key:
        raise ValueError("the lock key is empty")
    digest = hmac.new(key.encode(), f"{schema_name}:{job_id}".encode(), hashlib.sha256)
    return f"{LOCK_PREFIX}:{digest.hexdigest()}"[:MAX_LOCK_NAME]


def read_lock_key(conn: Connection) -> str:
    """The lock names' key from ``jobtui_secret`` (runners and admins may read it)."""
    s = schema.secret
    try:
        value = conn.execute(select(s.c.value).where(s.c.key == schema.LOCK_KEY)).scalar()
    except DBAPIError as exc:
        if schema.error_code(exc) in schema.PERMISSION_ERRORS:
            raise PermissionDenied(
                f"permission denied: this account may not read {s.name}, which holds the key "
                "of the jobs' lock names; only runner and admin accounts run jobs or prune "
                "(`jobtui grant ACCOUNT --runner`, docs/privileges.md)"
            ) from None
        if schema.error_code(exc) == 1146:
            value = None
        else:
            raise
    if not value:
        raise JobtuiError(
            f"no lock key in {s.name} yet: an admin runs `jobtui init` once on this database "
            "(it creates the key that keeps the jobs' lock names secret, docs/privileges.md)"
        )
    return str(value)


def current_schema(conn: Connection) -> str:
    return str(conn.execute(text("SELECT DATABASE()")).scalar() or "")


def is_disconnect(exc: BaseException) -> bool:
    """Whether ``exc`` means the connection is unusable (discard it, reconnect)."""
    if isinstance(exc, DBAPIError) and exc.connection_invalidated:
        return True
    code = error_code(exc)
    if code in DISCONNECT_CODES:
        return True
    orig = getattr(exc, "orig", None) or exc
    if isinstance(orig, sqlite3.ProgrammingError) and "closed" in str(orig):
        return True
    name = type(orig).__name__
    return name in ("InterfaceError",) and "pymysql" in type(orig).__module__


# SQLAlchemy's pool rolls a connection back when it is returned; when the server went
# away just before, it logs "Exception during reset or similar" at ERROR with a whole
# traceback, though the pool then simply drops that connection (the next checkout
# reconnects). During a server restart that put tracebacks in every worker's log.
POOL_LOGGER = "sqlalchemy.pool.impl.QueuePool"


class _LostResetFilter(logging.Filter):
    """One WARNING line instead of an ERROR traceback for a reset that found the server gone."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if exc is not None and is_disconnect(exc) and "reset" in str(record.msg):
            record.msg = "a pooled connection was lost while it was returned (dropped): %s"
            record.args = (" ".join(str(exc).split()),)
            record.exc_info = None
            record.exc_text = None
            record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True


_lost_reset_filter = _LostResetFilter()


def quiet_lost_resets() -> None:
    """Install the filter on the pool's logger (once; safe to call again)."""
    logger = logging.getLogger(POOL_LOGGER)
    if _lost_reset_filter not in logger.filters:
        logger.addFilter(_lost_reset_filter)


def is_duplicate(exc: BaseException) -> bool:
    """A UNIQUE key refused the row (through SQLAlchemy or from a raw cursor)."""
    if isinstance(exc, IntegrityError):
        return True
    orig = getattr(exc, "orig", None) or exc
    return error_code(exc) == DUPLICATE_KEY or isinstance(orig, sqlite3.IntegrityError)


def is_interrupt(exc: BaseException) -> bool:
    """KILL QUERY on MySQL/MariaDB, ``interrupt()`` on SQLite."""
    if error_code(exc) == QUERY_INTERRUPTED:
        return True
    orig = getattr(exc, "orig", None) or exc
    return isinstance(orig, sqlite3.OperationalError) and "interrupted" in str(orig)


def describe(exc: BaseException) -> str:
    """One readable line for an error (driver errors without SQLAlchemy's noise)."""
    orig: Any = getattr(exc, "orig", None) if isinstance(exc, DBAPIError) else None
    if orig is None and type(exc).__module__.startswith(("pymysql", "sqlite3")):
        orig = exc  # raw driver errors from the executor's own cursor
    if orig is not None:
        args: tuple[Any, ...] = tuple(getattr(orig, "args", ()))
        if len(args) >= 2 and isinstance(args[0], int):
            return mask_text(f"({args[0]}) {args[1]}")
        return mask_text(f"{type(orig).__name__}: {orig}")
    text_ = str(exc) or type(exc).__name__
    if not isinstance(exc, RunAborted) and type(exc).__name__ not in text_:
        text_ = f"{type(exc).__name__}: {text_}"
    return mask_text(text_)
