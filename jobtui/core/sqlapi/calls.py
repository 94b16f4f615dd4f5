"""The CALL that recreates a job: ``user_export`` in SQL, ``jobtui export --format sql``.

Both sides write the same text byte for byte (tests/test_sql_views.py checks
it), so that what a DBA gets from ``CALL ops.user_export(5, @c)`` is what the
command line prints for job 5:

    CALL submit_job(@job, 'nightly', 'CALL app.purge(\\'30\\')', 'cron 0 3 * * * Europe/Paris',
                    '2026-01-01 00:00:00.000000', NULL)

Every value is a SQL string literal: MariaDB's ``QUOTE()`` (a backslash before
``\\``, ``'``, NUL and Ctrl-Z), and then newline and carriage return as ``\\n``
and ``\\r``, so that one CALL is one line. The call is not qualified with the
database: the file runs in whichever jobtui database the client uses, as an
export file is imported into any database (docs/sql.md).
"""

from __future__ import annotations

from datetime import UTC, datetime

from jobtui.core.jobdefs import exported_schedule
from jobtui.core.model import Job, Schedule, What
from jobtui.core.schema import USER_JOB_VIEW

SUBMIT_JOB = "submit_job"
USER_EXPORT = "user_export"
_ESCAPES = str.maketrans(
    {"\\": "\\\\", "'": "\\'", "\x00": "\\0", "\x1a": "\\Z", "\n": "\\n", "\r": "\\r"}
)


class NotExpressible(ValueError):
    """The job cannot be recreated through the SQL interface (an action, a row with a problem)."""


# ---------------------------------------------------------------------- Python side


def sql_literal(value: str | datetime | None) -> str:
    """``value`` as the SQL literal ``literal_sql`` makes of it on the server."""
    if value is None:
        return "NULL"
    if isinstance(value, datetime):
        if value.tzinfo is not None:
            value = value.astimezone(UTC).replace(tzinfo=None)
        value = value.strftime("%Y-%m-%d %H:%M:%S.%f")
    return "'" + value.translate(_ESCAPES) + "'"


def number_text(seconds: float) -> str:
    """A DOUBLE as ``CAST(x AS CHAR)`` shows it: shortest round trip, no ``.0``."""
    return str(int(seconds)) if float(seconds).is_integer() else repr(float(seconds))


def what_text(what: What) -> str:
    """The views' ``what``: ``CALL schema.proc('a', ...)``, the statement, or the action."""
    if what.kind == "call":
        return f"CALL {what.target}({', '.join(sql_literal(a) for a in what.args)})"
    return what.target


def schedule_text(schedule: Schedule) -> str:
    """The views' ``schedule``: ``submit_job``'s schedule argument for this schedule."""
    if schedule.kind == "every":
        return f"every {number_text(schedule.every or 0.0)}"
    if schedule.kind == "cron":
        return " ".join(p for p in ("cron", schedule.cron, schedule.tz) if p is not None)
    if schedule.kind == "expr":
        return f"expr {schedule.expr}"
    return "once"


def interval_text(schedule: Schedule) -> str | None:
    """The views' ``interval``: DBMS_JOB's interval (expr), NULL (once), else the schedule."""
    if schedule.kind == "expr":
        return schedule.expr
    if schedule.kind == "once":
        return None
    return schedule_text(schedule)


def recreate_call(job: Job) -> str:
    """The CALL (without ``;``) that recreates ``job``: ``user_export``'s ``mycall``."""
    if job.problem:
        raise NotExpressible(f"its row has a problem: {job.problem}")
    if job.what.kind == "action":
        raise NotExpressible(
            f"it runs the action {job.what.target}, which the SQL interface cannot submit "
            "(copy it with jobtui export as JSON or YAML and jobtui import)"
        )
    sched = exported_schedule(job)  # an expr or once job's next date, as its start
    values = (job.name, what_text(job.what), schedule_text(sched), sched.start, sched.finish)
    return f"CALL {SUBMIT_JOB}(@job, {', '.join(sql_literal(v) for v in values)})"


