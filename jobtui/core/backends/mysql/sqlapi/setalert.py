"""``set_alert(job, targets)``: where a job's alerts go, set from SQL (docs/sql.md).

The same change as ``jobtui change NAME --alert ...`` (``JobStore.set_alert``):
the caller's own job only (owner = CURRENT_USER(), through the operators'
view, under its row lock), the targets checked as ``jobtui.core.alerts.parse``
checks their form, the job's ``alert`` column written as ``alerts.encode``
writes it (a JSON list, NULL for the database's default), then COMMIT.

A ``command:`` target needs a pattern ``alert:/path`` of the job's owner in
the admins' allow-list (``jobtui_action_grant``). An operator may not read
that table, so ``set_alert`` (SQL SECURITY INVOKER) asks
``jobtui_alert_allowed``, a SQL SECURITY DEFINER function of the admin that
installed the interface, which answers for the caller's own job only (the
views' owner rule) and tells nothing about anyone else's patterns.

What SQL cannot do: ask apprise whether it knows a URL's service. A URL of
the right form that apprise does not accept is stored, and the runner drops
it when it reads the column (``alerts.decode``), as it drops any row written
by hand.
"""

from __future__ import annotations

from jobtui.core import alerts
from jobtui.core import schema as schema_
from jobtui.core.backends.mysql.operator_views import USER_JOB_VIEW
from jobtui.core.backends.mysql.owner_index import owner_matches_invoker_sql
from jobtui.core.backends.mysql.sqlapi.sqltext import (
    BIN,
    BS,
    COMMON_DECLARES,
    NOW,
    fail,
    json_string,
    lit,
    own_job,
    quote_ident,
)

SET_ALERT = "set_alert"
ALLOWED = "jobtui_alert_allowed"
DEFAULT = "default"  # as `--alert default`: the database's default again (NULL)
_COMMAND_RE = "^" + alerts.COMMAND_RE.pattern + "$"
_URL_RE = "^[A-Za-z][A-Za-z0-9+.-]{0,30}://[^[:space:]]{1,1990}$"  # alerts.URL_RE
_COMMAND_ACCEPTED = (
    "an absolute path of letters, digits and _ . / + @ % = , - (no .. or //), at most 500 "
    "characters"
)
_WHITESPACE = (9, 10, 11, 12, 13)


def _fnmatch_regexp(pattern: str) -> str:
    """SQL: the PCRE of an allow-list pattern (``actions.PATTERN_RE``'s characters), as
    ``fnmatchcase`` reads it: ``*`` any text, ``?`` one character, ``[...]``/``[!...]``
    a class."""
    dot = f"CONCAT({BS}, '.')"
    return (
        f"CONCAT('^', REPLACE(REPLACE(REPLACE(REPLACE({pattern}, '.', {dot}), '*', '.*'), "
        "'?', '.'), '[!', '[^'), '$')"
    )


def _allowed(q: str, definer: str) -> str:
    mine = owner_matches_invoker_sql("v_owner")
    return f"""CREATE OR REPLACE {definer}FUNCTION {q}.`{ALLOWED}`(p_job BIGINT, p_command VARCHAR(600) {BIN})
RETURNS INT NOT DETERMINISTIC READS SQL DATA SQL SECURITY DEFINER
COMMENT 'jobtui: may the caller''s own job alert through this command (the admins'' allow-list)'
BEGIN
  DECLARE v_owner VARCHAR(190) {BIN};
  DECLARE v_name VARCHAR(700) {BIN};
  DECLARE v_pattern VARCHAR(200) {BIN};
  DECLARE v_done INT DEFAULT 0;
  DECLARE v_hit INT DEFAULT 0;
  DECLARE c_patterns CURSOR FOR
    SELECT `pattern` FROM {q}.`{schema_.action_grant.name}` WHERE `account` = v_owner;
  DECLARE CONTINUE HANDLER FOR NOT FOUND SET v_done = 1;
  SELECT MAX(`owner`) INTO v_owner FROM {q}.`{schema_.job.name}` WHERE `id` = p_job;
  IF v_owner IS NULL OR p_command IS NULL OR NOT ({mine}) THEN
    RETURN NULL;
  END IF;
  SET v_name = CONCAT('alert:', p_command);
  OPEN c_patterns;
  scan: LOOP
    FETCH c_patterns INTO v_pattern;
    IF v_done THEN LEAVE scan; END IF;
    IF CAST(v_pattern AS BINARY) = CAST(v_name AS BINARY) THEN SET v_hit = 1; END IF;
    BEGIN
      -- a pattern that is no regular expression (an unclosed [) matches only itself
      DECLARE CONTINUE HANDLER FOR SQLEXCEPTION BEGIN END;
      IF CAST(v_name AS BINARY) REGEXP CAST({_fnmatch_regexp("v_pattern")} AS BINARY) THEN
        SET v_hit = 1;
      END IF;
    END;
    IF v_hit THEN LEAVE scan; END IF;
  END LOOP;
  CLOSE c_patterns;
  RETURN v_hit;
END"""


def _shown(part: str) -> str:
    """SQL: a refused target fit to show (a URL's secrets after its scheme left out)."""
    return (
        f"QUOTE(IF(LOCATE('://', {part}) > 0, CONCAT(SUBSTRING_INDEX({part}, '://', 1), "
        f"'://...'), LEFT({part}, 60)))"
    )


