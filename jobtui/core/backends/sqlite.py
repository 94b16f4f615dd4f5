"""SQLite, the embedded default: one file, no accounts, exclusivity by row leases written inside BEGIN IMMEDIATE."""

from __future__ import annotations

from typing import ClassVar

from jobtui.core.backends.base import Backend


class SQLiteBackend(Backend):
    name: ClassVar[str] = "sqlite"
    has_accounts: ClassVar[bool] = False
    named_locks: ClassVar[bool] = False

    # ---------------------------------------------------------------- connections

    # ---------------------------------------------------------------- store

    # ---------------------------------------------------------------- runners: claim and record

    # ---------------------------------------------------------------- runners: heartbeats and reaping
