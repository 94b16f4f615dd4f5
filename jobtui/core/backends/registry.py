"""The registry of backends: which one a database has (``backend_class``, ``backend_for``)
and an engine made by it (``make_engine``). The store chooses the backend once, when it
is opened (``backend_for``); the store and the runners speak only to it.

It lives apart from the package's ``__init__`` so that importing a part of one backend
(``backends.mysql.sqlapi``) does not load every backend.
"""

from __future__ import annotations

import logging

from sqlalchemy.engine import Engine
from sqlalchemy.exc import SQLAlchemyError

from jobtui.core.backends.base import Backend
from jobtui.core.backends.mysql.backend import MySQLBackend
from jobtui.core.backends.mysql.galera import GaleraBackend, is_cluster
from jobtui.core.backends.sqlite.backend import SQLiteBackend
from jobtui.core.db import parse_url

log = logging.getLogger("jobtui")

__all__ = ["backend_class", "backend_for", "make_engine"]


def backend_class(name: str) -> type[Backend]:
    """The backend of a database by its SQLAlchemy name: "sqlite", else "mysql" or
    "mariadb" (MySQL and MariaDB share one)."""
    return SQLiteBackend if name == "sqlite" else MySQLBackend


def backend_for(engine: Engine) -> Backend:
    """The backend of ``engine``'s database (a MariaDB Galera node's: ``GaleraBackend``,
    found by asking the server for ``wsrep_on``)."""
    cls = backend_class(engine.dialect.name)
    if cls is MySQLBackend:
        try:
            if is_cluster(engine):
                return GaleraBackend(engine)
        except SQLAlchemyError as exc:
            # Unreachable now: the store's first use fails with the reason (a worker
            # exits), and the next open asks again.
            log.debug("could not ask the server whether it is a Galera node: %s", exc)
    return cls(engine)


def make_engine(url_text: str, *, pool_size: int = 5) -> Engine:
    """An engine for the URL's database, configured as jobtui needs it (its backend's
    ``create_engine``)."""
    url = parse_url(url_text)
    return backend_class(url.get_backend_name()).create_engine(url, pool_size=pool_size)
