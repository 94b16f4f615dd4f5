"""MySQL and MariaDB: accounts and DEFINER routines, exclusivity by GET_LOCK."""

from __future__ import annotations

from typing import ClassVar

from jobtui.core.backends.base import Backend


class MySQLBackend(Backend):
    name: ClassVar[str] = "mysql"
    has_accounts: ClassVar[bool] = True
    named_locks: ClassVar[bool] = True

    # ---------------------------------------------------------------- connections

    # ---------------------------------------------------------------- store

    # ---------------------------------------------------------------- runners: claim and record

    # ---------------------------------------------------------------- runners: heartbeats and reaping
