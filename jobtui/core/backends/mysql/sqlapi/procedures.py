"""The DBMS_JOB procedures: submit, change, broken, run, remove, ... (docs/sql.md).

Every public procedure is ``SQL SECURITY INVOKER``: it runs with the caller's
rights, reads and writes the caller's own rows through the operators' view
``jobtui_user_job`` (owner = CURRENT_USER(), as the store writes it), and
creates the job's DEFINER routines in the caller's session exactly as
``backends.mysql.routines`` does (same names, digests and bodies), so that the
runners' check on ``mysql.proc`` passes unchanged. Only the run log needs
more than an operator may do: ``run`` records its run through two small
DEFINER helpers (``runlog``).
"""

from __future__ import annotations

from jobtui.core.backends.mysql.routines import FUNC_PREFIX, PROC_PREFIX
from jobtui.core.backends.mysql.sqlapi import runlog, steer
from jobtui.core.backends.mysql.sqlapi.sqltext import (
    BIN,
    COMMON_DECLARES,
    NOW,
    ROUTINE_DECLARES,
    STATUS_COLUMNS,
    WHAT_DECLARES,
    check_date,
    check_expr,
    drop_stale,
    every_next,
    fail,
    lit,
    own_job,
    parse_what,
    quote_ident,
    routines_for_job,
    status_case,
)
from jobtui.core.schedules import MAX_EVERY, MIN_EVERY

# The procedures operators and admins may CALL (jobtui grant gives EXECUTE on exactly these).
PUBLIC = (
    "submit",
    "submit_named",
    "submit_job",
    "remove",
    "change",
    "what",
    "next_date",
    "set_interval",
    "broken",
    "run",
    *steer.VERBS,  # the steering verbs: pause, resume, abort, run_now
    "set_alert",  # jobtui.core.backends.mysql.sqlapi.setalert
)

REMOVE_WAIT = 10.0  # seconds remove waits for a run in flight to end (as the command line)
_NAME_RE = "^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$"
_ACCEPTED_SCHEDULES = (
    "expected every <seconds>, cron <5 or 6 fields> [<IANA zone>], expr <SQL date "
    "expression> or once"
)


def statements(schema_name: str, *, definer_role: bool) -> list[str]:
    """The statements that (re)create the procedures, in order (CREATE OR REPLACE keeps
    the EXECUTE grants on them; DROP would revoke them)."""
    return [
        *runlog.statements(schema_name, definer_role=definer_role),
        _define(schema_name, "submit"),
        _define(schema_name, "submit_named"),
        _define(schema_name, "submit_job"),
        _remove(schema_name),
        _change(schema_name),
        _what(schema_name),
        _next_date(schema_name),
        _set_interval(schema_name),
        _broken(schema_name),
        _run(schema_name),
        *steer.statements(schema_name),
    ]


def _proc(schema: str, name: str, params: str, comment: str, body: str) -> str:
    return (
        f"CREATE OR REPLACE PROCEDURE {quote_ident(schema)}.{quote_ident(name)}({params}) "
        f"MODIFIES SQL DATA SQL SECURITY INVOKER COMMENT {lit(comment)}\nBEGIN\n{body}\nEND"
    )


DEFINE_DECLARES = f"""
  DECLARE v_found INT DEFAULT 0;
  DECLARE v_job BIGINT;
  DECLARE v_name VARCHAR(64) {BIN};
  DECLARE v_now DATETIME(6);
  DECLARE v_skind VARCHAR(10) {BIN};
  DECLARE v_every DOUBLE;
  DECLARE v_cron VARCHAR(200) {BIN};
  DECLARE v_tz VARCHAR(64) {BIN};
  DECLARE v_expr TEXT {BIN};
  DECLARE v_start DATETIME(6);
  DECLARE v_finish DATETIME(6);
  DECLARE v_anchor DATETIME(6);
  DECLARE v_first DATETIME(6);
  DECLARE v_phase VARCHAR(10) {BIN};
  DECLARE v_sched TEXT {BIN};
  DECLARE v_word VARCHAR(20) {BIN};
  DECLARE v_rest TEXT {BIN};
  DECLARE v_field VARCHAR(200) {BIN};
  DECLARE v_nfields INT;
"""


