"""The CALL that recreates a job, as text: ``jobtui export --format sql`` and the SQL
interface's views (``backends/mysql/sqlapi``), which write it in SQL.

Both sides write the same text byte for byte (tests/sqlapi/test_sql_views.py checks
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

SUBMIT_JOB = "submit_job"
_ESCAPES = str.maketrans(
    {"\\": "\\\\", "'": "\\'", "\x00": "\\0", "\x1a": "\\Z", "\n": "\\n", "\r": "\\r"}
)


class NotExpressible(ValueError):
    """The job cannot be recreated through the SQL interface (an action, a row with a problem)."""


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
