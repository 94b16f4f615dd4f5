"""The keeper: the admin-defined DEFINER procedure that seals an owner's routines.

An owner's session creates the DEFINER routines its jobs run as
(``backends.mysql.routines``), and MariaDB's ``automatic_sp_privileges`` gives it
EXECUTE and ALTER ROUTINE on each. With ALTER ROUTINE the owner could flip a
routine to ``SQL SECURITY INVOKER``, or drop it and create another body under
its name, between the runner's check and its call (issue 23). Right after
creating a routine, the owner's session therefore calls ``jobtui_seal``: whose
definer is the admin (its role when active) that ran ``jobtui init``, and which
revokes ALTER ROUTINE on that one routine from its definer. EXECUTE stays.
From then on the owner can neither alter nor drop nor replace it: its name is
taken for good by exactly the body the runner checked. The runner refuses a
routine whose owner still holds ALTER ROUTINE on it (``routines.verify``,
an exact-name lookup in ``mysql.procs_priv``).

Sealing is harmless to anyone's routine (it takes a right away from its
definer, never gives one), so it checks only the name: a job routine's name,
``jobtui_[wx]_<id>_<12 hex digits>``.

A sealed routine is dropped only through ``jobtui_retire(job, type, name)``
(after a change, at remove): by its owner's session (the views' owner rule
on the routine's definer), and only while it holds the job's named lock
(``GET_LOCK(name, 0)``, the lock every runner's claim takes before it checks
the job's routine and holds until the run is recorded). So no runner can be
between its check of that routine and its call while it goes: a runner that
checked it holds the lock (the retire leaves the routine, and the caller says
so), and a runner that claims afterwards checks a routine that is gone, or
one the owner made again, unsealed, and is refused. It also drops it only while
the job's row is neither running nor leased to a runner, and leases the row to
itself (``locked_by``/``locked_until``, cleared after) around the DROP: on a
Galera cluster ``GET_LOCK`` is node-local and a claim takes the row, certified at
commit, so the row is what keeps a runner on another node from its check.
"""

from __future__ import annotations

from jobtui.core import schema as schema_
from jobtui.core.backends.mysql.owner_index import owner_matches_invoker_sql
from jobtui.core.backends.mysql.sqlapi.runlog import lock_name_sql
from jobtui.core.backends.mysql.sqlapi.sqltext import BIN, NOW, quote_ident

SEAL = "jobtui_seal"
RETIRE = "jobtui_retire"
WHO = "jobtui_routine_definer"
HELPERS = (SEAL, RETIRE)
RETIRE_LEASE = 60  # seconds: the job row's lease while its routine is dropped (cleared after)
NAME_PATTERN = "^jobtui_[wx]_[0-9]+_[0-9a-f]{12}$"


def statements(schema_name: str, *, definer_role: bool) -> list[str]:
    """The keeper's routines in ``schema_name``: seal, who (a routine's definer), retire."""
    q = quote_ident(schema_name)
    definer = "DEFINER = CURRENT_ROLE " if definer_role else ""
    return [_seal(q, definer), _who(q, definer), _retire(q, definer)]