def _schedule_native() -> str:
    """p_schedule, p_start, p_finish -> v_skind, v_every, v_cron, v_tz, v_expr, v_start,
    v_finish, v_anchor, v_first (NULL for cron: the first runner arms it)."""
    space = "[[:space:]]"
    field_re = "^[0-9A-Za-z*?/,#-]+$"
    names_re = "(?i)jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec|mon|tue|wed|thu|fri|sat|sun"
    zone_re = "^[A-Za-z][A-Za-z0-9_+-]*(/[A-Za-z0-9_+-]+)*$"
    cron_hint = (
        "expected 5 fields (minute hour day month weekday) or 6 with seconds last, e.g. */5 * * * *"
    )
    return f"""
{check_date("p_start", "start")}
{check_date("p_finish", "finish")}
  SET v_start = p_start, v_finish = p_finish;
  IF v_start IS NOT NULL AND v_finish IS NOT NULL AND v_finish <= v_start THEN
    {fail("CONCAT('invalid window: finish ', v_finish, ' is not after start ', v_start, ' (UTC); expected finish after start, or NULL')")}
  END IF;
  SET v_sched = REGEXP_REPLACE(REGEXP_REPLACE(IFNULL(p_schedule, ''), '^{space}+', ''), '{space}+$', '');
  SET v_word = LOWER(REGEXP_SUBSTR(v_sched, '^[^[:space:]]{{1,20}}'));
  SET v_rest = REGEXP_REPLACE(v_sched, '^[^[:space:]]+{space}*', '');
  SET v_anchor = IFNULL(v_start, v_now);
  SET v_every = NULL, v_cron = NULL, v_tz = NULL, v_expr = NULL;
  IF v_word = 'once' AND v_rest = '' THEN
    SET v_skind = 'once', v_first = IFNULL(v_start, v_now);
    IF v_finish IS NOT NULL AND v_first > v_finish THEN SET v_first = NULL; END IF;
  ELSEIF v_word = 'every' THEN
    IF NOT (v_rest REGEXP '^([0-9]{{1,12}}([.][0-9]{{0,9}})?|[.][0-9]{{1,9}})$') THEN
      {fail(f"CONCAT('invalid schedule ', QUOTE(p_schedule), ': expected every <seconds>, a number from {MIN_EVERY:g} to {MAX_EVERY:.0f} (fractions allowed)')")}
    END IF;
    SET v_every = ROUND(CAST(v_rest AS DOUBLE), 6);
    IF v_every < {MIN_EVERY} OR v_every > {MAX_EVERY:.0f} THEN
      {fail(f"CONCAT('invalid schedule ', QUOTE(p_schedule), ': the interval must be between {MIN_EVERY:g} and {MAX_EVERY:.0f} seconds')")}
    END IF;
    SET v_skind = 'every';
    IF v_anchor >= v_now THEN
      SET v_first = IF(v_finish IS NOT NULL AND v_anchor > v_finish, NULL, v_anchor);
    ELSE
      SET v_first = {every_next("v_every", "v_anchor", "(v_now - INTERVAL 1 MICROSECOND)", "v_finish")};
    END IF;
  ELSEIF v_word = 'cron' THEN
    SET v_rest = REGEXP_REPLACE(v_rest, '{space}+', ' ');
    SET v_nfields = CHAR_LENGTH(v_rest) - CHAR_LENGTH(REPLACE(v_rest, ' ', '')) + 1;
    SET v_field = SUBSTRING_INDEX(v_rest, ' ', -1);
    IF v_rest = '' OR v_nfields < 5 OR v_nfields > 7 THEN
      {fail(f"CONCAT('invalid schedule ', QUOTE(p_schedule), ': {cron_hint}, then an optional IANA time zone')")}
    END IF;
    IF v_nfields = 7 OR (v_nfields = 6 AND v_field REGEXP '[A-Za-z]') THEN
      SET v_tz = v_field, v_cron = SUBSTRING(v_rest, 1, CHAR_LENGTH(v_rest) - CHAR_LENGTH(v_field) - 1);
    ELSE
      SET v_cron = v_rest;
    END IF;
    SET v_i = 1, v_n = CHAR_LENGTH(v_cron) - CHAR_LENGTH(REPLACE(v_cron, ' ', '')) + 1;
    IF v_n NOT IN (5, 6) OR CHAR_LENGTH(v_cron) > 200 THEN
      {fail(f"CONCAT('invalid cron expression ', QUOTE(v_cron), ': {cron_hint}')")}
    END IF;
    WHILE v_i <= v_n DO
      SET v_field = SUBSTRING_INDEX(SUBSTRING_INDEX(v_cron, ' ', v_i), ' ', -1);
      IF NOT (v_field REGEXP '{field_re}') THEN
        {fail(f"CONCAT('invalid cron expression ', QUOTE(v_cron), ': field ', v_i, ' (', v_field, ') holds a character a cron field has not; {cron_hint}')")}
      END IF;
      IF REGEXP_REPLACE(v_field, '{names_re}', '') REGEXP '[RrHh]' THEN
        {fail("CONCAT('invalid cron expression ', QUOTE(v_cron), ': random (R) and hashed (H) fields are not accepted, since every runner and the preview must compute the same slots')")}
      END IF;
      SET v_i = v_i + 1;
    END WHILE;
    IF v_tz IS NOT NULL THEN
      IF CHAR_LENGTH(v_tz) > 64 OR NOT (v_tz REGEXP '{zone_re}') THEN
        {fail("CONCAT('invalid time zone ', QUOTE(v_tz), ': expected an IANA name such as Europe/Paris')")}
      END IF;
      -- Only a server with time zone tables can tell a known zone (mysql_tzinfo_to_sql)
      IF CONVERT_TZ('2026-01-01 00:00:00', 'UTC', '+00:00') IS NOT NULL
         AND CONVERT_TZ('2026-01-01 00:00:00', v_tz, '+00:00') IS NULL THEN
        {fail("CONCAT('unknown time zone ', QUOTE(v_tz), ': expected an IANA name such as UTC or Europe/Paris')")}
      END IF;
    END IF;
    SET v_skind = 'cron', v_first = NULL;  -- the first runner that sees it computes the slot
  ELSEIF v_word = 'expr' THEN
    {check_expr("v_rest", "v_expr", "expr schedule")}
    SET v_skind = 'expr', v_first = IFNULL(v_start, v_now);
    IF v_finish IS NOT NULL AND v_first > v_finish THEN SET v_first = NULL; END IF;
  ELSE
    {fail(f"CONCAT('invalid schedule ', QUOTE(IFNULL(p_schedule, 'NULL')), ': {_ACCEPTED_SCHEDULES}')")}
  END IF;
"""


