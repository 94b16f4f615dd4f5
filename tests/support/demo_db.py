"""A demo database on purpose, for the tests that run the demo.* actions.

The demo actions exist only in a database that `jobtui demo` made: it marks
the database with ``JobStore.mark_demo`` and every process whose store opens
a database so marked registers them. ``make_demo`` marks a test's database
the same way. On MySQL/MariaDB the runner also runs an action only for an
owner that an admin allowed it to, so ``make_demo`` grants the store's own
account ``demo.*`` there (``allow_actions``: the statements of `jobtui grant
ACCOUNT --actions PATTERN --apply`).
"""

from __future__ import annotations

from typing import TypeVar

from sqlalchemy import text

from jobtui.core.backends.mysql.grants import action_grant_statements
from jobtui.core.store import JobStore, open_store

T = TypeVar("T", JobStore, str)


def make_demo(db: T) -> T:
    """Mark ``db`` (a store, or a URL) as a demo database; returns it for chaining."""
    store = open_store(db) if isinstance(db, str) else db
    try:
        store.mark_demo()
        allow_actions(store, "demo.*")
    finally:
        if isinstance(db, str):
            store.close()
    return db


def allow_actions(store: JobStore, *patterns: str, account: str | None = None) -> None:
    """MySQL/MariaDB: allow ``account`` (default: the store's own) the actions ``patterns``."""
    if store.backend.name == "sqlite":
        return  # no accounts: every registered action is allowed
    with store.engine.connect() as conn:
        database = str(conn.execute(text("SELECT DATABASE()")).scalar_one())
        raw = conn.connection.dbapi_connection
        assert raw is not None
        with raw.cursor() as cur:
            for statement in action_grant_statements(
                account or store.owner, database, grant=patterns
            ):
                cur.execute(statement)
        raw.commit()
