"""``user_export`` in SQL: the CALL that recreates a job, written on the server.

It writes what ``jobtui.core.calltext`` writes in Python, byte for byte
(tests/sqlapi/test_sql_views.py checks it), so that what a DBA gets from
``CALL ops.user_export(5, @c)`` is what ``jobtui export --format sql`` prints for
job 5 (docs/sql.md).
"""

from __future__ import annotations

from jobtui.core.backends.mysql.operator_views import USER_JOB_VIEW
from jobtui.core.backends.mysql.sqlapi.sqltext import literal_sql
from jobtui.core.backends.mysql.sqlapi.views import USER_JOBS
from jobtui.core.calltext import SUBMIT_JOB

USER_EXPORT = "user_export"


def user_export_sql(schema_name: str, *, definer_role: bool) -> str:
    """``user_export(IN job, OUT mycall)``: reads the caller's row through ``user_jobs``.

    SQL SECURITY INVOKER: the caller needs SELECT on ``user_jobs`` (operators and
    admins have it), and the view's USER() rule decides which jobs are its own,
    admins included (DBMS_JOB's USER_EXPORT acts on the caller's jobs only).
    """
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
