"""What the database drivers' errors mean: their codes, read once for every module, and
their translation into jobtui's errors (a masked, one-line message)."""

from __future__ import annotations

import logging
import re
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import wraps
from typing import Any, ParamSpec, TypeVar

from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError, IntegrityError, OperationalError, SQLAlchemyError

from jobtui.core.db import mask_text
from jobtui.core.errors import (
    DatabaseUnavailable,
    InvalidInput,
    JobtuiError,
    PermissionDenied,
    RunAborted,
)

P = ParamSpec("P")
T = TypeVar("T")

# MySQL error codes for "this account may not" (create views, read a table ...).
PERMISSION_ERRORS = {1044, 1142, 1143, 1227, 1370}
NO_SUCH_TABLE = 1146
UNKNOWN_DATABASE = 1049
LOCK_WAIT_TIMEOUT = 1205  # innodb_lock_wait_timeout exceeded

# MySQL client error codes that mean "the server is not there (any more)".
CONNECTION_ERRORS = {
    1040,
    1042,
    1043,
    1044,
    1045,
    1049,
    1053,
    1152,
    1158,
    1159,
    1160,
    1161,
    2002,
    2003,
    2005,
    2006,
    2013,
    2055,
}


def error_code(exc: BaseException) -> int | None:
    """The MySQL/MariaDB error number of ``exc`` (through SQLAlchemy or from a raw
    cursor), or None (SQLite, or not a server error)."""
    orig: Any = getattr(exc, "orig", None) or exc
    args = getattr(orig, "args", ())
    return args[0] if args and isinstance(args[0], int) else None


class Refusal:
    """What ``unless_refused`` saw: ``refused`` is True when the account may not."""

    refused = False


@contextmanager
def unless_refused(conn: Connection) -> Iterator[Refusal]:
    """A block this account may not be allowed to run (create views, write the secret):
    a permission error rolls ``conn`` back and sets the yielded ``Refusal``; any
    other error goes on."""
    outcome = Refusal()
    try:
        yield outcome
    except DBAPIError as exc:
        if error_code(exc) not in PERMISSION_ERRORS:
            raise
        conn.rollback()
        outcome.refused = True


def short_error(exc: BaseException) -> str:
    """The driver's message of ``exc``: its first line, passwords masked."""
    orig = getattr(exc, "orig", None) or exc
    args: tuple[Any, ...] = tuple(getattr(orig, "args", ()))
    msg = str(args[1]) if len(args) > 1 and isinstance(args[0], int) else str(orig)
    return mask_text(msg.splitlines()[0] if msg else type(orig).__name__)


def db_errors(fn: Callable[P, T]) -> Callable[P, T]:
    """Turn driver errors into jobtui errors with a masked, one-line message."""

    @wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return fn(*args, **kwargs)
        except JobtuiError:
            raise
        except SQLAlchemyError as exc:
            raise translate_db_error(exc) from exc
        except UnicodeEncodeError as exc:
            # e.g. argv bytes that were not UTF-8 (surrogate escapes): the driver cannot
            # send them; the statement never ran, its transaction is rolled back
            bad = exc.object[exc.start : exc.end] if isinstance(exc.object, str) else ""
            raise InvalidInput(
                f"invalid text: {bad!r} is not valid Unicode (bytes that are not UTF-8?); "
                "give names and values as UTF-8 text"
            ) from None

    return wrapper


def translate_db_error(exc: BaseException) -> JobtuiError:
    """A DatabaseUnavailable for lost or refused connections, else a DB error message."""
    orig = getattr(exc, "orig", None) or exc
    args = getattr(orig, "args", ())
    code = args[0] if args else None
    message = short_error(exc)
    if code == UNKNOWN_DATABASE:
        return DatabaseUnavailable(_missing_database(message))
    if isinstance(exc, OperationalError) and (
        code in CONNECTION_ERRORS
        or (
            not isinstance(code, int)
            and ("unable to open" in message or "disk I/O" in message or "readonly" in message)
        )
    ):
        return DatabaseUnavailable(f"database unavailable: {message}{_sqlite_hint(message)}")
    if isinstance(exc, DBAPIError) and getattr(exc, "connection_invalidated", False):
        return DatabaseUnavailable(f"database unavailable: {message}")
    if code in PERMISSION_ERRORS:
        return PermissionDenied(
            f"permission denied: {message}; this account lacks the privilege (an admin grants "
            "it with `jobtui grant ACCOUNT --operator|--admin|--runner`, docs/privileges.md)"
        )
    if code == NO_SUCH_TABLE or "no such table: jobtui_" in message:
        err = JobtuiError(
            f"database error: {message}; this database has no jobtui tables yet: run "
            "`jobtui init` (a read-only console or command does not create them)"
        )
        err.exit_code = 1
        return err
    err = JobtuiError(f"database error: {message}")
    err.exit_code = 1
    return err


def _missing_database(message: str) -> str:
    """The server has no database of the URL's name: say how to create it (jobtui init
    creates tables, never the database: that takes a privilege on the whole server)."""
    found = re.search(r"Unknown database '(.*)'", message)
    if found is None:
        return f"database unavailable: {message}"
    name = found.group(1)
    quoted = "`" + name.replace("`", "``") + "`"
    return (
        f"database {name!r} does not exist on this server: create it first, as an account "
        f"that may (root or a DBA): CREATE DATABASE {quoted} CHARACTER SET utf8mb4 "
        "COLLATE utf8mb4_bin; then run `jobtui init`"
    )


def _sqlite_hint(message: str) -> str:
    """What to check when SQLite cannot open or write its file (docs/reliability.md)."""
    if "unable to open" in message or "readonly" in message:
        return (
            " (is the file and its directory writable? SQLite's WAL mode also creates "
            "-wal and -shm files next to it, even to read)"
        )
    if "disk I/O" in message:
        return " (is the disk full, or the file or its directory read-only?)"
    return ""


# MySQL client/server error codes meaning the connection is gone.
DISCONNECT_CODES = {2006, 2013, 2014, 2045, 2055, 1927, 1053, 1152, 1158, 1159, 1160, 1161}
QUERY_INTERRUPTED = 1317  # KILL QUERY
CONNECTION_KILLED = 1927  # MariaDB: "Connection was killed"
DUPLICATE_KEY = 1062


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