def _schedule_dbms() -> str:
    """p_next_date, p_interval (DBMS_JOB's) -> the same variables: once or expr."""
    return f"""
{check_date("p_next_date", "next_date")}
  SET v_every = NULL, v_cron = NULL, v_tz = NULL, v_expr = NULL, v_finish = NULL;
  SET v_first = IFNULL(p_next_date, v_now);
  IF p_interval IS NULL OR TRIM(p_interval) = '' THEN
    SET v_skind = 'once', v_start = v_first, v_anchor = v_first;
  ELSE
    {check_expr("p_interval", "v_expr", "interval")}
    SET v_skind = 'expr', v_start = NULL, v_anchor = v_now;
  END IF;
"""


def _define(schema: str, mode: str) -> str:
    q = quote_ident(schema)
    view = f"{q}.`jobtui_user_job`"
    if mode == "submit":
        params = (
            f"OUT p_job BIGINT, IN p_what LONGTEXT {BIN}, IN p_next_date DATETIME(6), "
            f"IN p_interval TEXT {BIN}"
        )
        comment = "jobtui: DBMS_JOB.SUBMIT(job, what, next_date, interval); name job<id>"
    elif mode == "submit_named":
        params = (
            f"OUT p_job BIGINT, IN p_name VARCHAR(200) {BIN}, IN p_what LONGTEXT {BIN}, "
            f"IN p_next_date DATETIME(6), IN p_interval TEXT {BIN}"
        )
        comment = "jobtui: submit with a name (job, name, what, next_date, interval)"
    else:
        params = (
            f"OUT p_job BIGINT, IN p_name VARCHAR(200) {BIN}, IN p_what LONGTEXT {BIN}, "
            f"IN p_schedule TEXT {BIN}, IN p_start DATETIME(6), IN p_finish DATETIME(6)"
        )
        comment = "jobtui: submit with a native schedule (every N, cron [zone], expr, once)"
    if mode == "submit":
        name_check = (
            "  SET v_name = LEFT(CONCAT('jobtui-sql-', CONNECTION_ID(), '-', UUID_SHORT()), 64);"
        )
    else:
        name_check = f"""
  SET v_name = p_name;
  IF p_name IS NULL OR NOT (p_name REGEXP '{_NAME_RE}') THEN
    {fail("CONCAT('invalid job name ', QUOTE(IFNULL(p_name, 'NULL')), ': 1-64 characters from A-Z a-z 0-9 _ . -, not starting with . or -')")}
  END IF;
  SELECT COUNT(*) INTO v_found FROM {view} WHERE `owner` = CURRENT_USER() AND `name` = p_name;
  IF v_found > 0 THEN
    {fail("CONCAT('job ', QUOTE(p_name), ' already exists for owner ', QUOTE(CURRENT_USER()), ': use CALL change(...) to alter it or choose another name')")}
  END IF;"""
    schedule = _schedule_native() if mode == "submit_job" else _schedule_dbms()
    rename = ""
    if mode == "submit":
        rename = f"""
  SET v_name = CONCAT('job', v_job), v_i = 1;
  WHILE EXISTS (SELECT 1 FROM {view} WHERE `owner` = CURRENT_USER() AND `name` = v_name) DO
    SET v_i = v_i + 1, v_name = CONCAT('job', v_job, '-', v_i);
  END WHILE;
  UPDATE {view} SET `name` = v_name WHERE `id` = v_job;"""
    phase_status = status_case("FALSE", "v_phase", "'ENABLED'", "FALSE")
    body = f"""{DEFINE_DECLARES}{WHAT_DECLARES}{ROUTINE_DECLARES}{COMMON_DECLARES}
  SET v_now = {NOW};
{name_check}
{parse_what(schema)}
{schedule}
  SET v_phase = IF(v_first IS NULL AND v_skind <> 'cron', 'FINISHED', 'ENABLED');
  -- The row first, with no next run (no runner claims it) until its routines exist.
  INSERT INTO {view} (`owner`, `name`, `description`, `what_kind`, `what_target`, `what_args`,
      `schedule_kind`, `schedule_interval`, `schedule_cron`, `schedule_tz`, `schedule_expr`,
      `schedule_start`, `schedule_finish`, `schedule_anchor`, `status`, `intent`, `phase`,
      `broken`, `failures`, `max_failures`, `run_now`, `abort_requested`,
      `remove_requested`, `next_run`, `created`, `updated`)
    VALUES (CURRENT_USER(), v_name, '', v_kind, v_target, v_args, v_skind, v_every, v_cron,
      v_tz, v_expr, v_start, v_finish, v_anchor, {phase_status}, 'ENABLED', v_phase,
      0, 0, 16, 0, 0, 0, NULL, v_now, v_now);
  SET v_job = LAST_INSERT_ID();
{rename}
  COMMIT;
  SET v_give_what = 1, v_give_expr = (v_skind = 'expr');
{routines_for_job(schema)}
  IF v_routine_refused IS NOT NULL THEN
    DELETE FROM {view} WHERE `id` = v_job AND `owner` = CURRENT_USER();
    COMMIT;
    {fail("v_routine_refused")}
  END IF;
  UPDATE {view} SET `next_run` = v_first, `updated` = {NOW} WHERE `id` = v_job;
  COMMIT;
  SET p_job = v_job;
"""
    return _proc(schema, mode, params, comment, body)


