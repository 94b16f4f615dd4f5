"""SQLite, the embedded default: one file, no accounts, exclusivity by row leases written inside BEGIN IMMEDIATE."""

from __future__ import annotations

import getpass
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from sqlalchemy import Table, text, update
from sqlalchemy.engine import URL, Connection, Engine, RootTransaction
from sqlalchemy.exc import OperationalError

from jobtui.core import routines, schema
from jobtui.core.backends.base import Backend
from jobtui.core.backends.sqlite_engine import sqlite_engine, sqlite_now_override
from jobtui.core.errors import InvalidInput
from jobtui.core.timeutil import to_db

if TYPE_CHECKING:
    from jobtui.core.model import Job

T = TypeVar("T")
EXPR_MAX_VALUE = 100_000  # bytes an expr schedule's value may take


class ReadPoller:
    """SQLite's poller: a plain read transaction each time (nothing goes over a network)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def run(self, query: Callable[[Connection], T]) -> T:
        with self.engine.connect() as conn, conn.begin():
            return query(conn)

    def close(self) -> None:
        pass


class SQLiteBackend(Backend):
    name: ClassVar[str] = "sqlite"
    has_accounts: ClassVar[bool] = False
    named_locks: ClassVar[bool] = False

    # ---------------------------------------------------------------- connections

    @classmethod
    def create_engine(cls, url: URL, *, pool_size: int) -> Engine:
        return sqlite_engine(url)  # one writer at a time: no pool to size

    def begin_write(self, conn: Connection) -> RootTransaction:
        # db.py's "begin" hook issues BEGIN IMMEDIATE for a connection with this option
        conn.execution_options(immediate=True)
        try:
            return conn.begin()
        finally:
            conn.execution_options(immediate=False)

    def poller(self) -> ReadPoller:
        return ReadPoller(self.engine)

    # ---------------------------------------------------------------- store

    def current_user(self) -> str:
        try:
            return getpass.getuser()
        except (KeyError, OSError):
            return "unknown"

    def schema_name(self) -> str:
        return ""

    def readable_tables(self, owner: Callable[[], str]) -> tuple[Table, Table]:
        return schema.job, schema.run  # whoever may open the file reads every row

    @contextmanager
    def prune_lock(self, lock_key: Callable[[], str], wait: float) -> Iterator[bool]:
        yield True  # each pruning transaction is BEGIN IMMEDIATE: pruners take turns

    def evaluate_expr(
        self, conn: Connection, expr: str, now: datetime, *, job: Job | None, schema_name: str
    ) -> Any:
        """``SELECT (expr)``, jobtui's NOW() returning ``now``; bounded in size and in time."""
        # A date needs a few bytes: cap text and blobs (randomblob(1e9) would
        # take a gigabyte of memory) for this evaluation only.
        raw: Any = conn.connection.dbapi_connection
        old_limit = raw.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, EXPR_MAX_VALUE)
        deadline = time.monotonic() + routines.EXPR_TIMEOUT
        raw.set_progress_handler(lambda: int(time.monotonic() > deadline), 10_000)
        statement = f"SELECT ({expr})"
        try:
            with sqlite_now_override(now):
                return conn.execute(text(statement)).scalar()
        except sqlite3.OperationalError as exc:  # raised past SQLAlchemy: its error
            raise OperationalError(statement, None, exc) from exc
        finally:
            raw.set_progress_handler(None, 0)
            raw.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, old_limit)

    def timed_out(self, exc: BaseException) -> bool:
        orig = getattr(exc, "orig", None) or exc
        return isinstance(orig, sqlite3.OperationalError) and "interrupted" in str(orig)

    def check_sql(self, statement: str) -> None:
        with self.engine.connect() as conn:
            try:
                conn.exec_driver_sql("EXPLAIN " + statement)
            finally:
                conn.rollback()

    def check_procedure(self, schema_name: str, procedure: str, nargs: int) -> None:
        raise InvalidInput(
            "--call runs a stored procedure, which needs MySQL/MariaDB; on SQLite use "
            "--sql STATEMENT or --action NAME"
        )

    def refuse_ungranted(self, account: str, action: str) -> None:
        return  # no accounts: every registered action is allowed

    def finish_schema(self, conn: Connection) -> None:
        schema.sqlite_job_ids_never_reused(conn)

    # ---------------------------------------------------------------- runners: claim and record

    # ---------------------------------------------------------------- runners: heartbeats and reaping

    def renew_leases(self, conn: Connection, runner_id: str, until: datetime) -> None:
        j = schema.job
        conn.execute(update(j).where(j.c.locked_by == runner_id).values(locked_until=to_db(until)))

    def drop_leases(self, conn: Connection, runner_id: str) -> None:
        j = schema.job
        conn.execute(
            update(j)
            .where(j.c.locked_by == runner_id, j.c.running.is_(False))
            .values(locked_by=None, locked_until=None)
        )

    @contextmanager
    def reaping_lock(self, conn: Connection, lock_name: Callable[[], str]) -> Iterator[bool]:
        yield True  # no lock to wait for: the reaper judged the holder dead (reaping.py)

    # ---------------------------------------------------------------- runners: starting and scheduling

    def pool_engine(self, url: str, pool_size: int) -> Engine:
        if ":memory:" in url or url.rstrip("/") == "sqlite:":
            return self.engine  # an in-memory database exists on the store's engine only
        return super().pool_engine(url, pool_size)

    def lock_scope(self, engine: Engine, lock_key: Callable[[], str]) -> tuple[str, str]:
        return "", ""  # jobs are exclusive by their rows' leases
