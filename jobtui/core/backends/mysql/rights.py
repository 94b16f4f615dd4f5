"""What a MySQL/MariaDB account may do for jobtui, as ``jobtui doctor`` reports it:
the jobtui roles granted to it and active, read from the server (docs/privileges.md)."""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError

from jobtui.core import accounts
from jobtui.core.accounts import KINDS, Rights, parse_account, quote_account
from jobtui.core.dberrors import PERMISSION_ERRORS, error_code

ALL_ON_EVERYTHING = "GRANT ALL PRIVILEGES ON *.*"
NO_SUCH_GRANT = 1141  # SHOW GRANTS FOR an account that does not exist


def current_rights(conn: Connection, database: str) -> Rights:
    """The session's own account: its granted and enabled roles, and SHOW GRANTS."""
    roles = {k: accounts.role_name(k, database) for k in KINDS}
    applicable = {str(r) for (r,) in conn.execute(text(_ROLES_QUERY))}
    enabled = {
        str(r)
        for (r,) in conn.execute(text("SELECT ROLE_NAME FROM information_schema.ENABLED_ROLES"))
    }
    grants = [str(g) for (g,) in conn.execute(text("SHOW GRANTS"))]
    conn.rollback()
    return Rights(
        granted=tuple(k for k, r in roles.items() if r in applicable),
        active=tuple(k for k, r in roles.items() if r in enabled),
        superuser=any(g.startswith(ALL_ON_EVERYTHING) for g in grants),
        executor=accounts.executor_role(database) in applicable,
    )


_ROLES_QUERY = "SELECT ROLE_NAME FROM information_schema.APPLICABLE_ROLES"


def account_rights(conn: Connection, account: str, database: str) -> Rights | None:
    """Another account's jobtui roles from SHOW GRANTS FOR (its default role counts as
    active); None when this session may not read them. InvalidInput for a bad name."""
    user, host = parse_account(account)
    try:
        grants = [
            str(g) for (g,) in conn.execute(text(f"SHOW GRANTS FOR {quote_account(user, host)}"))
        ]
    except DBAPIError as exc:
        conn.rollback()
        if error_code(exc) == NO_SUCH_GRANT:
            return Rights(granted=(), active=(), superuser=False, exists=False)
        if error_code(exc) in PERMISSION_ERRORS:
            return None
        raise
    conn.rollback()
    roles = {k: accounts.role_name(k, database) for k in KINDS}
    granted = tuple(
        k for k, r in roles.items() if any(g.startswith(f"GRANT `{r}` TO ") for g in grants)
    )
    active = tuple(
        k
        for k, r in roles.items()
        if any(g.startswith(f"SET DEFAULT ROLE `{r}` FOR ") for g in grants)
    )
    executor = f"GRANT `{accounts.executor_role(database)}` TO "
    return Rights(
        granted=granted,
        active=active,
        superuser=any(g.startswith(ALL_ON_EVERYTHING) for g in grants),
        executor=any(g.startswith(executor) for g in grants),
    )