CHANGE_DECLARES = f"""
  DECLARE v_found INT DEFAULT 0;
  DECLARE v_job BIGINT;
  DECLARE v_now DATETIME(6);
  DECLARE v_expr TEXT {BIN};
  DECLARE v_skind VARCHAR(10) {BIN};
  DECLARE v_old_kind VARCHAR(10) {BIN};
  DECLARE v_removing INT;
  DECLARE v_new_kind VARCHAR(10) {BIN};
"""


def _change(schema: str) -> str:
    q = quote_ident(schema)
    view = f"{q}.`jobtui_user_job`"
    params = (
        f"IN p_job BIGINT, IN p_what LONGTEXT {BIN}, IN p_next_date DATETIME(6), "
        f"IN p_interval TEXT {BIN}"
    )
    removal = (
        "CONCAT('job ', p_job, ' is being removed: its run in flight is being aborted, and "
        "the job is deleted when that run has ended')"
    )
    body = f"""{CHANGE_DECLARES}{WHAT_DECLARES}{ROUTINE_DECLARES}{COMMON_DECLARES}
  SET v_now = {NOW}, v_job = p_job;
{check_date("p_next_date", "next_date")}
{own_job(schema, "p_job", "`schedule_kind`, `remove_requested`", "v_old_kind, v_removing", lock=False)}
  IF v_removing THEN
    {fail(removal)}
  END IF;
  IF p_what IS NOT NULL THEN
{parse_what(schema)}
    SET v_give_what = 1;
  END IF;
  SET v_new_kind = v_old_kind;
  IF p_interval IS NOT NULL THEN
    IF TRIM(p_interval) = '' THEN
      SET v_new_kind = 'once';
    ELSE
      {check_expr("p_interval", "v_expr", "interval")}
      SET v_new_kind = 'expr', v_give_expr = 1;
    END IF;
  END IF;
  IF p_what IS NULL AND p_next_date IS NULL AND p_interval IS NULL THEN
    SET v_job = p_job;  -- nothing given: nothing changes
  ELSE
{routines_for_job(schema)}
    IF v_routine_refused IS NOT NULL THEN
      {fail("v_routine_refused")}
    END IF;
    UPDATE {view} SET
        `what_kind` = IF(v_give_what = 1, v_kind, `what_kind`),
        `what_target` = IF(v_give_what = 1, v_target, `what_target`),
        `what_args` = IF(v_give_what = 1, v_args, `what_args`),
        `schedule_interval` = IF(p_interval IS NULL, `schedule_interval`, NULL),
        `schedule_cron` = IF(p_interval IS NULL, `schedule_cron`, NULL),
        `schedule_tz` = IF(p_interval IS NULL, `schedule_tz`, NULL),
        `schedule_expr` = IF(p_interval IS NULL, `schedule_expr`, v_expr),
        `schedule_start` = IF(p_interval IS NULL OR v_new_kind = 'expr', `schedule_start`,
                              IFNULL(p_next_date, `next_run`)),
        `schedule_kind` = v_new_kind,
        `next_run` = IFNULL(p_next_date, `next_run`),
        `phase` = IF(p_next_date IS NOT NULL AND `phase` = 'FINISHED', 'ENABLED', `phase`),
        `updated` = {NOW},
        `status` = {STATUS_COLUMNS}
      WHERE `id` = p_job AND `owner` = CURRENT_USER() AND `remove_requested` = 0;
    IF ROW_COUNT() = 0 THEN
      COMMIT;
      IF v_wmade = 1 THEN
{drop_stale(schema, PROC_PREFIX, "PROCEDURE", "v_wname")}
      END IF;
      {fail(removal)}
    END IF;
    COMMIT;
    IF v_give_what = 1 THEN
{drop_stale(schema, PROC_PREFIX, "PROCEDURE", "v_wname")}
    END IF;
    IF v_old_kind = 'expr' AND p_interval IS NOT NULL THEN
{drop_stale(schema, FUNC_PREFIX, "FUNCTION", "v_xname")}
    END IF;
  END IF;
"""
    return _proc(
        schema,
        "change",
        params,
        "jobtui: DBMS_JOB.CHANGE(job, what, next_date, interval); NULL keeps a value",
        body,
    )