def _seal(q: str, definer: str) -> str:
    """``jobtui_seal``: revoke ALTER ROUTINE on one job routine from its definer."""
    return f"""CREATE OR REPLACE {definer}PROCEDURE {q}.`{SEAL}`(IN p_type VARCHAR(9), IN p_name VARCHAR(64))
MODIFIES SQL DATA SQL SECURITY DEFINER COMMENT 'jobtui: revoke ALTER ROUTINE on a job routine from its definer'
BEGIN
  DECLARE v_definer VARCHAR(400) {BIN};
  DECLARE v_host VARCHAR(255) {BIN};
  DECLARE v_user VARCHAR(140) {BIN};
  IF p_type IS NULL OR p_type NOT IN ('PROCEDURE', 'FUNCTION') OR p_name IS NULL
     OR CAST(p_name AS BINARY) NOT REGEXP '{NAME_PATTERN}' THEN
    SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'jobtui_seal: expected PROCEDURE or FUNCTION and a job routine name jobtui_[wx]_<id>_<12 hex digits>';
  END IF;
  SELECT MAX(DEFINER) INTO v_definer FROM information_schema.ROUTINES
    WHERE ROUTINE_SCHEMA = DATABASE() AND ROUTINE_TYPE = p_type AND ROUTINE_NAME = p_name;
  IF v_definer IS NULL THEN
    SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'jobtui_seal: no such routine';
  END IF;
  SET v_host = SUBSTRING_INDEX(v_definer, '@', -1);
  SET v_user = LEFT(v_definer, CHAR_LENGTH(v_definer) - CHAR_LENGTH(v_host) - 1);
  BEGIN
    -- 1141/1403: the definer holds no ALTER ROUTINE on it (already sealed, or an account
    -- whose rights on the schema cover it): nothing to revoke
    DECLARE CONTINUE HANDLER FOR 1141, 1403 BEGIN END;
    SET @jobtui_seal_sql = CONCAT('REVOKE ALTER ROUTINE ON ', p_type, ' {q}.`', p_name,
                                  '` FROM ', QUOTE(v_user), '@', QUOTE(v_host));
    PREPARE jobtui_seal_stmt FROM @jobtui_seal_sql;
    EXECUTE jobtui_seal_stmt;
    DEALLOCATE PREPARE jobtui_seal_stmt;
  END;
  SET @jobtui_seal_sql = NULL;
END"""


def _who(q: str, definer: str) -> str:
    """``jobtui_routine_definer``: who made the routine under a job routine name."""
    return f"""CREATE OR REPLACE {definer}FUNCTION {q}.`{WHO}`(p_type VARCHAR(9), p_name VARCHAR(64))
RETURNS VARCHAR(400) {BIN} NOT DETERMINISTIC READS SQL DATA SQL SECURITY DEFINER
COMMENT 'jobtui: who made the routine under a job routine name (a squatter)'
BEGIN
  IF p_type IS NULL OR p_type NOT IN ('PROCEDURE', 'FUNCTION') OR p_name IS NULL
     OR CAST(p_name AS BINARY) NOT REGEXP '{NAME_PATTERN}' THEN
    RETURN NULL;
  END IF;
  RETURN (SELECT MAX(DEFINER) FROM information_schema.ROUTINES
          WHERE ROUTINE_SCHEMA = DATABASE() AND ROUTINE_TYPE = p_type AND ROUTINE_NAME = p_name);
END"""