def _set_alert(schema_name: str) -> str:
    q = quote_ident(schema_name)
    spaced = "IFNULL(p_targets, '')"
    for code in _WHITESPACE:
        spaced = f"REPLACE({spaced}, CHAR({code}), ' ')"
    nl = "CHAR(10)"
    command = lit(alerts.COMMAND_PREFIX)
    user = "SUBSTRING_INDEX(CURRENT_USER(), '@', 1)"
    host = "SUBSTRING_INDEX(CURRENT_USER(), '@', -1)"
    not_granted = (
        "CONCAT('the job''s owner ', QUOTE(CONCAT("
        f"{user}, '@', {host})), ' may not use action ', QUOTE(CONCAT('alert:', v_path)), "
        f"': no pattern in {schema_.action_grant.name} allows it (an admin allows it with "
        f"`jobtui grant ', QUOTE({user}), '@', QUOTE({host}), ' --actions PATTERN --apply`, "
        "docs/privileges.md)')"
    )
    body = f"""{COMMON_DECLARES}
  DECLARE v_found INT DEFAULT 0;
  DECLARE v_name VARCHAR(64) {BIN};
  DECLARE v_rest TEXT {BIN};
  DECLARE v_part TEXT {BIN};
  DECLARE v_path TEXT {BIN};
  DECLARE v_seen MEDIUMTEXT {BIN};
  DECLARE v_quoted MEDIUMTEXT {BIN};
  DECLARE v_json MEDIUMTEXT {BIN};
  DECLARE v_count INT DEFAULT 0;
  -- alerts.parse: whitespace-separated targets, each once, in order
  SET v_rest = TRIM({spaced}), v_seen = {nl};
  WHILE v_rest <> '' DO
    SET v_part = SUBSTRING_INDEX(v_rest, ' ', 1);
    SET v_rest = TRIM(LEADING ' ' FROM SUBSTRING(v_rest, CHAR_LENGTH(v_part) + 2));
    IF LOCATE(CONCAT({nl}, v_part, {nl}), v_seen) = 0 THEN
      SET v_seen = CONCAT(v_seen, v_part, {nl}), v_count = v_count + 1;
    END IF;
  END WHILE;
  IF v_count = 0 OR (v_count = 1 AND v_seen = CONCAT({nl}, '{DEFAULT}', {nl})) THEN
    SET v_json = NULL;
  ELSEIF v_count = 1 AND v_seen = CONCAT({nl}, '{alerts.NONE}', {nl}) THEN
    SET v_json = '[]';
  ELSEIF v_count > {alerts.MAX_TARGETS} THEN
    {fail(f"CONCAT('too many alert targets (', v_count, '): at most {alerts.MAX_TARGETS}')")}
  ELSE
    SET v_json = '[', v_rest = SUBSTRING(v_seen, 2);
    WHILE v_rest <> '' DO
      SET v_part = SUBSTRING_INDEX(v_rest, {nl}, 1);
      SET v_rest = SUBSTRING(v_rest, CHAR_LENGTH(v_part) + 2);
      IF CAST(LEFT(v_part, {len(alerts.COMMAND_PREFIX)}) AS BINARY) = CAST({command} AS BINARY) THEN
        SET v_path = SUBSTRING(v_part, {len(alerts.COMMAND_PREFIX) + 1});
        IF NOT (CAST(v_path AS BINARY) REGEXP {lit(_COMMAND_RE)})
           OR LOCATE('/../', CONCAT(v_path, '/')) > 0 OR LOCATE('//', v_path) > 0 THEN
          {fail(f"CONCAT('invalid alert command ', QUOTE(v_path), ': {_COMMAND_ACCEPTED}')")}
        END IF;
      ELSEIF NOT (CAST(v_part AS BINARY) REGEXP {lit(_URL_RE)}) THEN
        {fail(f"CONCAT('invalid alert target ', {_shown('v_part')}, ': ', {lit(alerts.ACCEPTED)})")}
      END IF;
{json_string("v_part", "v_quoted")}
      SET v_json = CONCAT(v_json, IF(v_json = '[', '', ', '), v_quoted);
    END WHILE;
    SET v_json = CONCAT(v_json, ']');
  END IF;
{own_job(schema_name, "p_job", "`name`", "v_name")}
  -- a command: the admins' allow-list for the job's owner (JobStore.set_alert)
  SET v_rest = IF(v_json IS NULL, '', SUBSTRING(v_seen, 2));
  WHILE v_rest <> '' DO
    SET v_part = SUBSTRING_INDEX(v_rest, {nl}, 1);
    SET v_rest = SUBSTRING(v_rest, CHAR_LENGTH(v_part) + 2);
    IF v_json <> '[]' AND CAST(LEFT(v_part, {len(alerts.COMMAND_PREFIX)}) AS BINARY) = CAST({command} AS BINARY) THEN
      SET v_path = SUBSTRING(v_part, {len(alerts.COMMAND_PREFIX) + 1});
      IF IFNULL({q}.`{ALLOWED}`(p_job, v_path), 0) <> 1 THEN
        {fail(not_granted)}
      END IF;
    END IF;
  END WHILE;
  UPDATE {q}.`{USER_JOB_VIEW}` SET `alert` = v_json, `updated` = {NOW}
    WHERE `id` = p_job AND `owner` = CURRENT_USER();
  COMMIT;
"""
    return (
        f"CREATE OR REPLACE PROCEDURE {q}.`{SET_ALERT}`(IN p_job BIGINT, IN p_targets TEXT {BIN}) "
        "MODIFIES SQL DATA SQL SECURITY INVOKER COMMENT 'jobtui: set_alert(job, targets): "
        "where the job''s alerts go (NULL: the database''s default; none: no alerts)'"
        f"\nBEGIN\n{body}\nEND"
    )


def statements(schema_name: str, *, definer_role: bool) -> list[str]:
    """The allow-list helper (the installing admin's) and the procedure, in order."""
    q = quote_ident(schema_name)
    definer = "DEFINER = CURRENT_ROLE " if definer_role else ""
    return [_allowed(q, definer), _set_alert(schema_name)]
