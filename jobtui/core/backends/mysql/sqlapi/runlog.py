"""The run log of ``CALL run(job)``: two SQL SECURITY DEFINER helpers.

An operator may read its runs (``jobtui_user_run``) but not write them, and may
not read the key of the jobs' lock names. ``run`` (INVOKER: the job's
statement executes with the caller's rights) therefore starts and ends its run
through these helpers, whose definer is the installing admin (its role when
active, as for the views). Each acts only on a job whose owner is the invoking
account (``USER()``, the views' rule), takes the job's named lock on the
caller's connection exactly as a runner's claim does (so no runner runs the
job meanwhile, and a reaper sees the run alive while that connection lives),
and writes what a runner writes. They never execute anything of the job.

The run's runner is ``sql-session:<CONNECTION_ID()>`` (``SQL_SESSION_PREFIX``):
a reaper releases such a run, as lost, only once the job's lock is free, i.e.
once that session is gone (killed, disconnected).
"""

from __future__ import annotations

from jobtui.core import schema as schema_
from jobtui.core.backends.mysql.owner_index import (
    OWNER_USER,
    owner_indexed_from,
    owner_matches_invoker_sql,
)
from jobtui.core.backends.mysql.sqlapi.sqltext import (
    BIN,
    NOW,
    STATUS_COLUMNS,
    every_next,
    fail,
    quote_ident,
)
from jobtui.core.lock_names import LOCK_PREFIX, MAX_LOCK_NAME, NODE_EXPR

BEGIN = "jobtui_sql_run_begin"
END = "jobtui_sql_run_end"
HELPERS = (BEGIN, END)
SQL_SESSION_PREFIX = "sql-session:"
MAX_ERROR_LENGTH = 8000


def _xor_pad(key: str, pad: str) -> str:
    """SQL for the 64-byte block ``key`` XOR ``pad`` (one byte repeated), as binary."""
    chunks = []
    for i in range(8):
        part = f"SUBSTRING({key}, {i * 8 + 1}, 8)"
        chunks.append(
            f"LPAD(CONV(CAST(CONV(HEX({part}), 16, 10) AS UNSIGNED) ^ 0x{pad * 8}, 10, 16), 16, '0')"
        )
    return f"UNHEX(CONCAT({', '.join(chunks)}))"


def lock_name_sql(key: str, job: str) -> str:
    """``lock_names.lock_name`` in SQL: ``jobtui:`` + hex HMAC-SHA256(key, '<db>:<job id>')."""
    block = (
        f"RPAD(IF(LENGTH({key}) > 64, UNHEX(SHA2({key}, 256)), CAST({key} AS BINARY)), 64, X'00')"
    )
    message = f"CAST(CONCAT(DATABASE(), ':', {job}) AS BINARY)"
    inner = f"UNHEX(SHA2(CONCAT({_xor_pad('v_block', '36')}, {message}), 256))"
    outer = f"SHA2(CONCAT({_xor_pad('v_block', '5c')}, {inner}), 256)"
    return (
        f"SET v_block = {block};\n"
        f"  SET v_lock = LEFT(CONCAT('{LOCK_PREFIX}:', {outer}), {MAX_LOCK_NAME});"
    )


def statements(schema_name: str, *, definer_role: bool) -> list[str]:
    return [_begin(schema_name, definer_role), _end(schema_name, definer_role)]


def _head(schema: str, name: str, params: str, definer_role: bool, comment: str) -> str:
    definer = "DEFINER = CURRENT_ROLE " if definer_role else ""
    return (
        f"CREATE OR REPLACE {definer}PROCEDURE {quote_ident(schema)}.{quote_ident(name)}"
        f"({params}) MODIFIES SQL DATA SQL SECURITY DEFINER COMMENT '{comment}'\n"
    )


def _declares() -> str:
    return f"""
  DECLARE v_msg TEXT {BIN};
  DECLARE v_found INT DEFAULT 0;
  DECLARE v_name VARCHAR(64) {BIN};
  DECLARE v_owner VARCHAR(190) {BIN};
  DECLARE v_running INT;
  DECLARE v_key VARCHAR(255) {BIN};
  DECLARE v_block VARBINARY(64);
  DECLARE v_lock VARCHAR(64) {BIN};
  DECLARE v_got INT DEFAULT 0;
  DECLARE v_rid VARCHAR(190) {BIN};
"""


def _read_key(q: str) -> str:
    return f"""
  SELECT MAX(`value`) INTO v_key FROM {q}.`{schema_.secret.name}` WHERE `key` = '{schema_.LOCK_KEY}';
  IF v_key IS NULL OR v_key = '' THEN
    {fail("'no lock key in jobtui_secret yet: an admin runs jobtui init once on this database'")}
  END IF;
  {lock_name_sql("v_key", "p_job")}
"""


