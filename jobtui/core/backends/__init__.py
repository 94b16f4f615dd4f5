"""One backend per database: every statement that differs between MySQL/MariaDB and
SQLite lives here, behind ``Backend`` (base.py), one package per database (mysql/,
sqlite/). The registry (registry.py) picks a database's backend; nothing outside
this package imports ``backends.mysql`` or ``backends.sqlite``
(tests/test_backend_seam.py).
"""

from jobtui.core.backends.base import Backend

__all__ = ["Backend"]
