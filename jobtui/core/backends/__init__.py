"""One backend per database: every statement that differs between MySQL/MariaDB and
SQLite lives here, behind ``Backend`` (base.py). The store chooses the backend once,
when it is opened (``backend_for``); the store and the runners speak only to it.
"""

from __future__ import annotations

from sqlalchemy.engine import Engine

from jobtui.core.backends.base import Backend
from jobtui.core.backends.mysql import MySQLBackend
from jobtui.core.backends.sqlite import SQLiteBackend

__all__ = ["Backend", "MySQLBackend", "SQLiteBackend", "backend_for"]


def backend_for(engine: Engine) -> Backend:
    """The backend of ``engine``'s database (MySQL and MariaDB share one)."""
    if engine.dialect.name == "sqlite":
        return SQLiteBackend(engine)
    return MySQLBackend(engine)