def _begin(schema: str, definer_role: bool) -> str:
    q = quote_ident(schema)
    mine = owner_matches_invoker_sql("`owner`", f"`{OWNER_USER}`")
    running = (
        "CONCAT('job ', p_job, ' is running now (a runner or another session holds it): run "
        "starts a run only when none is in flight; try again when it has finished')"
    )
    return _head(
        schema,
        BEGIN,
        "IN p_job BIGINT, OUT p_slot DATETIME(6)",
        definer_role,
        "jobtui internal: starts the run log entry of CALL run(job)",
    ) + (
        f"""BEGIN
{_declares()}
  DECLARE EXIT HANDLER FOR SQLEXCEPTION
  BEGIN
    ROLLBACK;
    IF v_got = 1 THEN DO RELEASE_LOCK(v_lock); END IF;
    RESIGNAL;
  END;
  SET p_slot = {NOW}, v_rid = CONCAT('{SQL_SESSION_PREFIX}', CONNECTION_ID());
  START TRANSACTION;
  SELECT 1, `name`, `owner`, `running` INTO v_found, v_name, v_owner, v_running
    FROM {q}.{owner_indexed_from("jobtui_job")} WHERE `id` = p_job AND {mine} FOR UPDATE;
  IF v_found = 0 THEN
    {fail("CONCAT('job ', IFNULL(p_job, 'NULL'), ' is not one of your jobs (no such job, or another account owns it)')")}
  END IF;
  IF v_running THEN
    {fail(running)}
  END IF;
{_read_key(q)}
  IF IFNULL(GET_LOCK(v_lock, 0), 0) <> 1 THEN
    {fail(running)}
  END IF;
  SET v_got = 1;
  UPDATE {q}.`jobtui_job` SET `running` = 1, `this_run` = p_slot, `runner_id` = v_rid,
      `runner_connection_id` = CONNECTION_ID(), `runner_node` = {NODE_EXPR},
      `runner_start` = p_slot, `runner_finish` = NULL,
      `last_cycle_start` = p_slot, `run_now` = 0, `abort_requested` = 0, `updated` = p_slot,
      `status` = 'RUNNING'
    WHERE `id` = p_job AND `running` = 0;
  IF ROW_COUNT() <> 1 THEN
    {fail(running)}
  END IF;
  INSERT INTO {q}.`jobtui_run` (`job_id`, `job_name`, `owner`, `scheduled_for`, `started`,
      `outcome`, `runner`, `skipped`, `manual`)
    VALUES (p_job, v_name, v_owner, p_slot, p_slot, 'running', v_rid, 0, 1);
  COMMIT;
END"""
    )


