"""SQLite's engine: the file's connections set up as jobtui needs them (WAL, a busy
timeout, jobtui's NOW(), BEGIN issued by jobtui so that writers can BEGIN IMMEDIATE)."""

from __future__ import annotations

import sqlite3
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, event
from sqlalchemy.engine import URL, Engine

from jobtui.core.errors import DatabaseUnavailable
from jobtui.core.timeutil import to_db, utcnow

SQLITE_BUSY_MS = 30_000


# SQLite's own datetime('now') reads the system clock; jobtui registers NOW()
# so expr schedules can be evaluated (and previewed) at any instant.
_sqlite_now = threading.local()


class sqlite_now_override:
    """Within this block, SQLite's NOW() returns ``when`` on this thread."""

    def __init__(self, when: datetime) -> None:
        self.when = when

    def __enter__(self) -> None:
        _sqlite_now.value = self.when

    def __exit__(self, *exc: object) -> None:
        _sqlite_now.value = None


def _sqlite_now_fn() -> str:
    value = getattr(_sqlite_now, "value", None) or utcnow()
    naive = to_db(value)
    assert naive is not None
    return naive.strftime("%Y-%m-%d %H:%M:%S.%f")


def _enter_wal(cur: sqlite3.Cursor) -> None:
    """``PRAGMA journal_mode=WAL``, waiting out other connections as a busy timeout would.

    The switch of a new file to WAL needs the file to itself, and SQLite answers
    "database is locked" at once, without calling the busy handler, while another
    connection opens or switches the same file: several processes opening a new
    file together failed so.
    """
    deadline = time.monotonic() + SQLITE_BUSY_MS / 1000
    delay = 0.001
    while True:
        try:
            cur.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() + delay > deadline:
                raise
        time.sleep(delay)
        delay = min(delay * 2, 0.05)


def sqlite_engine(url: URL) -> Engine:
    """An engine on the SQLite file of ``url`` (its directory made): WAL, a busy timeout,
    jobtui's NOW(), and BEGIN IMMEDIATE for a connection with the ``immediate`` option."""
    database = url.database or ""
    if database and database != ":memory:":
        path = Path(database).expanduser()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise DatabaseUnavailable(
                f"database unavailable: cannot create the directory {str(path.parent)!r} for "
                f"the SQLite file ({exc.strerror or exc}); give --db sqlite:///PATH in a "
                "writable directory"
            ) from None
        url = url.set(database=str(path))
    engine = create_engine(
        url,
        connect_args={"timeout": SQLITE_BUSY_MS / 1000, "check_same_thread": False},
        pool_pre_ping=False,
    )

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: sqlite3.Connection, _record: Any) -> None:
        # We issue BEGIN ourselves (below) so that claims can use BEGIN IMMEDIATE.
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        cur.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_MS}")
        _enter_wal(cur)
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.close()
        dbapi_conn.create_function("NOW", 0, _sqlite_now_fn)

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Any) -> None:
        if conn.get_execution_options().get("immediate"):
            conn.exec_driver_sql("BEGIN IMMEDIATE")
        else:
            conn.exec_driver_sql("BEGIN")

    return engine