def comment_text(line: str) -> str:
    """``line`` with every control or line-breaking character escaped: one comment line."""
    return "".join(
        ch if ch.isprintable() or ch == " " else ch.encode("unicode_escape").decode("ascii")
        for ch in line
    )


# ---------------------------------------------------------------------- SQL side


def literal_sql(expr: str) -> str:
    """SQL for ``expr`` as a one-line SQL literal (``sql_literal`` in Python)."""
    # CHAR(n USING utf8mb4): a plain CHAR(n) is a binary string and would make the
    # result binary; no backslash in the DDL either, whatever the sql_mode.
    nl, cr, bs = (f"CHAR({n} USING utf8mb4)" for n in (10, 13, 92))
    return f"REPLACE(REPLACE(QUOTE({expr}), {nl}, CONCAT({bs}, 'n')), {cr}, CONCAT({bs}, 'r'))"


def user_export_sql(schema_name: str, *, definer_role: bool) -> str:
    """``user_export(IN job, OUT mycall)``: reads the caller's row through ``user_jobs``.

    SQL SECURITY INVOKER: the caller needs SELECT on ``user_jobs`` (operators and
    admins have it), and the view's USER() rule decides which jobs are its own,
    admins included (DBMS_JOB's USER_EXPORT acts on the caller's jobs only).
    """
    from jobtui.core.sqlapi.views import USER_JOBS

    definer = "DEFINER = CURRENT_ROLE " if definer_role else ""
    values = ", ".join(
        literal_sql(f"v_{c}") for c in ("name", "what", "schedule", "start", "finish")
    )
    return f"""CREATE OR REPLACE {definer}PROCEDURE `{USER_EXPORT}`(IN job BIGINT, OUT mycall TEXT)
SQL SECURITY INVOKER
READS SQL DATA
COMMENT 'the CALL that recreates one of your jobs (docs/sql.md)'
BEGIN
  DECLARE v_found INT DEFAULT 0;
  DECLARE v_kind, v_name, v_schedule VARCHAR(1100) CHARACTER SET utf8mb4;
  DECLARE v_what LONGTEXT CHARACTER SET utf8mb4;
  DECLARE v_start, v_finish, v_next DATETIME(6);
  DECLARE v_skind VARCHAR(10) CHARACTER SET utf8mb4;
  DECLARE v_message VARCHAR(512) CHARACTER SET utf8mb4;
  SET mycall = NULL;
  SELECT COUNT(*), MAX(u.what_kind), MAX(u.name), MAX(u.what), MAX(u.schedule),
         MAX(u.schedule_start), MAX(u.schedule_finish), MAX(j.schedule_kind), MAX(j.next_run)
    INTO v_found, v_kind, v_name, v_what, v_schedule, v_start, v_finish, v_skind, v_next
    FROM `{USER_JOBS}` AS u JOIN `{USER_JOB_VIEW}` AS j ON j.id = u.job WHERE u.job = job;
  -- jobdefs.exported_schedule: an expr or once job's stored next date (the views show
  -- none for a halted job) carried as its start when ahead and later, or it would run at once
  IF v_skind IN ('expr', 'once') AND v_next > UTC_TIMESTAMP(6)
     AND (v_start IS NULL OR v_next > v_start) THEN
    SET v_start = v_next;
  END IF;
  IF v_found = 0 THEN
    SET v_message = CONCAT('job ', COALESCE(job, 'NULL'),
      ' is not one of your jobs (no such job, or another account owns it)');
    SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = v_message;
  END IF;
  IF v_kind = 'action' THEN
    SET v_message = CONCAT('job ', job, ' runs the action ', LEFT(v_what, 128),
      ', which the SQL interface cannot submit (copy it with jobtui export as JSON or YAML',
      ' and jobtui import)');
    SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = v_message;
  END IF;
  SET mycall = CONCAT('CALL {SUBMIT_JOB}(@job, ', CONCAT_WS(', ', {values}), ')');
END"""


def statements(schema_name: str, *, definer_role: bool) -> list[str]:
    """The statements that (re)create ``user_export``."""
    return [user_export_sql(schema_name, definer_role=definer_role)]
