"""The owner's user part, stored and indexed (MySQL/MariaDB), and the SQL that compares
an owner with the invoking account: the operators' views (``backends.mysql.operator_views``) and
the SQL interface test ownership through them (docs/privileges.md, "Locks").
"""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.engine import Engine

from jobtui.core.dberrors import unless_refused
from jobtui.core.schema import job


def account_user_sql(expr: str) -> str:
    """SQL for the user part of ``user@host`` text: everything before the LAST @.

    Host names never hold an @, user names may: ``SUBSTRING_INDEX(x, '@', 1)``
    would make 'bob@x'@'%' an owner of bob's jobs.
    """
    return f"SUBSTRING({expr}, 1, CHAR_LENGTH({expr}) - CHAR_LENGTH(SUBSTRING_INDEX({expr}, '@', -1)) - 1)"


def account_host_sql(expr: str) -> str:
    """SQL for the host part of ``user@host`` text: everything after the LAST @."""
    return f"SUBSTRING_INDEX({expr}, '@', -1)"


# The owner's user part, stored (a generated column) and indexed on MySQL/MariaDB, on the
# job table and the run log: every owner test of the operators' views and of the SQL
# interface compares it to the user part of USER() through this index (``FORCE INDEX``),
# so a locking read (``FOR UPDATE``, ``LOCK IN SHARE MODE``) through them reaches only
# rows of the invoker's user name, never another owner's (docs/privileges.md, "Locks").
OWNER_USER = "owner_user"
OWNER_INDEX = {"jobtui_job": "ix_jobtui_job_owner", "jobtui_run": "ix_jobtui_run_owner"}
# the index's columns after OWNER_USER: a job by id, a job's runs, in one range each
OWNER_INDEX_REST = {"jobtui_job": "`id`", "jobtui_run": "`job_id`, `id`"}


def owner_user_ddl(table: str) -> str:
    """``ALTER TABLE`` adding the stored user part of ``owner`` and its index (MySQL)."""
    expr = account_user_sql("`owner`")
    return (
        f"ALTER TABLE `{table}` ADD COLUMN `{OWNER_USER}` VARBINARY(760) "
        f"AS (CAST({expr} AS BINARY)) STORED, "
        f"ADD INDEX `{OWNER_INDEX[table]}` (`{OWNER_USER}`, {OWNER_INDEX_REST[table]})"
    )


def owner_indexed_from(table: str) -> str:
    """``FROM`` text of ``table`` that reads it only through its owner index."""
    return f"`{table}` FORCE INDEX (`{OWNER_INDEX[table]}`)"


def owner_matches_invoker_sql(owner: str, owner_user: str | None = None) -> str:
    """SQL true when ``owner`` (``user@host-pattern``) may be the invoking session's account.

    Inside a SQL SECURITY DEFINER view CURRENT_USER() is the definer; USER() is
    the invoking ``user@client-host``, the only trace of the invoker there is.
    An owner is one account (user AND host), so:

    - the user parts are equal byte for byte: compared as binary strings, which
      do not pad (``'alice '`` is not ``alice``, as utf8mb4_bin's PAD SPACE would
      have it) and do not fold case;
    - the client's host matches the owner's host pattern as the server matches
      an account's host: ``LIKE`` (% and _), case-insensitively, or an
      ``IP/NETMASK`` host. ``alice@otherhost`` is refused to a session from
      anywhere else.
    """
    ouser, uuser = account_user_sql(owner), account_user_sql("USER()")
    user_test = f"CAST({ouser} AS BINARY) = CAST({uuser} AS BINARY)"
    if owner_user is not None:  # the stored, indexed user part: the same bytes
        user_test = f"{owner_user} = CAST({uuser} AS BINARY)"
    ohost, uhost = account_host_sql(owner), account_host_sql("USER()")
    netmask = (
        f"(LOCATE('/', {ohost}) > 0 AND INET_ATON({uhost}) & "
        f"INET_ATON(SUBSTRING_INDEX({ohost}, '/', -1)) = "
        f"INET_ATON(SUBSTRING_INDEX({ohost}, '/', 1)))"
    )
    return f"{user_test} AND (LOWER({uhost}) LIKE LOWER({ohost}) OR {netmask})"


# Their values in a new row, as the server's defaults (a new row through the view names
# none of them).
BOOKKEEPING_DEFAULTS = {"running": "0", "cycles": "0", "total_time": "0"}


def ensure_owner_index(engine: Engine) -> bool:
    """Add the stored, indexed user part of the owner to the job table and the run log,
    and the server defaults of the bookkeeping a new row through the view leaves out, when
    missing (MySQL/MariaDB); False if this account may not (a runner)."""
    with engine.connect() as conn:
        have = {
            str(t)
            for (t,) in conn.execute(
                text(
                    "SELECT TABLE_NAME FROM information_schema.COLUMNS "
                    "WHERE TABLE_SCHEMA = DATABASE() AND COLUMN_NAME = :c"
                ),
                {"c": OWNER_USER},
            )
        }
        conn.rollback()
        defaults = {
            str(name): value
            for name, value in conn.execute(
                text(
                    "SELECT COLUMN_NAME, COLUMN_DEFAULT FROM information_schema.COLUMNS "
                    "WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = :t"
                ),
                {"t": job.name},
            )
        }
        conn.rollback()
        missing = [c for c in BOOKKEEPING_DEFAULTS if defaults.get(c) in (None, "NULL")]
        with unless_refused(conn) as outcome:
            for table in OWNER_INDEX:
                if table not in have:
                    conn.execute(text(owner_user_ddl(table)))
            if missing:  # the bookkeeping of a row inserted through the view
                sets = ", ".join(
                    f"ALTER COLUMN `{c}` SET DEFAULT {BOOKKEEPING_DEFAULTS[c]}" for c in missing
                )
                conn.execute(text(f"ALTER TABLE `{job.name}` {sets}"))
    return not outcome.refused
