"""Pieces of SQL/PSM text the procedures are generated from (MariaDB).

Each function returns statements (or an expression) to paste into a routine
body that jobtui itself generates; nothing here ever holds a value of a row
or of a caller. Literals that hold a backslash are written as hex literals,
so a server whose ``sql_mode`` has NO_BACKSLASH_ESCAPES reads them alike.
"""

from __future__ import annotations

from jobtui.core.backends.mysql.routines import FUNC_PREFIX, PROC_PREFIX
from jobtui.core.model import (
    JOB_PARAM_MESSAGE,
    JOB_PARAM_RE,
    MAX_ARG_LENGTH,
    MAX_ARGS,
    MAX_SQL_LENGTH,
    QUOTED_RE,
)
from jobtui.core.schedules import MAX_EXPR_LENGTH
from jobtui.core.transitions import PHASES

BIN = "CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"
NOW = "UTC_TIMESTAMP(6)"  # never NOW(): the caller's time_zone must not matter
BS = "CHAR(92 USING utf8mb4)"  # a backslash
MAX_MESSAGE = 500  # MESSAGE_TEXT holds at most 512 characters


def lit(text: str) -> str:
    """A string literal that reads the same under every sql_mode."""
    if "\\" in text or "'" in text or not text.isascii():
        return f"CONVERT(X'{text.encode().hex()}' USING utf8mb4)"
    return f"'{text}'"


def literal_sql(expr: str) -> str:
    """SQL for ``expr`` as a one-line SQL literal (``calltext.sql_literal`` in Python)."""
    # CHAR(n USING utf8mb4): a plain CHAR(n) is a binary string and would make the
    # result binary; no backslash in the DDL either, whatever the sql_mode.
    nl, cr, bs = (f"CHAR({n} USING utf8mb4)" for n in (10, 13, 92))
    return f"REPLACE(REPLACE(QUOTE({expr}), {nl}, CONCAT({bs}, 'n')), {cr}, CONCAT({bs}, 'r'))"