def _forward(
    schema: str, name: str, params: str, comment: str, call_args: str, pre: str = ""
) -> str:
    """A setter that is ``change`` with the other values NULL (kept)."""
    q = quote_ident(schema)
    body = f"""  DECLARE v_msg TEXT {BIN};
{pre}
  CALL {q}.`change`({call_args});
"""
    return _proc(schema, name, params, comment, body)


def _what(schema: str) -> str:
    return _forward(
        schema,
        "what",
        f"IN p_job BIGINT, IN p_what LONGTEXT {BIN}",
        "jobtui: DBMS_JOB.WHAT(job, what)",
        "p_job, p_what, NULL, NULL",
        f"""  IF p_what IS NULL THEN
    {fail("'what is NULL: expected CALL schema.proc(literal arguments) or one SQL statement'")}
  END IF;""",
    )


def _next_date(schema: str) -> str:
    return _forward(
        schema,
        "next_date",
        "IN p_job BIGINT, IN p_next_date DATETIME(6)",
        "jobtui: DBMS_JOB.NEXT_DATE(job, next_date) (UTC)",
        "p_job, NULL, p_next_date, NULL",
        f"""  IF p_next_date IS NULL THEN
    {fail("'next_date is NULL: expected a date-time (UTC); to stop a job use CALL broken(job, TRUE, NULL)'")}
  END IF;""",
    )


