"""A runner thread's connection, and transactions on a runner's connections.

Each worker thread claims and records on one connection of its own
(``Session.conn``): on MySQL/MariaDB the named locks of the jobs it runs belong
to that connection. Where the backend runs owner code apart
(``Backend.separate_executor``: MySQL/MariaDB), a second connection of the
thread's, the executor (``Session.exec_conn``), runs the owners' routines and
expressions and nothing else: it holds no named lock and no bookkeeping
transaction, its role is the executor role (EXECUTE on the jobtui database
only, ``Backend.executor_session``), and its session is reset after each
batch. An abort interrupts the statement running on it. docs/privileges.md,
"Rule 6".
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from sqlalchemy.engine import Connection, Engine

from jobtui.core.backends import Backend
from jobtui.core.dberrors import describe

log = logging.getLogger("jobtui.runner")

#: Seconds an executor connection whose account lacked the executor role runs without
#: asking for it again (each ask is a round trip, and a batch resets the session): a
#: role granted meanwhile is taken up within this long.
ROLE_RETRY = 60.0


@dataclass(eq=False)
class Session:
    """One worker thread's connection (it claims, executes and records on it)."""

    engine: Engine
    backend: Backend
    conn: Connection | None = None
    cid: int | None = None  # the server's id of the connection, if any
    dirty: bool = False  # a run executed on a connection of it since connected or reset
    role: str | None = None  # the executor connection's role (MySQL/MariaDB)
    exec_conn: Connection | None = None  # the executor (separate_executor backends)
    exec_cid: int | None = None  # its server id: what KILL QUERY names, the run's sid
    role_retry: float = 0.0  # monotonic: the role refused, not asked for again before this

    def get(self) -> Connection:
        if self.conn is not None and (self.conn.closed or self.conn.invalidated):
            self.discard()
        if self.conn is None:
            self.conn, self.cid = self._open()
        return self.conn

    def _open(self, *, role: bool = False) -> tuple[Connection, int | None]:
        """A new connection and its server id; ``role``: narrowed to the executor role."""
        conn = self.engine.connect()
        try:
            cid = self.backend.connection_id(conn)
            if role:
                self._narrow(conn)
        except Exception:
            conn.close()
            raise
        return conn, cid

    def executor(self) -> Connection:
        """The connection owner code runs on: the executor, opened (and given its role)
        on first use, where the backend runs owner code apart; else ``get()``."""
        if not self.backend.separate_executor:
            return self.get()
        conn = self.exec_conn
        if conn is not None and (conn.closed or conn.invalidated):
            self.discard_executor()
        if self.exec_conn is None:
            self.exec_conn, self.exec_cid = self._open(role=True)
        return self.exec_conn

    def apart(self, kind: str) -> bool:
        """Whether a run of ``kind`` executes on the executor: owner code (a ``call`` or
        ``sql`` job's routine) where the backend runs it apart. An action is the admins'
        Python code: it runs on the bookkeeping connection (docs/privileges.md, Rule 3)."""
        return self.backend.separate_executor and kind != "action"

    def for_run(self, kind: str) -> Connection:
        """The connection a run of ``kind`` executes on."""
        return self.executor() if self.apart(kind) else self.get()

    def running(self, kind: str) -> tuple[Connection | None, int | None]:
        """The connection a run of ``kind`` executes on now, and its server id (an abort
        interrupts it): (None, None) when it is not open."""
        if self.apart(kind):
            return self.exec_conn, self.exec_cid
        return self.conn, self.cid

    def running_cid(self, kind: str) -> int | None:
        """The server id of the connection a run of ``kind`` will execute on (opened
        now if need be): the run's ``sid`` in ``user_jobs_running``."""
        if self.apart(kind):
            self.executor()
            return self.exec_cid
        return self.cid

    def reset(self) -> None:
        """Back to a new connection's session (``Backend.reset_session``), so nothing a
        run set (time zone, sql_mode, user variables, named locks, ...) reaches the next
        owner's claim or run. A connection that cannot be reset is closed: the next one
        is new."""
        if self.backend.separate_executor:
            # Owner code ran on the executor only (the bookkeeping connection ran the
            # runner's own statements and, for actions, the admins' Python code).
            self._reset_executor()
            self.dirty = False
            return
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

    def _reset_executor(self) -> None:
        conn = self.exec_conn
        if conn is None:
            return
        try:
            if conn.in_transaction():
                conn.rollback()
            self.backend.reset_session(conn)
            self._narrow(conn)
        except Exception as exc:
            log.warning(
                "could not reset a runner's executor session (reconnecting): %s", describe(exc)
            )
            self.discard_executor()

    def _narrow(self, conn: Connection) -> None:
        """Set the executor role on ``conn`` (``Backend.executor_session``). After the
        account was found without it, not asked for again for ROLE_RETRY seconds; the
        connection keeps the account's default role meanwhile, as after a refusal."""
        if time.monotonic() < self.role_retry:
            return
        if not self.backend.executor_session(conn, self.role):
            self.role_retry = time.monotonic() + ROLE_RETRY

    def discard_executor(self) -> None:
        conn, self.exec_conn, self.exec_cid = self.exec_conn, None, None
        _close(conn)

    def discard(self) -> None:
        """Close both connections (a new claim opens them again, each session new)."""
        conn, self.conn, self.cid = self.conn, None, None
        self.dirty = False
        _close(conn)
        self.discard_executor()


def _close(conn: Connection | None) -> None:
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
