"""The backend contract: what the store and the runners ask of a database.

Capabilities are class attributes (as harlequin's adapters and APScheduler's
SQLAlchemy store keep them); everything else is a method whose statements
differ between databases. Each implementation (mysql.py, sqlite.py) is the one
place its database's dialect is spoken.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any, ClassVar

from sqlalchemy.engine import Connection, Engine

from jobtui.core.db import make_engine


class Backend:
    """One database's way of doing what jobtui needs."""

    #: "mysql" (MySQL and MariaDB) or "sqlite"
    name: ClassVar[str]
    #: Server accounts exist: owners, grants, roles, DEFINER routines, views per account.
    has_accounts: ClassVar[bool]
    #: Exclusivity rests on named locks (GET_LOCK) held by a connection; else on row leases.
    named_locks: ClassVar[bool]

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"

    # ---------------------------------------------------------------- connections

    # ---------------------------------------------------------------- store

    # ---------------------------------------------------------------- runners: claim and record

    # ---------------------------------------------------------------- runners: heartbeats and reaping

    def renew_leases(self, conn: Connection, runner_id: str, until: datetime) -> None:
        """Extend the claim leases runner ``runner_id`` holds to ``until``, on ``conn``
        in its heartbeat's transaction (nothing to do where named locks, held by the
        runner's connections, keep its jobs)."""
        raise NotImplementedError

    def drop_leases(self, conn: Connection, runner_id: str) -> None:
        """Runner ``runner_id`` deregisters: free the leases of its jobs that are not
        running (a running job's lease runs out by itself), on ``conn`` in the
        deregistration's transaction; nothing to do without leases."""
        raise NotImplementedError

    def reaping_lock(
        self, conn: Connection, lock_name: Callable[[], str]
    ) -> AbstractContextManager[bool]:
        """Around giving back a dead runner's job on ``conn``: True when nothing of the
        dead runner can still run it (on MySQL/MariaDB its named lock ``lock_name()``
        was free: taken here, released on leaving; an orphaned statement of the dead
        runner still holds it, and then it is False and the job stays taken); always
        True where exclusivity rests on leases (the reaper judged the runner dead)."""
        raise NotImplementedError

    # ---------------------------------------------------------------- runners: starting and scheduling

    def pool_engine(self, url: str, pool_size: int) -> Engine:
        """The engine a runner pool claims, runs and records on: its own, with
        ``pool_size`` connections (its threads hold one each)."""
        return make_engine(url, pool_size=pool_size)

    def lock_scope(self, engine: Engine, lock_key: Callable[[], str]) -> tuple[str, str]:
        """What a pool's job lock names are made of (``claims.lock_name``), read once
        when it starts: the schema ``engine`` works in and the key ``lock_key()``; both
        empty where there are no named locks."""
        raise NotImplementedError

    def leased_elsewhere(self, row: Any, runner_id: str, now: datetime) -> bool:
        """Whether job ``row``'s claim lease (``locked_by``, ``locked_until``) belongs to
        another runner than ``runner_id`` and has not run out at ``now``: the scheduler
        pass leaves such a job alone. Always False without leases."""
        raise NotImplementedError
