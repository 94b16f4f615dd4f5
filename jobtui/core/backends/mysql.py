"""MySQL and MariaDB: accounts and DEFINER routines, exclusivity by GET_LOCK."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any, ClassVar

from sqlalchemy.engine import Connection, Engine

from jobtui.core import claims
from jobtui.core.backends.base import Backend


class MySQLBackend(Backend):
    name: ClassVar[str] = "mysql"
    has_accounts: ClassVar[bool] = True
    named_locks: ClassVar[bool] = True

    # ---------------------------------------------------------------- connections

    # ---------------------------------------------------------------- store

    # ---------------------------------------------------------------- runners: claim and record

    # ---------------------------------------------------------------- runners: heartbeats and reaping

    def renew_leases(self, conn: Connection, runner_id: str, until: datetime) -> None:
        pass  # the named locks live as long as the connections that hold them

    def drop_leases(self, conn: Connection, runner_id: str) -> None:
        pass  # no leases: closing its connections frees a runner's named locks

    @contextmanager
    def reaping_lock(self, conn: Connection, lock_name: Callable[[], str]) -> Iterator[bool]:
        name = lock_name()
        if not claims.get_lock(conn, name):
            conn.rollback()
            yield False  # an orphaned statement still runs: keep the job taken
            return
        conn.commit()
        try:
            yield True
        finally:
            claims.release_lock(conn, name)
            conn.commit()

    # ---------------------------------------------------------------- runners: starting and scheduling

    def lock_scope(self, engine: Engine, lock_key: Callable[[], str]) -> tuple[str, str]:
        with engine.connect() as conn:
            schema_name = claims.current_schema(conn)
        return schema_name, lock_key()

    def leased_elsewhere(self, row: Any, runner_id: str, now: datetime) -> bool:
        return False  # exclusivity is the named lock's, taken at the claim
