"""One backend per database: every statement that differs between MySQL/MariaDB and
SQLite lives here, behind ``Backend`` (base.py). The store chooses the backend once,
when it is opened (``backend_for``); the store and the runners speak only to it.
"""

from __future__ import annotations

from sqlalchemy.engine import Engine

from jobtui.core.backends.base import Backend
from jobtui.core.backends.mysql import MySQLBackend
from jobtui.core.backends.sqlite import SQLiteBackend

__all__ = ["Backend", "MySQLBackend", "SQLiteBackend", "backend_class", "backend_for"]


def backend_class(name: str) -> type[Backend]:
    """The backend of a database by its SQLAlchemy name: "sqlite", else "mysql" or
    "mariadb" (MySQL and MariaDB share one)."""
    return SQLiteBackend if name == "sqlite" else MySQLBackend


def backend_for(engine: Engine) -> Backend:
    """The backend of ``engine``'s database."""
    return backend_class(engine.dialect.name)(engine)
