"""The backend contract: what the store and the runners ask of a database.

Capabilities are class attributes (as harlequin's adapters and APScheduler's
SQLAlchemy store keep them); everything else is a method whose statements
differ between databases. Each implementation (mysql.py, sqlite.py) is the one
place its database's dialect is spoken.
"""

from __future__ import annotations

from typing import ClassVar

from sqlalchemy.engine import Engine


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