def _retire(q: str, definer: str) -> str:
    """``jobtui_retire``: drop a sealed job routine of the caller while no runner holds the job."""
    job = f"{q}.`{schema_.job.name}`"
    mine = owner_matches_invoker_sql("v_definer")
    return f"""CREATE OR REPLACE {definer}PROCEDURE {q}.`{RETIRE}`(IN p_job BIGINT, IN p_type VARCHAR(9), IN p_name VARCHAR(64))
MODIFIES SQL DATA SQL SECURITY DEFINER COMMENT 'jobtui: drop a sealed job routine of the caller while no runner holds the job'
BEGIN
  DECLARE v_definer VARCHAR(400) {BIN};
  DECLARE v_key VARCHAR(255) {BIN};
  DECLARE v_block VARBINARY(64);
  DECLARE v_lock VARCHAR(64) {BIN};
  DECLARE v_got INT DEFAULT 0;
  DECLARE v_rows INT DEFAULT 0;
  DECLARE v_running INT DEFAULT 0;
  DECLARE v_holder VARCHAR(190) {BIN};
  DECLARE v_until DATETIME(6);
  DECLARE v_leased INT DEFAULT 0;
  DECLARE v_me VARCHAR(190) {BIN} DEFAULT CONCAT('jobtui_retire:', CONNECTION_ID());
  DECLARE EXIT HANDLER FOR SQLEXCEPTION
  BEGIN
    ROLLBACK;
    IF v_leased = 1 THEN
      UPDATE {job} SET `locked_by` = NULL, `locked_until` = NULL
        WHERE `id` = p_job AND `locked_by` = v_me;
      COMMIT;
    END IF;
    IF v_got = 1 THEN DO RELEASE_LOCK(v_lock); END IF;
    RESIGNAL;
  END;
  IF p_job IS NULL OR p_type IS NULL OR p_type NOT IN ('PROCEDURE', 'FUNCTION') OR p_name IS NULL
     OR CAST(p_name AS BINARY) NOT REGEXP '{NAME_PATTERN}'
     OR CAST(p_name AS BINARY) NOT LIKE CAST(CONCAT('jobtui_', IF(p_type = 'PROCEDURE', 'w', 'x'), '\\_', p_job, '\\_%') AS BINARY) THEN
    SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'jobtui_retire: expected a job id, PROCEDURE or FUNCTION and that job''s routine name jobtui_[wx]_<id>_<12 hex digits>';
  END IF;
  SELECT MAX(DEFINER) INTO v_definer FROM information_schema.ROUTINES
    WHERE ROUTINE_SCHEMA = DATABASE() AND ROUTINE_TYPE = p_type AND ROUTINE_NAME = p_name;
  IF v_definer IS NULL THEN
    SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'jobtui_retire: no such routine';
  END IF;
  IF NOT ({mine}) THEN
    SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'jobtui_retire: not your routine';
  END IF;
  SELECT MAX(`value`) INTO v_key FROM {q}.`{schema_.secret.name}` WHERE `key` = '{schema_.LOCK_KEY}';
  IF v_key IS NULL OR v_key = '' THEN
    SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'jobtui_retire: no lock key in jobtui_secret yet (jobtui init)';
  END IF;
  {lock_name_sql("v_key", "p_job")}
  IF IFNULL(GET_LOCK(v_lock, 0), 0) <> 1 THEN
    SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'jobtui_retire: a runner holds the job now; the routine stays';
  END IF;
  SET v_got = 1;
  -- A Galera cluster's GET_LOCK is node-local: there the job row is the lock (a runner's
  -- claim sets `running` and its lease, certified at commit). The row is leased to this
  -- call before the DROP, so no runner on any node claims the job meanwhile, and a claim
  -- certified first makes the routine stay.
  START TRANSACTION;
  SELECT COUNT(*), IFNULL(MAX(`running`), 0), MAX(`locked_by`), MAX(`locked_until`)
    INTO v_rows, v_running, v_holder, v_until
    FROM {job} WHERE `id` = p_job FOR UPDATE;
  IF v_running <> 0 OR (v_holder IS NOT NULL AND v_until > {NOW}) THEN
    SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'jobtui_retire: a runner holds the job now; the routine stays';
  END IF;
  IF v_rows > 0 THEN
    UPDATE {job} SET `locked_by` = v_me, `locked_until` = {NOW} + INTERVAL {RETIRE_LEASE} SECOND
      WHERE `id` = p_job;
  END IF;
  COMMIT;
  SET v_leased = v_rows;
  SET @jobtui_retire_sql = CONCAT('DROP ', p_type, ' {q}.`', p_name, '`');
  PREPARE jobtui_retire_stmt FROM @jobtui_retire_sql;
  EXECUTE jobtui_retire_stmt;
  DEALLOCATE PREPARE jobtui_retire_stmt;
  SET @jobtui_retire_sql = NULL;
  IF v_leased = 1 THEN
    UPDATE {job} SET `locked_by` = NULL, `locked_until` = NULL
      WHERE `id` = p_job AND `locked_by` = v_me;
    COMMIT;  -- whatever the caller's autocommit: the lease must not outlive the call
  END IF;
  DO RELEASE_LOCK(v_lock);
END"""
