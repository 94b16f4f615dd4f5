"""Steering a job from SQL: pause, resume, abort and run_now (docs/sql.md).

A stored-procedure job runner is steered through procedures that change a
job's status, which its loop obeys; these are the same four verbs as
``jobtui pause/resume/abort/run-now`` and the console's keys, for a client
that has only SQL. Each writes exactly what ``jobtui.core.store.steering`` writes
over the caller's own row (owner = CURRENT_USER(), through the operators'
view, under its row lock), refuses what it refuses with the same words, and
commits. Running workers notice the row within a second, as they notice the
command line's writes: an abort of a run in flight is carried out by the
runner that holds the run (``KILL QUERY`` of its own connection), and a
run-now request is run by the next runner that sees it.

``run_now`` is asynchronous (the console's ``r``); ``run`` is DBMS_JOB.RUN,
in the caller's session.
"""

from __future__ import annotations

from jobtui.core.backends.mysql.operator_views import RUNNERS_VIEW
from jobtui.core.backends.mysql.sqlapi.sqltext import (
    BIN,
    COMMON_DECLARES,
    NOW,
    STATUS_COLUMNS,
    every_next,
    fail,
    own_job,
    quote_ident,
)
from jobtui.core.schedules import MAX_EVERY, MIN_EVERY

VERBS = ("pause", "resume", "abort", "run_now")
RUNNER_ALIVE = 15  # seconds: a heartbeat older than this is a dead runner (the pools' default)

_COLUMNS = (
    "`name`, `intent`, `phase`, `running`, `broken`, `remove_requested`, `schedule_kind`, "
    "`schedule_interval`, `schedule_start`, `schedule_finish`, `schedule_anchor`, `created`, "
    "`next_run`"
)
_INTO = (
    "v_name, v_intent, v_phase, v_running, v_broken, v_removing, v_kind, v_every, v_sstart, "
    "v_finish, v_anchor, v_created, v_next"
)
_DECLARES = f"""
  DECLARE v_found INT DEFAULT 0;
  DECLARE v_now DATETIME(6);
  DECLARE v_name VARCHAR(64) {BIN};
  DECLARE v_intent VARCHAR(10) {BIN};
  DECLARE v_phase VARCHAR(10) {BIN};
  DECLARE v_running INT;
  DECLARE v_broken INT;
  DECLARE v_removing INT;
  DECLARE v_kind VARCHAR(10) {BIN};
  DECLARE v_every DOUBLE;
  DECLARE v_sstart DATETIME(6);
  DECLARE v_finish DATETIME(6);
  DECLARE v_anchor DATETIME(6);
  DECLARE v_created DATETIME(6);
  DECLARE v_next DATETIME(6);
{COMMON_DECLARES}"""


def _job_words() -> str:
    """SQL: ``job 12 ('nightly')``, as the command line names a job in its refusals."""
    return "'job ', p_job, ' (', QUOTE(v_name), ')'"


def _refuse(rest: str) -> str:
    return fail(f"CONCAT({_job_words()}, {rest})")


def rearm_sql() -> str:
    """``steering.rearm`` over the variables: v_next and v_phase once the job is back on
    its schedule from the next slot strictly after now (no burst of missed runs).

    A cron job's slot is computed by a runner (croniter): next_run NULL in phase
    ENABLED, which a heartbeat arms (``sqlapi.arming``), as ``broken`` does.
    """
    grid = "IFNULL(v_anchor, IFNULL(v_sstart, v_created))"  # bookkeeping.anchor
    return f"""
  IF v_kind = 'every' AND v_every >= {MIN_EVERY} AND v_every <= {MAX_EVERY:.0f} THEN
    SET v_next = {every_next("v_every", grid, "v_now", "v_finish")};
  ELSEIF v_kind = 'cron' THEN
    SET v_next = NULL, v_phase = 'ENABLED';
  ELSEIF v_kind = 'once' THEN
    SET v_next = IF(v_phase = 'FINISHED', NULL, IF(v_next < v_now, v_now, v_next));
  ELSE
    SET v_next = IF(v_next IS NULL OR v_next < v_now, v_now, v_next);
  END IF;
  IF v_next IS NOT NULL AND v_finish IS NOT NULL AND v_next > v_finish THEN
    SET v_next = NULL;
  END IF;
  IF v_next IS NULL AND v_kind <> 'cron' THEN SET v_phase = 'FINISHED'; END IF;
"""


