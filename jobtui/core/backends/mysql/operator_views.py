"""The operators' views (MySQL/MariaDB): ``jobtui_user_job`` and ``jobtui_user_run``, the
rows whose owner is the invoking account, and ``jobtui_runners``, the runner list read
without locking it. Operators are granted these and not the tables (docs/privileges.md).
"""

from __future__ import annotations

import hashlib

from sqlalchemy import Column, MetaData, Table, text
from sqlalchemy.engine import Engine

from jobtui.core import accounts
from jobtui.core.backends.mysql.owner_index import (
    OWNER_USER,
    owner_indexed_from,
    owner_matches_invoker_sql,
)
from jobtui.core.dberrors import unless_refused
from jobtui.core.schema import BOOKKEEPING_COLUMNS, job, put_meta, run, runner, select_meta

USER_JOB_VIEW = "jobtui_user_job"
USER_RUN_VIEW = "jobtui_user_run"
# The runner list as operators read it: a view that cannot lock the table's rows
# (TEMPTABLE: a locking read through it locks nothing of jobtui_runner), so that no
# operator's LOCK IN SHARE MODE makes the runners' heartbeats wait.
RUNNERS_VIEW = "jobtui_runners"
VIEWS_KEY = "views"  # jobtui_meta: a digest of the views' DDL (recreated when it changes)

# Not in ``metadata``: create_all must never make them tables.
view_metadata = MetaData()


def _view_table(name: str, base: Table) -> Table:
    return Table(
        name,
        view_metadata,
        *(Column(c.name, c.type, primary_key=c.primary_key) for c in base.columns),
    )


user_job = _view_table(USER_JOB_VIEW, job)
user_run = _view_table(USER_RUN_VIEW, run)
runners_view = _view_table(RUNNERS_VIEW, runner)


def runners_view_ddl(*, definer_role: bool = False) -> str:
    definer = "DEFINER = CURRENT_ROLE " if definer_role else ""
    cols = ", ".join(f"`{c.name}`" for c in runner.columns)
    return (
        f"CREATE OR REPLACE ALGORITHM = TEMPTABLE {definer}SQL SECURITY DEFINER VIEW "
        f"`{RUNNERS_VIEW}` AS SELECT {cols} FROM `{runner.name}`"
    )


def operator_columns() -> list[str]:
    """The job columns an operator may write through its view (INSERT and UPDATE)."""
    return [c.name for c in job.columns if c.name not in BOOKKEEPING_COLUMNS and c.name != "id"]


def view_select(base: Table) -> str:
    """The operators' view of ``base``: the rows whose owner is the invoking account.

    The owner column holds CURRENT_USER() of the submitting session
    (``user@host-pattern``); ``owner_matches_invoker_sql`` says when that is
    the invoking session's account. Through the check option an operator can
    write no other owner (docs/privileges.md).
    """
    cols = ", ".join(f"`{c.name}`" for c in base.columns)
    mine = owner_matches_invoker_sql("`owner`", f"`{OWNER_USER}`")
    return f"SELECT {cols} FROM {owner_indexed_from(base.name)} WHERE {mine}"


def view_ddl(name: str, base: Table, *, definer_role: bool = False) -> str:
    # CASCADED CHECK OPTION: an INSERT or UPDATE through the view can only write
    # rows the view shows (the invoking user's own).
    definer = "DEFINER = CURRENT_ROLE " if definer_role else ""
    return (
        f"CREATE OR REPLACE ALGORITHM = MERGE {definer}SQL SECURITY DEFINER VIEW `{name}` AS "
        f"{view_select(base)} WITH CASCADED CHECK OPTION"
    )


def views_digest() -> str:
    body = "\n".join([*(view_select(t) for t in (job, run)), runners_view_ddl()])
    return hashlib.sha1(body.encode()).hexdigest()[:16]


def ensure_views(engine: Engine) -> bool:
    """(Re)create the operators' views when missing or outdated; False if not allowed.

    A runner account may not create views: it leaves them as they are. The
    definer is the database's admin role (``jobtui_admin_<db>``) when that is the
    session's current role
    (a definer's default role is not active inside a view), else the account.
    """
    digest = views_digest()
    with engine.connect() as conn:
        have = conn.execute(
            text(
                "SELECT COUNT(*) FROM information_schema.VIEWS "
                "WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME IN (:j, :r, :n)"
            ),
            {"j": USER_JOB_VIEW, "r": USER_RUN_VIEW, "n": RUNNERS_VIEW},
        ).scalar_one()
        stored = conn.execute(select_meta(VIEWS_KEY)).scalar()
        conn.rollback()
        if have == 3 and stored == digest:
            return True
        role, database = conn.execute(text("SELECT CURRENT_ROLE(), DATABASE()")).one()
        definer_role = role is not None and role == accounts.admin_role(str(database))
        with unless_refused(conn) as outcome:
            for name, base in ((USER_JOB_VIEW, job), (USER_RUN_VIEW, run)):
                conn.execute(text(view_ddl(name, base, definer_role=definer_role)))
            conn.execute(text(runners_view_ddl(definer_role=definer_role)))
            put_meta(conn, VIEWS_KEY, digest)
            conn.commit()
    return not outcome.refused