def _set_interval(schema: str) -> str:
    return _forward(
        schema,
        "set_interval",
        f"IN p_job BIGINT, IN p_interval TEXT {BIN}",
        "jobtui: DBMS_JOB.INTERVAL(job, interval); NULL or empty: run once",
        "p_job, NULL, NULL, IFNULL(p_interval, '')",
    )


def _remove(schema: str) -> str:
    view = f"{quote_ident(schema)}.`jobtui_user_job`"
    body = f"""
  DECLARE v_found INT DEFAULT 0;
  DECLARE v_job BIGINT;
  DECLARE v_running INT;
  DECLARE v_rname VARCHAR(64) {BIN};
  DECLARE v_last VARCHAR(64) {BIN};
{COMMON_DECLARES}
  SET v_job = p_job;
{own_job(schema, "p_job", "`running`", "v_running")}
  IF v_running = 0 THEN
    DELETE FROM {view} WHERE `id` = p_job AND `owner` = CURRENT_USER();
    COMMIT;
{drop_stale(schema, PROC_PREFIX, "PROCEDURE", "NULL")}
{drop_stale(schema, FUNC_PREFIX, "FUNCTION", "NULL")}
  ELSE
    UPDATE {view} SET `remove_requested` = 1, `abort_requested` = 1, `run_now` = 0,
        `phase` = 'ABORTED', `updated` = {NOW}, `status` = {STATUS_COLUMNS}
      WHERE `id` = p_job AND `owner` = CURRENT_USER();
    COMMIT;
    -- As the command line (defining.remove_job): wait up to {REMOVE_WAIT:g} s for the run to
    -- end (the runner deletes the row when it records it), then drop the job's routines,
    -- which only their owner may do. COMMIT after each look: a fresh snapshot.
    SET v_i = 0, v_found = 1;
    WHILE v_found = 1 AND v_i < {int(REMOVE_WAIT * 10)} DO
      DO SLEEP(0.1);
      SET v_i = v_i + 1, v_found = 0, v_running = 0;
      SELECT 1, `running` INTO v_found, v_running FROM {view}
        WHERE `id` = p_job AND `owner` = CURRENT_USER();
      IF v_found = 1 AND v_running = 0 THEN
        -- ended without a runner to delete it (reaped, or an old runner)
        DELETE FROM {view} WHERE `id` = p_job AND `owner` = CURRENT_USER() AND `running` = 0;
        SET v_found = 0;
      END IF;
      COMMIT;
    END WHILE;
    IF v_found = 0 THEN
{drop_stale(schema, PROC_PREFIX, "PROCEDURE", "NULL")}
{drop_stale(schema, FUNC_PREFIX, "FUNCTION", "NULL")}
    ELSE
      SIGNAL SQLSTATE '01000' SET MESSAGE_TEXT =
        'the job is running: its run is being aborted, and the job is deleted when that run has ended; that took longer than remove waits, so its routines jobtui_w_<job>_* and jobtui_x_<job>_* stay: DROP them once it has ended';
    END IF;
  END IF;
"""
    return _proc(schema, "remove", "IN p_job BIGINT", "jobtui: DBMS_JOB.REMOVE(job)", body)


