"""The SQL interface with DBMS_JOB's shape (MySQL/MariaDB): procedures and views.

`jobtui init` installs it in the jobtui database through
``ensure_sql_api``; it is recreated whenever its text changes (a digest is
kept in jobtui_meta, as for the operators' views). docs/sql.md describes it.
"""

from __future__ import annotations

import hashlib

from sqlalchemy import text
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DBAPIError

from jobtui.core import accounts, schema
from jobtui.core.backends.mysql.sqlapi import calls, keeper, owngrant, procedures, setalert, views
from jobtui.core.dberrors import unless_refused

SQL_API_KEY = "sql_api"  # jobtui_meta: a digest of the SQL interface's DDL


def statements(schema_name: str, *, definer_role: bool) -> list[str]:
    """Every statement that (re)creates the SQL interface, in order."""
    return [
        *keeper.statements(schema_name, definer_role=definer_role),
        *views.statements(schema_name, definer_role=definer_role),
        *procedures.statements(schema_name, definer_role=definer_role),
        *setalert.statements(schema_name, definer_role=definer_role),
        *calls.statements(schema_name, definer_role=definer_role),
        *owngrant.statements(schema_name, definer_role=definer_role),
    ]


def ensure_sql_api(engine: Engine) -> bool:
    """(Re)create the SQL interface when missing or outdated; False if not allowed.

    Like the operators' views (``backends.mysql.operator_views.ensure_views``): an account that may not
    create routines and views (a runner) leaves them as they are.
    """
    with engine.connect() as conn:
        role, database = conn.execute(text("SELECT CURRENT_ROLE(), DATABASE()")).one()
        definer_role = role is not None and role == accounts.admin_role(str(database))
        wanted = statements(str(database), definer_role=definer_role)
        digest = hashlib.sha256("\n;\n".join(wanted).encode()).hexdigest()
        stored = conn.execute(schema.select_meta(SQL_API_KEY)).scalar()
        conn.rollback()
        if stored == digest:
            return True
        with unless_refused(conn) as outcome:
            raw = conn.connection.dbapi_connection
            assert raw is not None
            cur = raw.cursor()  # no parameters: the driver leaves % signs alone
            try:
                for statement in wanted:
                    try:
                        cur.execute(statement)
                    except conn.dialect.loaded_dbapi.Error as exc:
                        raise DBAPIError.instance(
                            statement[:200], None, exc, conn.dialect.loaded_dbapi.Error
                        ) from exc
            finally:
                cur.close()
            schema.put_meta(conn, SQL_API_KEY, digest)
            conn.commit()
    return not outcome.refused
