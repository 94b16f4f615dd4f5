"""The DBMS_JOB views: user_jobs, dba_jobs, user_jobs_running, dba_jobs_running (docs/sql.md).

``user_jobs`` and ``user_jobs_running`` read the operators' view
``jobtui_user_job``, so the rule that decides which jobs are the caller's is
the one docs/privileges.md describes and tests/security/test_security_borders.py tests;
``dba_jobs`` and ``dba_jobs_running`` read the table (admins only). The text
columns ``what``, ``schedule`` and ``interval`` are the ones
``jobtui.core.calltext`` writes in Python.
"""

from __future__ import annotations

from jobtui.core import schema
from jobtui.core.backends.mysql.operator_views import USER_JOB_VIEW
from jobtui.core.backends.mysql.sqlapi.sqltext import literal_sql
from jobtui.core.showtime import HALTED_PHASES, HALTED_STATUSES

USER_JOBS = "user_jobs"
ALL_JOBS = "all_jobs"
DBA_JOBS = "dba_jobs"
USER_JOBS_RUNNING = "user_jobs_running"
DBA_JOBS_RUNNING = "dba_jobs_running"
# granted to operators (admins read all five)
OPERATOR_VIEWS = (USER_JOBS, ALL_JOBS, USER_JOBS_RUNNING)
MAX_ARGS_SHOWN = 32  # model.MAX_ARGS: a valid row has no more


def args_sql(column: str) -> str:
    """SQL for a JSON list of text as SQL literals: ``'a', 'b'``.

    One term per possible argument rather than JSON_TABLE + GROUP_CONCAT, whose
    result the caller's ``group_concat_max_len`` would cut. Anything but a JSON
    array (a row written by hand) shows no arguments.
    """
    items = (f"JSON_UNQUOTE(JSON_EXTRACT({column}, '$[{i}]'))" for i in range(MAX_ARGS_SHOWN))
    terms = ", ".join(
        f"IF(JSON_LENGTH({column}) > {i}, {literal_sql(item)}, NULL)"
        for i, item in enumerate(items)
    )
    return (
        f"IF(JSON_VALID({column}) AND JSON_TYPE({column}) = 'ARRAY', CONCAT_WS(', ', {terms}), '')"
    )


def what_sql() -> str:
    """SQL for ``calltext.what_text``."""
    return (
        "CASE `what_kind` WHEN 'call' THEN "
        f"CONCAT('CALL ', `what_target`, '(', {args_sql('`what_args`')}, ')') "
        "ELSE `what_target` END"
    )


def schedule_sql() -> str:
    """SQL for ``calltext.schedule_text`` (``CAST(double AS CHAR)`` is Python's shortest repr)."""
    return (
        "CASE `schedule_kind` "
        "WHEN 'every' THEN CONCAT('every ', CAST(`schedule_interval` AS CHAR)) "
        "WHEN 'cron' THEN CONCAT_WS(' ', 'cron', `schedule_cron`, `schedule_tz`) "
        "WHEN 'expr' THEN CONCAT('expr ', `schedule_expr`) "
        "ELSE 'once' END"
    )


def interval_sql() -> str:
    """SQL for ``calltext.interval_text``."""
    return (
        "CASE `schedule_kind` WHEN 'expr' THEN `schedule_expr` WHEN 'once' THEN NULL "
        f"ELSE {schedule_sql()} END"
    )


def halted_sql() -> str:
    """SQL for ``showtime.halted``: no scheduled run starts until an operator acts."""
    statuses = ", ".join(f"'{st.value}'" for st in sorted(HALTED_STATUSES))
    phases = ", ".join(f"'{ph}'" for ph in sorted(HALTED_PHASES))
    return (
        f"(`status` IN ({statuses}) OR `intent` <> 'ENABLED' OR `broken` "
        f"OR `phase` IN ({phases}) OR `abort_requested`)"
    )


def shown_next_sql() -> str:
    """SQL for ``showtime.shown_next_run``: NULL for a halted job (the row keeps it)."""
    return f"IF({halted_sql()}, NULL, `next_run`)"


def _sec(value: str) -> str:
    """Oracle's *_SEC: HH:MM:SS of a date, SQL ``value`` (no %-format: the driver would
    read it)."""
    return f"LEFT(CAST(CAST({value} AS TIME) AS CHAR), 8)"