def _verb(schema: str, name: str, comment: str, checks_and_write: str, after: str = "") -> str:
    view = f"{quote_ident(schema)}.`jobtui_user_job`"
    removal = (
        "' is being removed: its run in flight is being aborted, and the job is deleted "
        "when that run has ended'"
    )
    body = f"""{_DECLARES}
  SET v_now = {NOW};
{own_job(schema, "p_job", _COLUMNS, _INTO)}
  IF v_removing THEN
    {_refuse(removal)}
  END IF;
{checks_and_write.replace("{view}", view)}
  COMMIT;{after}
"""
    return (
        f"CREATE OR REPLACE PROCEDURE {quote_ident(schema)}.{quote_ident(name)}(IN p_job BIGINT) "
        f"MODIFIES SQL DATA SQL SECURITY INVOKER COMMENT '{comment}'\nBEGIN\n{body}\nEND"
    )


_WHERE = "WHERE `id` = p_job AND `owner` = CURRENT_USER()"


def _pause(schema: str) -> str:
    write = f"""
  IF v_phase = 'FINISHED' THEN
    {_refuse("' is FINISHED: there is nothing to pause'")}
  END IF;
  IF v_intent = 'DISABLED' THEN
    {_refuse("' is DISABLED: enable it before pausing (jobtui enable)'")}
  END IF;
  UPDATE {{view}} SET `intent` = 'PAUSED', `updated` = {NOW}, `status` = {STATUS_COLUMNS}
    {_WHERE};
"""
    return _verb(schema, "pause", "jobtui: pause(job): no new run starts until resume", write)


def _resume(schema: str) -> str:
    write = f"""
  IF v_intent = 'DISABLED' THEN
    {_refuse("' is DISABLED: resume does not enable it (jobtui enable)'")}
  END IF;
  IF v_intent = 'PAUSED' OR v_phase = 'ABORTED' THEN
    SET v_phase = 'RESUMED';
{rearm_sql()}
    UPDATE {{view}} SET `intent` = 'ENABLED', `abort_requested` = 0, `phase` = v_phase,
        `next_run` = v_next, `updated` = {NOW}, `status` = {STATUS_COLUMNS}
      {_WHERE};
  END IF;
"""
    return _verb(
        schema, "resume", "jobtui: resume(job): back on the schedule from the next slot", write
    )


def _abort(schema: str) -> str:
    write = f"""
  IF v_phase = 'FINISHED' AND NOT v_running THEN
    UPDATE {{view}} SET `run_now` = 0, `updated` = {NOW} {_WHERE};
  ELSE
    UPDATE {{view}} SET `phase` = 'ABORTED', `run_now` = 0,
        `abort_requested` = IF(`running`, 1, `abort_requested`),
        `updated` = {NOW}, `status` = {STATUS_COLUMNS}
      {_WHERE};
  END IF;
"""
    return _verb(
        schema,
        "abort",
        "jobtui: abort(job): stop the run in flight and the schedule until resume",
        write,
    )


def _run_now(schema: str) -> str:
    # the runner list operators may read: a view that locks no row of jobtui_runner
    runner = f"{quote_ident(schema)}.`{RUNNERS_VIEW}`"
    write = f"""
  IF v_running THEN
    {_refuse("' is running now: run_now starts a run only when none is in flight; try again when it has finished (or abort it)'")}
  END IF;
  UPDATE {{view}} SET `run_now` = 1, `updated` = {NOW}, `status` = {STATUS_COLUMNS} {_WHERE};
"""
    idle = f"""
  IF NOT EXISTS (SELECT 1 FROM {runner} WHERE NOT `stopping`
                   AND `heartbeat` >= {NOW} - INTERVAL {RUNNER_ALIVE} SECOND) THEN
    SIGNAL SQLSTATE '01000' SET MESSAGE_TEXT =
      'no runner is alive: the run starts when one is (jobtui worker, or jobtui console --runners N)';
  END IF;"""
    return _verb(
        schema,
        "run_now",
        "jobtui: run_now(job): ask a runner to run the job once, now (asynchronous)",
        write,
        idle,
    )


def statements(schema_name: str) -> list[str]:
    """The statements that (re)create the four procedures."""
    return [_pause(schema_name), _resume(schema_name), _abort(schema_name), _run_now(schema_name)]