def _end(schema: str, definer_role: bool) -> str:
    q = quote_ident(schema)
    mine = owner_matches_invoker_sql("`owner`", f"`{OWNER_USER}`")
    grid = "IFNULL(v_sstart, IFNULL(v_anchor, v_created))"
    return _head(
        schema,
        END,
        f"IN p_job BIGINT, IN p_slot DATETIME(6), IN p_ok BOOLEAN, IN p_error LONGTEXT {BIN}, "
        "IN p_next DATETIME(6), IN p_next_given BOOLEAN",
        definer_role,
        "jobtui internal: records the end of a CALL run(job)",
    ) + (
        f"""BEGIN
{_declares()}
  DECLARE v_fin DATETIME(6);
  DECLARE v_dur DOUBLE;
  DECLARE v_matched INT DEFAULT 0;
  DECLARE v_removing INT;
  DECLARE v_phase VARCHAR(10) {BIN};
  DECLARE v_kind VARCHAR(10) {BIN};
  DECLARE v_every DOUBLE;
  DECLARE v_sstart DATETIME(6);
  DECLARE v_finish DATETIME(6);
  DECLARE v_anchor DATETIME(6);
  DECLARE v_created DATETIME(6);
  DECLARE v_next DATETIME(6);
  DECLARE v_failures INT;
  DECLARE v_max INT;
  DECLARE v_broken INT;
  DECLARE v_reason TEXT {BIN};
  DECLARE v_error LONGTEXT {BIN};
  DECLARE EXIT HANDLER FOR SQLEXCEPTION
  BEGIN
    ROLLBACK;
    IF v_lock IS NOT NULL THEN DO RELEASE_LOCK(v_lock); END IF;
    RESIGNAL;
  END;
  SET v_fin = {NOW}, v_rid = CONCAT('{SQL_SESSION_PREFIX}', CONNECTION_ID());
  SET v_dur = GREATEST(0, TIMESTAMPDIFF(MICROSECOND, p_slot, v_fin) / 1000000);
  SET v_error = IF(p_ok, NULL, LEFT(IFNULL(p_error, 'failed'), {MAX_ERROR_LENGTH}));
  START TRANSACTION;
  -- only the run this session started (a reaper may have called it lost: we know better)
  UPDATE {q}.{owner_indexed_from("jobtui_run")} SET `outcome` = IF(p_ok, 'ok', 'failed'), `finished` = v_fin,
      `duration` = v_dur, `error` = v_error
    WHERE `job_id` = p_job AND `scheduled_for` = p_slot AND `runner` = v_rid
      AND `outcome` IN ('running', 'lost') AND {mine};
  SET v_matched = ROW_COUNT();
  SELECT 1, `running`, `remove_requested`, `phase`, `schedule_kind`, `schedule_interval`,
      `schedule_start`, `schedule_finish`, `schedule_anchor`, `created`, `next_run`,
      `failures`, `max_failures`, `broken`
    INTO v_found, v_running, v_removing, v_phase, v_kind, v_every, v_sstart, v_finish,
      v_anchor, v_created, v_next, v_failures, v_max, v_broken
    FROM {q}.{owner_indexed_from("jobtui_job")}
    WHERE `id` = p_job AND `runner_id` = v_rid AND {mine} FOR UPDATE;
  IF v_matched = 1 AND v_found = 1 AND v_running THEN
    IF v_removing THEN
      DELETE FROM {q}.`jobtui_job` WHERE `id` = p_job;  -- removed while it ran
    ELSE
      IF p_ok THEN
        SET v_failures = 0, v_broken = 0, v_reason = NULL;
        IF v_phase NOT IN ('FINISHED', 'ABORTED') THEN
          IF p_next_given THEN
            SET v_next = p_next;
          ELSEIF v_phase = 'ERROR' AND v_kind = 'every' AND v_every BETWEEN 0.1 AND 3162240000 THEN
            SET v_next = {every_next("v_every", grid, "v_fin", "v_finish")};
          END IF;
          SET v_phase = IF(v_next IS NULL, 'FINISHED', 'SLEEPING');
        END IF;
      ELSE
        SET v_failures = v_failures + 1;
        IF v_failures >= v_max THEN
          SET v_broken = 1, v_reason = LEFT(CONCAT('failed ', v_failures,
            ' times in a row; last error: ', v_error), {MAX_ERROR_LENGTH});
        END IF;
        IF v_phase NOT IN ('FINISHED', 'ABORTED') THEN
          IF v_phase = 'ERROR' THEN
            -- next_run is the last failure's retry, not a slot (bookkeeping._regular_next):
            -- an every job's next grid slot; cron, expr and once: the backoff alone
            SET v_next = IF(v_kind = 'every' AND v_every BETWEEN 0.1 AND 3162240000,
              {every_next("v_every", grid, "v_fin", "v_finish")}, NULL);
          END IF;
          SET v_phase = 'ERROR';
          -- DBMS_JOB's backoff: 1, 2, 4 ... minutes, never after the next slot
          SET v_next = LEAST(IFNULL(v_next, CAST('9999-12-31' AS DATETIME(6))),
            v_fin + INTERVAL LEAST(POW(2, LEAST(v_failures - 1, 20)), 1440) MINUTE);
          IF v_finish IS NOT NULL AND v_next > v_finish THEN
            SET v_next = NULL, v_phase = 'FINISHED';  -- no retry after the window
          END IF;
        END IF;
      END IF;
      UPDATE {q}.`jobtui_job` SET `running` = 0, `this_run` = NULL, `runner_finish` = v_fin,
          `last_outcome` = IF(p_ok, 'ok', 'failed'), `last_error` = v_error,
          `last_duration` = v_dur, `last_cycle_finish` = v_fin, `abort_requested` = 0,
          `failures` = v_failures, `broken` = v_broken,
          `broken_reason` = IF(p_ok, NULL, IF(v_reason IS NULL, `broken_reason`, v_reason)),
          `cycles` = `cycles` + IF(p_ok, 1, 0),
          `last_run` = IF(p_ok, p_slot, `last_run`),
          `total_time` = `total_time` + v_dur,
          `phase` = v_phase, `next_run` = v_next, `updated` = v_fin,
          `status` = {STATUS_COLUMNS}
        WHERE `id` = p_job;
    END IF;
  END IF;
{_read_key(q)}
  DO RELEASE_LOCK(v_lock);
  COMMIT;
END"""
    )
