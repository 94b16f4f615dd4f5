"""SQLite, the embedded default: one file, no accounts, exclusivity by row leases written inside BEGIN IMMEDIATE."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any, ClassVar

from sqlalchemy import update
from sqlalchemy.engine import Connection, Engine

from jobtui.core import bookkeeping, schema
from jobtui.core.backends.base import Backend
from jobtui.core.timeutil import to_db


class SQLiteBackend(Backend):
    name: ClassVar[str] = "sqlite"
    has_accounts: ClassVar[bool] = False
    named_locks: ClassVar[bool] = False

    # ---------------------------------------------------------------- connections

    # ---------------------------------------------------------------- store

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

    def leased_elsewhere(self, row: Any, runner_id: str, now: datetime) -> bool:
        return bool(
            row.locked_by
            and row.locked_by != runner_id
            and row.locked_until is not None
            and (bookkeeping.row_time(row.locked_until) or now) > now
        )