def _broken(schema: str) -> str:
    view = f"{quote_ident(schema)}.`jobtui_user_job`"
    grid = "IFNULL(v_sstart, IFNULL(v_anchor, v_created))"
    body = f"""
  DECLARE v_found INT DEFAULT 0;
  DECLARE v_now DATETIME(6);
  DECLARE v_was_broken INT;
  DECLARE v_phase VARCHAR(10) {BIN};
  DECLARE v_kind VARCHAR(10) {BIN};
  DECLARE v_every DOUBLE;
  DECLARE v_sstart DATETIME(6);
  DECLARE v_finish DATETIME(6);
  DECLARE v_anchor DATETIME(6);
  DECLARE v_created DATETIME(6);
  DECLARE v_next DATETIME(6);
  DECLARE v_removing INT;
{COMMON_DECLARES}
  SET v_now = {NOW};
  IF p_broken IS NULL THEN
    {fail("'broken is NULL: expected TRUE (mark broken: no runs) or FALSE (clear it)'")}
  END IF;
{check_date("p_next_date", "next_date")}
  IF p_broken AND p_next_date IS NOT NULL THEN
    {fail("'next_date is only accepted with broken = FALSE (give NULL when marking a job broken)'")}
  END IF;
{own_job(schema, "p_job", "`broken`, `phase`, `schedule_kind`, `schedule_interval`, `schedule_start`, `schedule_finish`, `schedule_anchor`, `created`, `next_run`, `remove_requested`", "v_was_broken, v_phase, v_kind, v_every, v_sstart, v_finish, v_anchor, v_created, v_next, v_removing")}
  IF v_removing THEN
    {fail("CONCAT('job ', p_job, ' is being removed: its run in flight is being aborted, and the job is deleted when that run has ended')")}
  END IF;
  IF p_broken THEN
    UPDATE {view} SET `broken` = 1,
        `broken_reason` = 'marked broken by the operator (CALL broken)',
        `updated` = {NOW}, `status` = {STATUS_COLUMNS}
      WHERE `id` = p_job AND `owner` = CURRENT_USER();
  ELSE
    IF v_phase = 'ERROR' THEN SET v_phase = 'ENABLED'; END IF;
    IF p_next_date IS NOT NULL THEN
      SET v_next = p_next_date;
      IF v_phase = 'FINISHED' THEN SET v_phase = 'ENABLED'; END IF;
    ELSEIF v_was_broken THEN
      -- steering.rearm: the next slot strictly after now (no burst)
      IF v_kind = 'every' AND v_every >= {MIN_EVERY} AND v_every <= {MAX_EVERY:.0f} THEN
        SET v_next = {every_next("v_every", grid, "v_now", "v_finish")};
      ELSEIF v_kind = 'cron' THEN
        SET v_next = NULL, v_phase = 'ENABLED';  -- a runner computes the slot (croniter)
      ELSEIF v_kind = 'once' THEN
        SET v_next = IF(v_phase = 'FINISHED', NULL, IF(v_next < v_now, v_now, v_next));
      ELSE
        SET v_next = IF(v_next IS NULL OR v_next < v_now, v_now, v_next);
      END IF;
      IF v_next IS NOT NULL AND v_finish IS NOT NULL AND v_next > v_finish THEN
        SET v_next = NULL;
      END IF;
      IF v_next IS NULL AND v_kind <> 'cron' THEN SET v_phase = 'FINISHED'; END IF;
    END IF;
    UPDATE {view} SET `broken` = 0, `broken_reason` = NULL, `failures` = 0,
        `phase` = v_phase, `next_run` = v_next, `updated` = {NOW}, `status` = {STATUS_COLUMNS}
      WHERE `id` = p_job AND `owner` = CURRENT_USER();
  END IF;
  COMMIT;
"""
    return _proc(
        schema,
        "broken",
        "IN p_job BIGINT, IN p_broken BOOLEAN, IN p_next_date DATETIME(6)",
        "jobtui: DBMS_JOB.BROKEN(job, broken, next_date)",
        body,
    )