def jobs_select(base: str, schema_name: str) -> str:
    """The columns of DBA_JOBS (and jobtui's) over ``base``: the table or the operators' view."""
    schema_user = (
        "CASE `what_kind` WHEN 'call' THEN SUBSTRING_INDEX(`what_target`, '.', 1) "
        f"WHEN 'sql' THEN {literal_sql_text(schema_name)} ELSE NULL END"
    )
    columns = [
        ("job", "`id`"),
        ("log_user", "`owner`"),
        ("priv_user", "`owner`"),
        ("schema_user", schema_user),
        ("last_date", "`last_run`"),
        ("last_sec", _sec("`last_run`")),
        ("this_date", "`this_run`"),
        ("this_sec", _sec("`this_run`")),
        ("next_date", shown_next_sql()),
        ("next_sec", _sec(shown_next_sql())),
        ("total_time", "`total_time`"),
        ("broken", "IF(`broken`, 'Y', 'N')"),
        ("interval", interval_sql()),
        ("failures", "`failures`"),
        ("what", what_sql()),
        ("name", "`name`"),
        ("status", "`status`"),
        ("last_error", "`last_error`"),
        ("what_kind", "`what_kind`"),
        ("schedule", schedule_sql()),
        ("schedule_start", "`schedule_start`"),
        ("schedule_finish", "`schedule_finish`"),
        ("max_failures", "`max_failures`"),
        ("description", "`description`"),
        # what the operator asked and a runner has not carried out yet (pause, abort,
        # run_now): the status of a running job stays RUNNING meanwhile
        ("intent", "`intent`"),
        ("run_now", "IF(`run_now`, 'Y', 'N')"),
        ("abort_requested", "IF(`abort_requested`, 'Y', 'N')"),
        # where the job's alerts go: a JSON list of targets; NULL: the database's default
        ("alert", "`alert`"),
    ]
    cols = ", ".join(f"{sql} AS `{name}`" for name, sql in columns)
    return f"SELECT {cols} FROM `{base}`"


def running_select(base: str) -> str:
    """DBA_JOBS_RUNNING's columns (sid: the runner's connection id) and the runner's."""
    columns = [
        ("sid", "`runner_connection_id`"),
        ("job", "`id`"),
        ("failures", "`failures`"),
        ("last_date", "`last_run`"),
        ("last_sec", _sec("`last_run`")),
        ("this_date", "`this_run`"),
        ("this_sec", _sec("`this_run`")),
        ("name", "`name`"),
        ("log_user", "`owner`"),
        ("runner", "`runner_id`"),
        ("run_start", "`runner_start`"),
    ]
    cols = ", ".join(f"{sql} AS `{name}`" for name, sql in columns)
    return f"SELECT {cols} FROM `{base}` WHERE `running`"


def literal_sql_text(value: str) -> str:
    """A constant (the database's name) as SQL text in the DDL, whatever it holds or the
    sql_mode (no quote to close, no backslash to read)."""
    return f"CONVERT(X'{value.encode().hex()}' USING utf8mb4)"


def view_ddl(name: str, select: str, *, definer_role: bool) -> str:
    # DEFINER views: an operator has SELECT on user_jobs, not on jobtui_user_job's
    # columns it hides; USER() inside is still the caller's, so the filter holds.
    definer = "DEFINER = CURRENT_ROLE " if definer_role else ""
    return (
        f"CREATE OR REPLACE ALGORITHM = MERGE {definer}SQL SECURITY DEFINER VIEW `{name}` AS "
        f"{select}"
    )


def statements(schema_name: str, *, definer_role: bool) -> list[str]:
    """The statements that (re)create the views, in order."""
    user, table = USER_JOB_VIEW, schema.job.name
    return [
        view_ddl(USER_JOBS, jobs_select(user, schema_name), definer_role=definer_role),
        # DBMS_JOB's ALL_JOBS, the jobs the caller may act on: in jobtui every verb acts
        # on the caller's own jobs only, admins included (docs/sql.md), so these are
        # user_jobs' rows; an admin reads everyone's in dba_jobs
        view_ddl(ALL_JOBS, jobs_select(user, schema_name), definer_role=definer_role),
        view_ddl(DBA_JOBS, jobs_select(table, schema_name), definer_role=definer_role),
        view_ddl(USER_JOBS_RUNNING, running_select(user), definer_role=definer_role),
        view_ddl(DBA_JOBS_RUNNING, running_select(table), definer_role=definer_role),
    ]
