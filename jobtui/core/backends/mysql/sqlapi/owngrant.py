"""``jobtui_grant_own``: a routine's definer gets EXECUTE on it by an explicit GRANT.

MariaDB grants a routine's creator EXECUTE on it automatically
(``automatic_sp_privileges``), but on a Galera cluster that grant stays on the
node where the routine was created: the CREATE replicates, the grant does not,
and the job's wrapper fails with 1370 on every other node. An explicit
``GRANT`` replicates. An owner may not grant (no GRANT OPTION), so the owner's
session calls this SQL SECURITY DEFINER helper (its definer: the installing
admin) right after creating a wrapper (``routines.install``, on a cluster only).

It grants exactly what the automatic grant gave: EXECUTE on one jobtui routine
(``jobtui_...``) of this database, to that routine's own definer. It never
grants anything to the caller.
"""

from __future__ import annotations

from jobtui.core.backends.mysql.routines import GRANT_OWN
from jobtui.core.backends.mysql.sqlapi.sqltext import BIN, fail, quote_ident, quote_ident_sql


def statements(schema_name: str, *, definer_role: bool) -> list[str]:
    definer = "DEFINER = CURRENT_ROLE " if definer_role else ""
    q = quote_ident(schema_name)
    return [
        f"""CREATE OR REPLACE {definer}PROCEDURE {q}.`{GRANT_OWN}`(IN p_type VARCHAR(9) {BIN},
    IN p_name VARCHAR(64) {BIN})
  MODIFIES SQL DATA SQL SECURITY DEFINER
  COMMENT 'jobtui internal: EXECUTE on a jobtui routine for its own definer (Galera)'
BEGIN
  DECLARE v_msg TEXT {BIN};
  DECLARE v_definer VARCHAR(400) {BIN};
  DECLARE v_host VARCHAR(255) {BIN};
  IF p_type NOT IN ('PROCEDURE', 'FUNCTION') OR p_name NOT LIKE 'jobtui\\_%' THEN
    {fail("'jobtui_grant_own: a PROCEDURE or FUNCTION named jobtui_... only'")}
  END IF;
  SELECT MAX(`DEFINER`) INTO v_definer FROM information_schema.ROUTINES
    WHERE `ROUTINE_SCHEMA` = DATABASE() AND `ROUTINE_NAME` = p_name AND `ROUTINE_TYPE` = p_type;
  IF v_definer IS NULL OR v_definer NOT LIKE '%@%' THEN
    {fail("CONCAT('jobtui_grant_own: no ', p_type, ' ', p_name, ' in this database')")}
  END IF;
  SET v_host = SUBSTRING_INDEX(v_definer, '@', -1);
  SET @jobtui_grant_own = CONCAT('GRANT EXECUTE ON ', p_type, ' ',
    {quote_ident_sql("DATABASE()")}, '.', {quote_ident_sql("p_name")}, ' TO ',
    QUOTE(LEFT(v_definer, CHAR_LENGTH(v_definer) - CHAR_LENGTH(v_host) - 1)), '@',
    QUOTE(v_host));
  PREPARE jobtui_grant_own_stmt FROM @jobtui_grant_own;
  EXECUTE jobtui_grant_own_stmt;
  DEALLOCATE PREPARE jobtui_grant_own_stmt;
  SET @jobtui_grant_own = NULL;
END"""
    ]