def quote_ident(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def quote_ident_sql(expr: str) -> str:
    """SQL for the backtick-quoted identifier held by ``expr``."""
    return f"CONCAT('`', REPLACE({expr}, '`', '``'), '`')"


def fail(message_sql: str) -> str:
    """Raise SQLSTATE 45000 with the message ``message_sql`` (an SQL expression)."""
    return (
        f"SET v_msg = LEFT({message_sql}, {MAX_MESSAGE}); "
        "SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = v_msg;"
    )


def check_date(param: str, label: str) -> str:
    """Refuse a zero or out-of-range date in ``param`` (MariaDB's default sql_mode lets
    ``'0000-00-00'`` and ``'2026-00-10'`` into a DATETIME). NULL passes: each procedure
    says what NULL means for it."""
    value = f"CAST({param} AS CHAR)"
    return f"""
  IF {param} IS NOT NULL AND ({param} < '1000-01-01' OR {param} > '9999-12-31 23:59:59.999999'
      OR MONTH({param}) = 0 OR DAYOFMONTH({param}) = 0) THEN
    {fail(f"CONCAT('invalid {label} ', QUOTE({value}), ': expected a date-time (UTC) from 1000-01-01 to 9999-12-31 with a real month and day, or NULL')")}
  END IF;"""


def status_case(running: str, phase: str, intent: str, broken: str) -> str:
    """``transitions.derive_status`` as a CASE over SQL expressions."""
    phases = ", ".join(f"'{p}'" for p in PHASES)
    return (
        f"CASE WHEN {running} THEN 'RUNNING' WHEN {phase} = 'FINISHED' THEN 'FINISHED' "
        f"WHEN {intent} = 'DISABLED' THEN 'DISABLED' WHEN {intent} = 'PAUSED' THEN 'PAUSED' "
        f"WHEN {broken} THEN 'BROKEN' WHEN {phase} IN ({phases}) THEN {phase} "
        "ELSE 'BROKEN' END"
    )


STATUS_COLUMNS = status_case("`running`", "`phase`", "`intent`", "`broken`")

# Variables every generated procedure declares (the snippets below use them).
COMMON_DECLARES = f"""
  DECLARE v_msg TEXT {BIN};
  DECLARE v_errno INT DEFAULT 0;
  DECLARE v_err TEXT {BIN};
  DECLARE v_bad INT DEFAULT 0;
  DECLARE v_i INT;
  DECLARE v_n INT;
  DECLARE v_c VARCHAR(4) {BIN};
  DECLARE v_d VARCHAR(4) {BIN};
  DECLARE v_q VARCHAR(4) {BIN};
  DECLARE v_cp BIGINT;
  DECLARE v_sql LONGTEXT {BIN};
"""


def own_job(schema: str, job: str, columns: str, into: str, *, lock: bool = True) -> str:
    """Read the caller's own job ``job`` (owner = CURRENT_USER()) through the operators'
    view, or refuse with the shared message."""
    view = f"{quote_ident(schema)}.`jobtui_user_job`"
    return f"""
  SET v_found = 0;
  SELECT 1, {columns} INTO v_found, {into} FROM {view}
    WHERE `id` = {job} AND `owner` = CURRENT_USER(){" FOR UPDATE" if lock else ""};
  IF v_found = 0 OR {job} IS NULL THEN
    {fail(f"CONCAT('job ', IFNULL({job}, 'NULL'), ' is not one of your jobs (no such job, or another account owns it)')")}
  END IF;
"""


def json_string(src: str, dst: str) -> str:
    """``dst`` = Python's ``json.dumps(src)`` (ASCII only, as routines' digests use it)."""
    u = f"CONCAT({BS}, 'u', LOWER(LPAD(HEX(%s), 4, '0')))"
    return f"""
  IF {src} IS NULL THEN
    SET {dst} = 'null';
  ELSEIF NOT ({src} REGEXP '[^ -~]') AND LOCATE('"', {src}) = 0 AND LOCATE({BS}, {src}) = 0 THEN
    SET {dst} = CONCAT('"', {src}, '"');
  ELSE
    SET {dst} = '"', v_i = 1, v_n = CHAR_LENGTH({src});
    WHILE v_i <= v_n DO
      SET v_c = SUBSTRING({src}, v_i, 1);
      SET v_cp = CAST(CONV(HEX(CONVERT(v_c USING utf32)), 16, 10) AS UNSIGNED);
      SET {dst} = CONCAT({dst}, CASE
        WHEN v_cp = 34 THEN CONCAT({BS}, '"')
        WHEN v_cp = 92 THEN CONCAT({BS}, {BS})
        WHEN v_cp = 10 THEN CONCAT({BS}, 'n')
        WHEN v_cp = 13 THEN CONCAT({BS}, 'r')
        WHEN v_cp = 9 THEN CONCAT({BS}, 't')
        WHEN v_cp = 8 THEN CONCAT({BS}, 'b')
        WHEN v_cp = 12 THEN CONCAT({BS}, 'f')
        WHEN v_cp > 65535 THEN CONCAT({u % "55296 + ((v_cp - 65536) >> 10)"},
                                      {u % "56320 + ((v_cp - 65536) & 1023)"})
        WHEN v_cp < 32 OR v_cp >= 127 THEN {u % "v_cp"}
        ELSE v_c END);
      SET v_i = v_i + 1;
    END WHILE;
    SET {dst} = CONCAT({dst}, '"');
  END IF;
"""


_SPACE = "[[:space:]]"


def parse_what(schema: str) -> str:
    """``p_what`` -> v_kind, v_target, v_args (JSON), v_nargs; refuses what the command
    line refuses (model.What, store.check_what). ``CALL s.p(literals)`` is a ``call``
    job; any other statement (a CALL with other arguments too) a ``sql`` job."""
    del schema
    call_re = (
        f"^(?is)call{_SPACE}+`?([A-Za-z0-9_$]{{1,64}})`?{_SPACE}*[.]{_SPACE}*"
        f"`?([A-Za-z0-9_$]{{1,64}})`?{_SPACE}*(?:[(](.*)[)])?{_SPACE}*$"
    )
    return f"""
{_one_statement()}  SET v_kind = 'sql', v_target = v_stmt, v_args = '[]', v_nargs = 0;
  IF v_stmt REGEXP {lit(call_re)} THEN
    SET v_pschema = REGEXP_REPLACE(v_stmt, {lit(call_re)}, {lit(chr(92) + "1")});
    SET v_pname = REGEXP_REPLACE(v_stmt, {lit(call_re)}, {lit(chr(92) + "2")});
    SET v_argtext = REGEXP_REPLACE(v_stmt, {lit(call_re)}, {lit(chr(92) + "3")});
    -- the arguments: literals only (quoted strings, numbers), else a sql job
{_literal_arguments()}{_call_or_sql()}  END IF;
{_sql_check()}"""


def _one_statement() -> str:
    """``p_what`` -> v_stmt, trimmed: not NULL, empty, NUL or too long, one statement."""
    return f"""  IF p_what IS NULL THEN
    {fail("'what is NULL: expected CALL schema.proc(literal arguments) or one SQL statement'")}
  END IF;
  SET v_stmt = REGEXP_REPLACE(REGEXP_REPLACE(p_what, '^{_SPACE}+', ''), '[;[:space:]]+$', '');
  IF v_stmt = '' THEN
    {fail("'empty what: expected CALL schema.proc(literal arguments) or one SQL statement'")}
  END IF;
  IF LOCATE(CHAR(0 USING utf8mb4), v_stmt) > 0 THEN
    {fail("'invalid what: it contains a NUL character'")}
  END IF;
  IF CHAR_LENGTH(v_stmt) > {MAX_SQL_LENGTH} THEN
    {fail(f"'what too long: at most {MAX_SQL_LENGTH} characters'")}
  END IF;
  IF LOCATE(';', v_stmt) > 0 THEN
    SET v_i = 1, v_n = CHAR_LENGTH(v_stmt), v_q = '';
    WHILE v_i <= v_n DO
      SET v_c = SUBSTRING(v_stmt, v_i, 1);
      IF v_q <> '' THEN
        IF v_c = {BS} AND v_q <> '`' THEN
          SET v_i = v_i + 1;
        ELSEIF v_c = v_q THEN
          SET v_q = '';
        END IF;
      ELSEIF v_c IN ('''', '"', '`') THEN
        SET v_q = v_c;
      ELSEIF v_c = ';' THEN
        {fail("'more than one SQL statement in what: it takes exactly one (wrap several in a stored procedure and CALL it)'")}
      END IF;
      SET v_i = v_i + 1;
    END WHILE;
  END IF;
"""


def _literal_arguments() -> str:
    """v_argtext -> v_args (JSON), v_nargs; v_ok = 0 where it is not literals only."""
    number_re = "^[-+]?([0-9]+([.][0-9]*)?|[.][0-9]+)([eE][-+]?[0-9]+)?"
    return f"""    SET v_ok = 1, v_args = '[]', v_nargs = 0, v_i = 1, v_n = CHAR_LENGTH(v_argtext);
    argloop: LOOP
      WHILE v_i <= v_n AND SUBSTRING(v_argtext, v_i, 1) REGEXP '^{_SPACE}$' DO
        SET v_i = v_i + 1;
      END WHILE;
      IF v_i > v_n THEN
        IF v_nargs > 0 THEN SET v_ok = 0; END IF;  -- a trailing comma
        LEAVE argloop;
      END IF;
      SET v_c = SUBSTRING(v_argtext, v_i, 1);
      IF v_c IN ('''', '"') THEN
        SET v_q = v_c, v_i = v_i + 1, v_val = '', v_closed = 0;
        WHILE v_i <= v_n AND v_closed = 0 DO
          SET v_c = SUBSTRING(v_argtext, v_i, 1);
          IF v_c = v_q THEN
            IF SUBSTRING(v_argtext, v_i + 1, 1) = v_q THEN
              SET v_val = CONCAT(v_val, v_q), v_i = v_i + 2;
            ELSE
              SET v_closed = 1, v_i = v_i + 1;
            END IF;
          ELSEIF v_c = {BS} THEN
            SET v_d = SUBSTRING(v_argtext, v_i + 1, 1);
            SET v_val = CONCAT(v_val, CASE v_d
              WHEN 'n' THEN CHAR(10 USING utf8mb4) WHEN 't' THEN CHAR(9 USING utf8mb4)
              WHEN 'r' THEN CHAR(13 USING utf8mb4) WHEN 'b' THEN CHAR(8 USING utf8mb4)
              WHEN '0' THEN CHAR(0 USING utf8mb4) WHEN 'Z' THEN CHAR(26 USING utf8mb4)
              WHEN '%' THEN CONCAT({BS}, '%') WHEN '_' THEN CONCAT({BS}, '_')
              ELSE v_d END);
            SET v_i = v_i + 2;
          ELSE
            SET v_val = CONCAT(v_val, v_c), v_i = v_i + 1;
          END IF;
        END WHILE;
        IF v_closed = 0 THEN SET v_ok = 0; LEAVE argloop; END IF;
      ELSE
        SET v_val = REGEXP_SUBSTR(SUBSTRING(v_argtext, v_i), '{number_re}');
        IF v_val IS NULL OR v_val = '' THEN SET v_ok = 0; LEAVE argloop; END IF;
        SET v_i = v_i + CHAR_LENGTH(v_val);
      END IF;
      IF LOCATE(CHAR(0 USING utf8mb4), v_val) > 0 OR CHAR_LENGTH(v_val) > {MAX_ARG_LENGTH} THEN
        {fail(f"CONCAT('invalid argument ', v_nargs + 1, ' in what: text of at most {MAX_ARG_LENGTH} characters without NUL')")}
      END IF;
      SET v_args = JSON_ARRAY_APPEND(v_args, '$', v_val), v_nargs = v_nargs + 1;
      IF v_nargs > {MAX_ARGS} THEN
        {fail(f"'too many arguments in what: at most {MAX_ARGS}'")}
      END IF;
      WHILE v_i <= v_n AND SUBSTRING(v_argtext, v_i, 1) REGEXP '^{_SPACE}$' DO
        SET v_i = v_i + 1;
      END WHILE;
      IF v_i > v_n THEN LEAVE argloop; END IF;
      IF SUBSTRING(v_argtext, v_i, 1) <> ',' THEN SET v_ok = 0; LEAVE argloop; END IF;
      SET v_i = v_i + 1;
      IF v_i > v_n THEN SET v_ok = 0; LEAVE argloop; END IF;
    END LOOP;
"""


def _call_or_sql() -> str:
    """Literal arguments: a ``call`` job of a procedure that exists and takes them;
    else a ``sql`` job (never one that names DBMS_JOB's ``job``)."""
    return f"""    IF v_ok = 1 THEN
      SET v_kind = 'call', v_target = CONCAT(v_pschema, '.', v_pname);
      SELECT COUNT(*) INTO v_n FROM information_schema.ROUTINES
        WHERE ROUTINE_SCHEMA = v_pschema AND ROUTINE_NAME = v_pname AND ROUTINE_TYPE = 'PROCEDURE';
      IF v_n = 0 THEN
        {fail("CONCAT('procedure ', v_target, ' does not exist (or you may not see it): create it first, or grant yourself EXECUTE on it')")}
      END IF;
      SELECT COUNT(*), IFNULL(SUM(PARAMETER_MODE <> 'IN'), 0) INTO v_n, v_i
        FROM information_schema.PARAMETERS WHERE SPECIFIC_SCHEMA = v_pschema
        AND SPECIFIC_NAME = v_pname AND ROUTINE_TYPE = 'PROCEDURE' AND ORDINAL_POSITION > 0;
      IF v_n <> v_nargs THEN
        {fail("CONCAT('procedure ', v_target, ' takes ', v_n, ' argument(s), ', v_nargs, ' given in what')")}
      END IF;
      IF v_i > 0 THEN
        {fail("CONCAT('procedure ', v_target, ' has OUT/INOUT parameters: jobtui binds literal arguments only, so use a procedure with IN parameters')")}
      END IF;
    ELSE
      -- DBMS_JOB passes the job's number as `job` ('p(job);'); jobtui binds no such
      -- parameter, so a CALL naming it would fail every run: refused here
      IF REGEXP_REPLACE(v_argtext, {lit(QUOTED_RE)}, {lit("''")}) REGEXP {lit(JOB_PARAM_RE)} THEN
        {fail(lit(JOB_PARAM_MESSAGE))}
      END IF;
      SET v_kind = 'sql', v_target = v_stmt, v_args = '[]', v_nargs = 0;
    END IF;
"""


def _sql_check() -> str:
    """A ``sql`` job's statement, prepared once: refused where the database rejects it."""
    return f"""  IF v_kind = 'sql' THEN
    BEGIN
      DECLARE EXIT HANDLER FOR SQLEXCEPTION
      BEGIN
        GET DIAGNOSTICS CONDITION 1 v_errno = MYSQL_ERRNO, v_err = MESSAGE_TEXT;
        SET v_bad = 1;
      END;
      SET v_bad = 0;
      PREPARE jobtui_sql_check FROM v_stmt;
      DEALLOCATE PREPARE jobtui_sql_check;
    END;
    IF v_bad = 1 THEN
      {fail("CONCAT('invalid what: the database rejected it ((', v_errno, ') ', v_err, '); expected CALL schema.proc(literal arguments) or one SQL statement')")}
    END IF;
  END IF;
"""


WHAT_DECLARES = f"""
  DECLARE v_stmt LONGTEXT {BIN};
  DECLARE v_kind VARCHAR(10) {BIN};
  DECLARE v_target LONGTEXT {BIN};
  DECLARE v_args LONGTEXT {BIN};
  DECLARE v_nargs INT DEFAULT 0;
  DECLARE v_pschema VARCHAR(64) {BIN};
  DECLARE v_pname VARCHAR(64) {BIN};
  DECLARE v_argtext LONGTEXT {BIN};
  DECLARE v_val LONGTEXT {BIN};
  DECLARE v_ok INT;
  DECLARE v_closed INT;
"""

_FORBIDDEN_EXPR = (
    r"(?i);|--|#|/\*|\*/|:=|\b(select|insert|update|delete|replace|into|outfile|dumpfile|call|"
    r"create|drop|alter|grant|revoke|set|load_file|sleep|benchmark|handler|lock|unlock|"
    r"get_lock|release_lock|release_all_locks|master_pos_wait|master_gtid_wait|"
    r"source_pos_wait|load_extension|nextval|setval|sys_exec|sys_eval)\b"
)


def check_expr(src: str, dst: str, label: str) -> str:
    """``dst`` = the trimmed date expression ``src``, checked as ``schedules.check_expr``
    does and evaluated once in the caller's session (UTC, at most 2 s): it must give a
    date-time after now."""
    space = "[[:space:]]"
    accepted = "expected one date expression such as NOW() + INTERVAL 1 DAY"
    return f"""
  SET {dst} = REGEXP_REPLACE(REGEXP_REPLACE({src}, '^{space}+', ''), '{space}+$', '');
  IF {dst} = '' THEN
    {fail(f"'empty {label}: {accepted}'")}
  END IF;
  IF LOCATE(CHAR(0 USING utf8mb4), {dst}) > 0 OR CHAR_LENGTH({dst}) > {MAX_EXPR_LENGTH} THEN
    {fail(f"'invalid {label}: at most {MAX_EXPR_LENGTH} characters, no NUL'")}
  END IF;
  IF {dst} REGEXP {lit(_FORBIDDEN_EXPR)} THEN
    {fail(f"CONCAT('invalid {label} ', QUOTE({dst}), ': ', QUOTE(REGEXP_SUBSTR({dst}, {lit(_FORBIDDEN_EXPR)})), ' is not allowed; {accepted} (no statements, comments or semicolons)')")}
  END IF;
  SET @jobtui_sql_value = NULL;
  SET v_sql = CONCAT('SET STATEMENT max_statement_time = 2, time_zone = ''+00:00'' FOR SELECT (',
                     {dst}, ') INTO @jobtui_sql_value');
  BEGIN
    DECLARE EXIT HANDLER FOR SQLEXCEPTION
    BEGIN
      GET DIAGNOSTICS CONDITION 1 v_errno = MYSQL_ERRNO, v_err = MESSAGE_TEXT;
      SET v_bad = 1;
    END;
    SET v_bad = 0;
    PREPARE jobtui_sql_expr FROM v_sql;
    EXECUTE jobtui_sql_expr;
    DEALLOCATE PREPARE jobtui_sql_expr;
  END;
  IF v_bad = 1 AND v_errno = 1969 THEN
    {fail(f"CONCAT('invalid {label} ', QUOTE({dst}), ': its evaluation took longer than 2 s (the limit for a date expression)')")}
  END IF;
  IF v_bad = 1 THEN
    {fail(f"CONCAT('invalid {label} ', QUOTE({dst}), ': the database rejected it ((', v_errno, ') ', v_err, '); {accepted}')")}
  END IF;
  IF @jobtui_sql_value IS NULL THEN
    {fail(f"CONCAT('invalid {label} ', QUOTE({dst}), ': it gives NULL now, so the job would run once and never again; {accepted} (NULL or empty: run once)')")}
  END IF;
  IF NOT (CAST(@jobtui_sql_value AS CHAR) REGEXP '^[0-9]{{4}}-[0-9]{{2}}-[0-9]{{2}}')
     OR CAST(@jobtui_sql_value AS DATETIME(6)) IS NULL THEN
    {fail(f"CONCAT('invalid {label} ', QUOTE({dst}), ': it gave ', QUOTE(@jobtui_sql_value), ', not a date-time; {accepted}')")}
  END IF;
  IF CAST(@jobtui_sql_value AS DATETIME(6)) <= {NOW} THEN
    {fail(f"CONCAT('invalid {label} ', QUOTE({dst}), ': it gives ', @jobtui_sql_value, ' (UTC), which is not after NOW(); {accepted}')")}
  END IF;
"""


def digest(parts_sql: list[str]) -> str:
    """``routines._digest``: the first 12 hex digits of SHA-256 of ``json.dumps(parts)``;
    each part is SQL for its JSON text."""
    return f"LEFT(SHA2(CONCAT('[', {', '.join(_join(parts_sql))}, ']'), 256), 12)"


def _join(parts: list[str]) -> list[str]:
    out: list[str] = []
    for i, p in enumerate(parts):
        if i:
            out.append("', '")
        out.append(p)
    return out


# What comes between a routine's name and its body in routines_for_job's CREATE.
_PROC_HEAD = "'`(', v_params,\n                           ') SQL SECURITY DEFINER '"
_FUNC_HEAD = (
    "'`() RETURNS DATETIME(6) ',\n"
    "                           'NOT DETERMINISTIC READS SQL DATA SQL SECURITY DEFINER '"
)


def routines_for_job(schema: str) -> str:
    """The job's DEFINER routines (``routines.for_what`` / ``for_expr``), created in
    this (the owner's) session as ``routines.install`` creates them. Inputs: v_job,
    v_give_what (v_kind, v_target, v_nargs), v_give_expr (v_expr). Sets v_wname /
    v_xname (NULL: none) and v_wmade / v_xmade (1: created here)."""
    q = quote_ident(schema)
    quote = '"'
    # no role in the names (routines.for_what): the runner looks them up by exact name
    wdigest = digest([f"CONCAT('{quote}', v_kind, '{quote}')", "v_jtarget", "v_nargs"])
    xdigest = digest([f"'{quote}expr{quote}'", "v_jtarget"])
    return f"""
  SET v_role = CURRENT_ROLE();
  SET v_prelude = IF(v_role IS NULL, 'BEGIN ', CONCAT('BEGIN SET ROLE ', {quote_ident_sql("v_role")}, '; '));
  SET v_wname = NULL, v_xname = NULL, v_wmade = 0, v_xmade = 0;
  IF v_give_what = 1 AND v_kind IN ('call', 'sql') THEN
    {json_string("v_target", "v_jtarget")}
    SET v_wname = CONCAT('{PROC_PREFIX}', v_job, '_',
                         {wdigest});
    IF v_kind = 'call' THEN
      SET v_params = '', v_names = '', v_i = 1;
      WHILE v_i <= v_nargs DO
        SET v_params = CONCAT(v_params, IF(v_i > 1, ', ', ''), 'IN a', v_i, ' TEXT');
        SET v_names = CONCAT(v_names, IF(v_i > 1, ', ', ''), 'a', v_i);
        SET v_i = v_i + 1;
      END WHILE;
      SET v_wbody = CONCAT(v_prelude, 'CALL `', SUBSTRING_INDEX(v_target, '.', 1), '`.`',
                           SUBSTRING_INDEX(v_target, '.', -1), '`(', v_names, '); END');
    ELSE
      SET v_params = '', v_wbody = CONCAT(v_prelude, v_target, '; END');
    END IF;
    {_ensure_routine(q, "PROCEDURE", "v_wname", "v_wbody", "v_wmade", _PROC_HEAD)}
  END IF;
  IF v_bad = 0 AND v_give_expr = 1 THEN
    {json_string("v_expr", "v_jtarget")}
    SET v_xname = CONCAT('{FUNC_PREFIX}', v_job, '_', {xdigest});
    SET v_xbody = CONCAT(v_prelude, 'RETURN (', v_expr, '); END');
    {_ensure_routine(q, "FUNCTION", "v_xname", "v_xbody", "v_xmade", _FUNC_HEAD)}
  END IF;
  IF v_bad = 1 THEN
    IF v_wmade = 1 THEN
      {drop_routine(q, "PROCEDURE", "v_wname")}
    END IF;
    SET v_routine_refused = CONCAT('the database refused to create the job''s ', v_made_err,
      ' in your session; the job runs as that routine, with your rights, so you need CREATE ROUTINE on the jobtui database (jobtui grant) and a statement that a stored procedure may hold');
  END IF;
"""


SEAL = "jobtui_seal"  # jobtui.core.backends.mysql.sqlapi.keeper
RETIRE = "jobtui_retire"


def drop_routine(q: str, rtype: str, name: str) -> str:
    """Drop job v_job's routine ``name`` (SQL for it) as ``routines.drop`` does: through
    the keeper (the caller's own sealed routine, while no runner holds the job), else
    directly (an admin; a routine not sealed yet); errors are ignored (a routine that
    matches no job never runs)."""
    return f"""BEGIN
        DECLARE v_gone INT DEFAULT 1;
        BEGIN
          DECLARE CONTINUE HANDLER FOR SQLEXCEPTION SET v_gone = 0;
          CALL {q}.`{RETIRE}`(v_job, '{rtype}', {name});
        END;
        IF v_gone = 0 THEN
          BEGIN
            DECLARE CONTINUE HANDLER FOR SQLEXCEPTION BEGIN END;
            SET v_sql = CONCAT('DROP {rtype} IF EXISTS {q}.', {quote_ident_sql(name)});
            PREPARE jobtui_sql_ddl FROM v_sql;
            EXECUTE jobtui_sql_ddl;
            DEALLOCATE PREPARE jobtui_sql_ddl;
          END;
        END IF;
      END;"""


def _ensure_routine(q: str, rtype: str, name: str, body: str, made: str, head: str) -> str:
    """(Re)create one of the job's routines (``rtype`` PROCEDURE or FUNCTION) in this
    session unless this account already has it with exactly this body; ``head``: the
    SQL between its name and its body. Sets ``made`` to 1 when created here, or v_bad
    and v_made_err when the server refused."""
    return f"""SET v_n = 0, v_ok = 0;
    SELECT COUNT(*), IFNULL(MAX(CAST(ROUTINE_DEFINITION AS BINARY) = CAST({body} AS BINARY)
                               AND SECURITY_TYPE = 'DEFINER'), 0)
      INTO v_n, v_ok FROM information_schema.ROUTINES
      WHERE ROUTINE_SCHEMA = DATABASE() AND DEFINER = CURRENT_USER()
        AND ROUTINE_TYPE = '{rtype}' AND ROUTINE_NAME = {name};
    IF v_n = 0 OR v_ok = 0 THEN
      BEGIN
        DECLARE EXIT HANDLER FOR SQLEXCEPTION
        BEGIN
          GET DIAGNOSTICS CONDITION 1 v_errno = MYSQL_ERRNO, v_err = MESSAGE_TEXT;
          SET v_bad = 1;
        END;
        SET v_bad = 0;
        IF v_n > 0 THEN
          {drop_routine(q, rtype, name)}
        END IF;
        SET v_sql = CONCAT('CREATE {rtype} {q}.`', {name}, {head}, {body});
        PREPARE jobtui_sql_ddl FROM v_sql;
        EXECUTE jobtui_sql_ddl;
        DEALLOCATE PREPARE jobtui_sql_ddl;
        SET {made} = 1;
      END;
      IF v_bad = 1 THEN
        SET v_made_err = CONCAT('{rtype.lower()} ', {name}, ' (', v_errno, ') ', v_err);
      END IF;
    END IF;
    IF v_bad = 0 THEN
      -- the keeper revokes this session's ALTER ROUTINE on it (routines.install)
      BEGIN
        DECLARE EXIT HANDLER FOR SQLEXCEPTION
        BEGIN
          GET DIAGNOSTICS CONDITION 1 v_errno = MYSQL_ERRNO, v_err = MESSAGE_TEXT;
          SET v_bad = 1;
          SET v_made_err = CONCAT('{rtype.lower()} ', {name}, ', sealing it: (', v_errno, ') ', v_err);
        END;
        CALL {q}.`{SEAL}`('{rtype}', {name});
      END;
    END IF;"""


ROUTINE_DECLARES = f"""
  DECLARE v_role VARCHAR(200) {BIN};
  DECLARE v_jrole TEXT {BIN};
  DECLARE v_prelude TEXT {BIN};
  DECLARE v_jtarget LONGTEXT {BIN};
  DECLARE v_wname VARCHAR(64) {BIN};
  DECLARE v_xname VARCHAR(64) {BIN};
  DECLARE v_wbody LONGTEXT {BIN};
  DECLARE v_xbody LONGTEXT {BIN};
  DECLARE v_params TEXT {BIN};
  DECLARE v_names TEXT {BIN};
  DECLARE v_wmade INT DEFAULT 0;
  DECLARE v_xmade INT DEFAULT 0;
  DECLARE v_made_err TEXT {BIN};
  DECLARE v_routine_refused TEXT {BIN};
  DECLARE v_give_what INT DEFAULT 0;
  DECLARE v_give_expr INT DEFAULT 0;
  DECLARE v_rname VARCHAR(64) {BIN};
  DECLARE v_last VARCHAR(64) {BIN};
"""


def drop_stale(schema: str, prefix: str, rtype: str, keep: str) -> str:
    """Drop the caller's own routines of job v_job with ``prefix`` other than ``keep``
    (SQL for a name, or NULL), as ``routines.drop_stale`` does; errors are ignored
    (a routine that matches no job never runs)."""
    q = quote_ident(schema)
    like = f"CONCAT(REPLACE('{prefix}', '_', CONCAT({BS}, '_')), v_job, {BS}, '_%')"
    return f"""
  SET v_last = '';
  droploop_{prefix}: LOOP
    SET v_rname = NULL;
    SELECT MIN(ROUTINE_NAME) INTO v_rname FROM information_schema.ROUTINES
      WHERE ROUTINE_SCHEMA = DATABASE() AND DEFINER = CURRENT_USER() AND ROUTINE_TYPE = '{rtype}'
        AND ROUTINE_NAME LIKE {like} AND ROUTINE_NAME > v_last;
    IF v_rname IS NULL THEN LEAVE droploop_{prefix}; END IF;
    SET v_last = v_rname;
    IF {keep} IS NULL OR v_rname <> {keep} THEN
      {drop_routine(q, rtype, "v_rname")}
    END IF;
  END LOOP;
"""


def every_next(interval: str, grid: str, after: str, finish: str) -> str:
    """SQL for ``schedules.next_slot`` of an every-N schedule: the first grid slot (grid
    start ``grid``, N ``interval`` seconds) strictly after ``after``; NULL past the
    window's ``finish``."""
    diff = f"(TIMESTAMPDIFF(MICROSECOND, {grid}, {after}) / 1000000)"
    k = f"(FLOOR({diff} / {interval}) + 1)"
    slot = (
        f"IF({after} < {grid}, {grid}, "
        f"DATE_ADD({grid}, INTERVAL ROUND({k} * {interval} * 1000000) MICROSECOND))"
    )
    return f"IF({finish} IS NOT NULL AND {slot} > {finish}, NULL, {slot})"
