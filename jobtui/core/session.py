"""A runner thread's connection, and transactions on a runner's connections.

Each worker thread claims, executes and records on one connection of its own
(``Session``): on MySQL/MariaDB the named locks of the jobs it runs belong to
that connection, and an abort interrupts the statement running on it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from sqlalchemy.engine import Connection, Engine

from jobtui.core.backends import Backend
from jobtui.core.dberrors import describe

log = logging.getLogger("jobtui.runner")


@dataclass(eq=False)
class Session:
    """One worker thread's connection (it claims, executes and records on it)."""

    engine: Engine
    backend: Backend
    conn: Connection | None = None
    cid: int | None = None  # the server's id of the connection (KILL QUERY), if any
    dirty: bool = False  # a run executed on it since it was connected or last reset

    def get(self) -> Connection:
        if self.conn is not None and (self.conn.closed or self.conn.invalidated):
            self.discard()
        if self.conn is None:
            conn = self.engine.connect()
            try:
                self.cid = self.backend.connection_id(conn)
            except Exception:
                conn.close()
                raise
            self.conn = conn
        return self.conn

    def reset(self) -> None:
        """Back to a new connection's session (``Backend.reset_session``), so nothing a
        run set (time zone, sql_mode, user variables, named locks, ...) reaches the next
        owner's claim or run. A connection that cannot be reset is closed: the next one
        is new."""
        conn = self.conn
        if conn is None:
            self.dirty = False
            return
        try:
            if conn.in_transaction():
                conn.rollback()
            self.backend.reset_session(conn)
            self.dirty = False
        except Exception as exc:
            log.warning("could not reset a runner session (reconnecting): %s", describe(exc))
            self.discard()

    def discard(self) -> None:
        conn, self.conn, self.cid = self.conn, None, None
        self.dirty = False
        if conn is None:
            return
        try:
            conn.invalidate()
        except Exception as exc:  # already broken: nothing more to release
            log.debug("invalidate failed: %s", exc)
        try:
            conn.close()
        except Exception as exc:
            log.debug("close failed: %s", exc)


@contextmanager
def transaction(backend: Backend, conn: Connection, *, write: bool = True) -> Iterator[Connection]:
    """A transaction on ``conn`` (one left open is rolled back first); a ``write`` one
    as the backend begins writers (SQLite: BEGIN IMMEDIATE)."""
    if conn.in_transaction():
        conn.rollback()
    with backend.begin(conn, write=write):
        yield conn


@contextmanager
def write_transaction(backend: Backend, engine: Engine) -> Iterator[Connection]:
    """A write transaction on a connection of ``engine``'s pool."""
    with engine.connect() as conn, transaction(backend, conn) as c:
        yield c
