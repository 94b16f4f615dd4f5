"""One backend per database: every statement that differs between MySQL/MariaDB and
SQLite lives here, behind ``Backend`` (base.py). The store chooses the backend once,
when it is opened (``backend_for``); the store and the runners speak only to it.
"""

from __future__ import annotations

import logging

from sqlalchemy.engine import Engine
from sqlalchemy.exc import SQLAlchemyError

from jobtui.core.backends.base import Backend
from jobtui.core.backends.mysql import MySQLBackend
from jobtui.core.backends.sqlite import SQLiteBackend

log = logging.getLogger("jobtui")

__all__ = ["Backend", "MySQLBackend", "SQLiteBackend", "backend_class", "backend_for"]


def backend_class(name: str) -> type[Backend]:
    """The backend of a database by its SQLAlchemy name: "sqlite", else "mysql" or
    "mariadb" (MySQL and MariaDB share one)."""
    return SQLiteBackend if name == "sqlite" else MySQLBackend


def backend_for(engine: Engine) -> Backend:
    """The backend of ``engine``'s database (a MariaDB Galera node's: ``GaleraBackend``,
    found by asking the server for ``wsrep_on``)."""
    cls = backend_class(engine.dialect.name)
    if cls is MySQLBackend:
        from jobtui.core.backends.galera import GaleraBackend, is_cluster

        try:
            if is_cluster(engine):
                return GaleraBackend(engine)
        except SQLAlchemyError as exc:
            # Unreachable now: the store's first use fails with the reason (a worker
            # exits), and the next open asks again.
            log.debug("could not ask the server whether it is a Galera node: %s", exc)
    return cls(engine)
