"""What the store's helpers use of an open store: ``StoreContext``.

One per ``JobStore``: the engine, the backend chosen for it, the clock, whether
writes are allowed, and what the connecting account is and may read (detected
once, when first asked). ``reading``, ``validation``, ``defining``, ``transfer``,
``expressions`` and ``pruning`` take this, not the ``JobStore`` whose verbs they are.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy import Row, Table, select
from sqlalchemy.engine import Connection, Engine

from jobtui.core import lock_names, schema
from jobtui.core.backends.registry import backend_for
from jobtui.core.dberrors import db_errors
from jobtui.core.errors import JobNotFound, ReadOnlyError
from jobtui.core.timeutil import Clock, aware

T = TypeVar("T")


class StoreContext:
    """An open store's engine, backend and clock, and the connecting account's view."""

    def __init__(self, engine: Engine, *, clock: Clock, read_only: bool) -> None:
        self.engine = engine
        self.clock = clock
        self.read_only = read_only
        self.backend = backend_for(engine)
        self._owner: str | None = None
        self._owner_lock = threading.Lock()
        self._lock_key: str | None = None
        self._tables: tuple[Table, Table] | None = None
        self._tables_lock = threading.Lock()
        self._schema_name: str | None = None
        self._poller = self.backend.poller()  # see poll()

    def close(self) -> None:
        self._poller.close()
        self.engine.dispose()

    # ------------------------------------------------------------------ whose jobs

    @property
    def job_table(self) -> Table:
        """``jobtui_job``, or an operator account's view of its own jobs."""
        return self._access()[0]

    @property
    def run_table(self) -> Table:
        """``jobtui_run``, or an operator account's view of its own runs."""
        return self._access()[1]

    @property
    def sees_all(self) -> bool:
        """True for accounts that read the tables (admin, runner; SQLite), like DBA_JOBS."""
        return self._access()[0] is schema.job

    def _access(self) -> tuple[Table, Table]:
        with self._tables_lock:
            if self._tables is None:
                self._tables = self._detect_access()
            return self._tables

    @db_errors
    def _detect_access(self) -> tuple[Table, Table]:
        """Which the account may read: the tables (admin, runner) or the views (operator)."""
        return self.backend.readable_tables(lambda: self.owner)

    @property
    def owner(self) -> str:
        """The connecting account (``CURRENT_USER()``), or the OS login on SQLite."""
        with self._owner_lock:
            if self._owner is None:
                self._owner = self._current_owner()
            return self._owner

    @db_errors
    def _current_owner(self) -> str:
        return self.backend.current_user()

    @property
    def schema_name(self) -> str:
        """The jobtui database (``DATABASE()``) on MySQL/MariaDB; "" on SQLite."""
        if self._schema_name is None:
            self._schema_name = self.backend.schema_name()
        return self._schema_name

    def owner_filter(self, owner: str | None) -> Any:
        """The job table's rows of ``owner`` (default: the connecting account)."""
        return self.job_table.c.owner == (owner or self.owner)

    @db_errors
    def lock_key(self) -> str:
        """The key of the named-lock names (``jobtui_secret``), read once per store.

        MySQL/MariaDB runner and admin accounts only: an operator's account may
        not read it (PermissionDenied), which is the point.
        """
        with self._owner_lock:
            if self._lock_key is None:
                with self.engine.connect() as conn:
                    try:
                        self._lock_key = lock_names.read_lock_key(conn)
                    finally:
                        conn.rollback()
            return self._lock_key

    # ------------------------------------------------------------------ transactions

    def now(self) -> datetime:
        return aware(self.clock())

    def check_writable(self) -> None:
        if self.read_only:
            raise ReadOnlyError("read-only: this console or command may not change anything")

    @contextmanager
    def write(self) -> Iterator[Connection]:
        """A write transaction: BEGIN IMMEDIATE on SQLite, a plain transaction on MySQL."""
        self.check_writable()
        with self.engine.connect() as conn, self.backend.begin(conn):
            yield conn

    @contextmanager
    def read(self) -> Iterator[Connection]:
        with self.engine.connect() as conn, conn.begin():
            yield conn

    def poll(self, query: Callable[[Connection], T]) -> T:
        """Run ``query`` (one SELECT, its result read inside) for a caller that asks again
        and again (the console, once a second), as cheaply as the database allows
        (``Backend.poller``: on MySQL/MariaDB one connection kept for the purpose, in
        autocommit; on SQLite a plain read transaction)."""
        return self._poller.run(query)

    def lock_row(self, conn: Connection, job_id: int) -> Row[Any]:
        """The job's row, locked for this transaction's write (JobNotFound if it is gone)."""
        row = conn.execute(
            select(self.job_table).where(self.job_table.c.id == job_id).with_for_update()
        ).first()
        if row is None:
            raise JobNotFound(str(job_id))
        return row
