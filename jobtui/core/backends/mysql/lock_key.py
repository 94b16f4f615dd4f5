"""The key of the runners' named-lock names (MySQL/MariaDB; SQLite has no named locks):
made once by `jobtui init`, kept in ``jobtui_secret`` (``lock_names.lock_name`` reads it).
"""

from __future__ import annotations

import secrets

from sqlalchemy import select
from sqlalchemy.engine import Engine

from jobtui.core.dberrors import unless_refused
from jobtui.core.schema import LOCK_KEY, secret


def ensure_lock_key(engine: Engine) -> bool:
    """Create the random key of the named-lock names once; False if this account may not.

    MySQL/MariaDB only (SQLite has no named locks). A runner account may not
    write ``jobtui_secret``: it leaves it to ``jobtui init`` by an admin.
    INSERT IGNORE: two admins initialising at once keep one key.
    """
    with engine.connect() as conn, unless_refused(conn) as outcome:
        found = conn.execute(select(secret.c.value).where(secret.c.key == LOCK_KEY)).scalar()
        if found is None:
            conn.execute(
                secret.insert()
                .prefix_with("IGNORE")
                .values(key=LOCK_KEY, value=secrets.token_hex(32))
            )
        conn.commit()
    return not outcome.refused