def _run(schema: str) -> str:
    q = quote_ident(schema)
    cases = ["WHEN 0 THEN EXECUTE jobtui_sql_run;"]
    for n in range(1, 33):
        using = ", ".join(f"JSON_UNQUOTE(JSON_EXTRACT(v_args, '$[{i}]'))" for i in range(n))
        cases.append(f"WHEN {n} THEN EXECUTE jobtui_sql_run USING {using};")
    case_sql = "\n        ".join(cases)
    problem = (
        "CONCAT('job ', p_job, ' has a problem in its row (what_kind, what_target or "
        "what_args): fix it with CALL what(job, ...) first')"
    )
    body = f"""
  DECLARE v_found INT DEFAULT 0;
  DECLARE v_kind VARCHAR(10) {BIN};
  DECLARE v_target LONGTEXT {BIN};
  DECLARE v_args LONGTEXT {BIN};
  DECLARE v_nargs INT;
  DECLARE v_skind VARCHAR(10) {BIN};
  DECLARE v_expr TEXT {BIN};
  DECLARE v_removing INT;
  DECLARE v_slot DATETIME(6);
  DECLARE v_next DATETIME(6);
  DECLARE v_next_given INT DEFAULT 0;
  DECLARE v_state VARCHAR(5);
{COMMON_DECLARES}
{own_job(schema, "p_job", "`what_kind`, `what_target`, `what_args`, `schedule_kind`, `schedule_expr`, `remove_requested`", "v_kind, v_target, v_args, v_skind, v_expr, v_removing", lock=False)}
  IF v_removing THEN
    {fail("CONCAT('job ', p_job, ' is being removed: it does not run again')")}
  END IF;
  IF v_kind = 'action' THEN
    {fail("CONCAT('job ', p_job, ' runs a Python action, which only a worker can run: ask a worker with `jobtui run-now` (or UPDATE jobtui_user_job SET run_now = 1)')")}
  END IF;
  IF v_kind NOT IN ('call', 'sql') OR NOT JSON_VALID(v_args) OR JSON_TYPE(v_args) <> 'ARRAY'
     OR JSON_LENGTH(v_args) > 32
     OR (v_kind = 'call' AND NOT (v_target REGEXP '^[A-Za-z0-9_$]{{1,64}}[.][A-Za-z0-9_$]{{1,64}}$'))
     OR (v_kind = 'sql' AND JSON_LENGTH(v_args) > 0) THEN
    {fail(problem)}
  END IF;
  SET v_nargs = JSON_LENGTH(v_args);
  CALL {q}.`{runlog.BEGIN}`(p_job, v_slot);
  IF v_skind = 'expr' AND v_expr IS NOT NULL THEN
    -- DBMS_JOB.RUN: the next date from the interval, evaluated before the job runs (as
    -- DBMS_JOB and the runners do), as the owner
    BEGIN
      DECLARE EXIT HANDLER FOR SQLEXCEPTION SET v_next_given = 0;
      SET @jobtui_sql_value = NULL;
      SET v_sql = CONCAT('SET STATEMENT max_statement_time = 2, time_zone = ''+00:00'' FOR ',
                         'SELECT (', v_expr, ') INTO @jobtui_sql_value');
      PREPARE jobtui_sql_expr FROM v_sql;
      EXECUTE jobtui_sql_expr;
      DEALLOCATE PREPARE jobtui_sql_expr;
      SET v_next = CAST(@jobtui_sql_value AS DATETIME(6)), v_next_given = 1;
      IF @jobtui_sql_value IS NOT NULL AND (v_next IS NULL OR v_next <= v_slot) THEN
        SET v_next_given = 0;  -- not a later date: the next run stays as it was
      END IF;
    END;
  END IF;
  BEGIN
    DECLARE EXIT HANDLER FOR SQLEXCEPTION
    BEGIN
      GET DIAGNOSTICS CONDITION 1 v_errno = MYSQL_ERRNO, v_err = MESSAGE_TEXT,
        v_state = RETURNED_SQLSTATE;
      ROLLBACK;
      CALL {q}.`{runlog.END}`(p_job, v_slot, FALSE, CONCAT('(', v_errno, ') ', v_err), NULL, FALSE);
      RESIGNAL SET MYSQL_ERRNO = v_errno, MESSAGE_TEXT = v_err;
    END;
    -- the job's work is one transaction, also in an autocommit session: a failure
    -- rolls all of it back (the handler above); the run's end commits it
    START TRANSACTION;
    IF v_kind = 'call' THEN
      SET v_sql = CONCAT('CALL `', SUBSTRING_INDEX(v_target, '.', 1), '`.`',
                         SUBSTRING_INDEX(v_target, '.', -1), '`(',
                         IF(v_nargs = 0, '', CONCAT(REPEAT('?, ', v_nargs - 1), '?')), ')');
      PREPARE jobtui_sql_run FROM v_sql;
      CASE v_nargs
        {case_sql}
      END CASE;
    ELSE
      PREPARE jobtui_sql_run FROM v_target;
      EXECUTE jobtui_sql_run;
    END IF;
    DEALLOCATE PREPARE jobtui_sql_run;
  END;
  CALL {q}.`{runlog.END}`(p_job, v_slot, TRUE, NULL, v_next, v_next_given);
"""
    return _proc(
        schema,
        "run",
        "IN p_job BIGINT",
        "jobtui: DBMS_JOB.RUN(job): runs the job now in this session",
        body,
    )
