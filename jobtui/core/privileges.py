"""A job never does more than its owner may (MySQL/MariaDB; SQLite has no accounts).

The runner executes every job on its own connection, with its own account's
privileges, so before each run it asks the server's grant tables whether the
job's owner could do the same:

- ``call``: the owner has EXECUTE on the procedure at routine level
  (``mysql.procs_priv``), schema level (``mysql.db``, whose ``Db`` may hold
  LIKE wildcards) or global level (``mysql.user``), directly, through a granted
  role (``mysql.roles_mapping``, roles granted to roles too) or through PUBLIC;
- ``sql``: any statement, so only for the runner's own account or an account
  granted the ``jobtui_admin`` role, unless the deployer allows every owner
  (``jobtui worker --allow-sql-owner any``);
- ``action``: registered Python code the deployer installed: always allowed.

A refusal raises ``PermissionRefused``: the run is logged failed with its
message and the job follows the usual failure rules. docs/privileges.md.
"""

from __future__ import annotations

import threading
import time
import weakref
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DBAPIError

from jobtui.core import schema
from jobtui.core.model import Job, split_procedure

SQL_OWNER_POLICIES = ("admin", "any")
# An allowed check is remembered this long (per server, owner and target), so a
# busy job costs no extra queries per run; a REVOKE is seen within this time. A
# refusal is never remembered: a GRANT is seen by the very next run.
ALLOWED_TTL = 5.0
PUBLIC = ("PUBLIC", "")  # MariaDB 10.11's PUBLIC pseudo-role
MAX_ROLE_DEPTH = 16


class PermissionRefused(Exception):
    """The job's owner may not do what the job asks."""


def split_account(account: str) -> tuple[str, str]:
    """``user@host`` -> (user, host), split at the LAST @ (user names may hold one)."""
    user, sep, host = account.rpartition("@")
    if not sep:
        return account, "%"
    return user, host


class _AllowedCache:
    """Checks that passed recently (thread-safe; runner threads share it)."""

    def __init__(self) -> None:
        self._until: dict[tuple[str, ...], float] = {}
        self._lock = threading.Lock()

    def hit(self, key: tuple[str, ...]) -> bool:
        with self._lock:
            until = self._until.get(key)
            if until is None:
                return False
            if until < time.monotonic():
                del self._until[key]
                return False
            return True

    def remember(self, key: tuple[str, ...]) -> None:
        with self._lock:
            if len(self._until) > 10_000:
                self._until.clear()
            self._until[key] = time.monotonic() + ALLOWED_TTL

    def clear(self) -> None:
        with self._lock:
            self._until.clear()


allowed_cache = _AllowedCache()


def check_may_run(conn: Connection, job: Job, *, sql_owners: str = "admin") -> None:
    """Raise PermissionRefused unless ``job.owner`` may do what the job runs."""
    if conn.dialect.name == "sqlite" or job.what.kind == "action":
        return
    if job.what.kind == "sql" and sql_owners == "any":
        return
    key = (
        _server(conn.engine),
        job.owner,
        job.what.kind,
        job.what.target if job.what.kind == "call" else "",
    )
    if allowed_cache.hit(key):
        return
    _check(conn, job)
    allowed_cache.remember(key)


_servers: weakref.WeakKeyDictionary[Engine, str] = weakref.WeakKeyDictionary()


def _server(engine: Engine) -> str:
    """The engine's URL without password, rendered once per engine (it was 1 % of a
    runner's CPU when rendered for every run)."""
    server = _servers.get(engine)
    if server is None:
        server = engine.url.render_as_string(hide_password=True)
        _servers[engine] = server
    return server


def _check(conn: Connection, job: Job) -> None:
    if job.what.kind == "call":
        schema_name, proc = split_procedure(job.what.target)
        if not has_execute(conn, job.owner, schema_name, proc):
            raise PermissionRefused(
                f"the job's owner {job.owner!r} has no EXECUTE privilege on procedure "
                f"`{schema_name}`.`{proc}` (routine, schema or global level, directly or "
                "through a role); an admin grants it, e.g. GRANT EXECUTE ON PROCEDURE "
                f"`{schema_name}`.`{proc}` TO the owner"
            )
        return
    runner_account = _current_user(conn)
    if job.owner == runner_account or is_admin(conn, job.owner):
        return
    raise PermissionRefused(
        f"sql jobs run only for the runner's own account ({runner_account!r}) or an "
        f"account granted {schema.ADMIN_ROLE}; the owner {job.owner!r} is neither (a worker "
        "started with --allow-sql-owner any runs every owner's sql jobs)"
    )


def _current_user(conn: Connection) -> str:
    """The runner's account, asked once per pooled connection (it never changes)."""
    info = conn.connection.info
    if "jobtui_current_user" not in info:
        info["jobtui_current_user"] = str(conn.execute(text("SELECT CURRENT_USER()")).scalar_one())
    return str(info["jobtui_current_user"])


def grantees(conn: Connection, account: str) -> list[tuple[str, str]]:
    """The account, every role granted to it (transitively) and PUBLIC."""
    found = [split_account(account)]
    mapping: dict[tuple[str, str], list[str]] = {}
    for user, host, role in _grant_query(
        conn, "SELECT User, Host, Role FROM mysql.roles_mapping", {}, "mysql.roles_mapping"
    ):
        mapping.setdefault((str(user), str(host)), []).append(str(role))
    frontier = list(found)
    for _ in range(MAX_ROLE_DEPTH):
        roles = [(r, "") for g in frontier for r in mapping.get(g, ())]
        frontier = [r for r in roles if r not in found]
        if not frontier:
            break
        found += frontier
    if PUBLIC not in found:
        found.append(PUBLIC)
    return found


def has_execute(conn: Connection, owner: str, schema_name: str, proc: str) -> bool:
    """Whether ``owner`` may EXECUTE ``schema_name.proc`` (any level, roles included)."""
    who = grantees(conn, owner)
    params: dict[str, Any] = {"s": schema_name, "p": proc}
    pairs = []
    for i, (user, host) in enumerate(who):
        params[f"u{i}"], params[f"h{i}"] = user, host
        pairs.append(f"(:u{i}, :h{i})")
    among = f"(User, Host) IN ({', '.join(pairs)})"
    query = (
        f"SELECT 1 FROM mysql.user WHERE Execute_priv = 'Y' AND {among} "
        f"UNION ALL SELECT 1 FROM mysql.db WHERE Execute_priv = 'Y' AND :s LIKE Db AND {among} "
        "UNION ALL SELECT 1 FROM mysql.procs_priv WHERE Db = :s AND Routine_name = :p "
        f"AND Routine_type = 'PROCEDURE' AND FIND_IN_SET('Execute', Proc_priv) AND {among} "
        "LIMIT 1"
    )
    tables = "mysql.user, mysql.db, mysql.procs_priv"
    return bool(_grant_query(conn, query, params, tables))


def is_admin(conn: Connection, owner: str) -> bool:
    """Whether ``owner`` holds the jobtui_admin role (directly or through another role)."""
    return (schema.ADMIN_ROLE, "") in grantees(conn, owner)


def _grant_query(conn: Connection, sql: str, params: dict[str, Any], tables: str) -> list[Any]:
    try:
        return list(conn.execute(text(sql), params).all())
    except DBAPIError as exc:
        if schema.error_code(exc) in schema.PERMISSION_ERRORS:
            raise PermissionRefused(
                f"the runner cannot check the owner's privileges: its account needs "
                f"SELECT on {tables} (`jobtui grant ACCOUNT --runner`, docs/privileges.md)"
            ) from None
        raise


# ---------------------------------------------------------------------- grants

KINDS = ("operator", "admin", "runner")
_USER_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-$")
_HOST_CHARS = _USER_CHARS | frozenset("%:/")
MAX_USER = 80
MAX_HOST = 255


def parse_account(value: str) -> tuple[str, str]:
    """``user``, ``user@host`` or ``'user'@'host'`` -> (user, host); the host defaults to %.

    Only letters, digits and ``_ . - $`` in user names (plus ``% : /`` in host
    names) are accepted, so the quoted account can never close its quotes.
    """
    from jobtui.core.errors import InvalidInput

    accepted = (
        "expected USER or USER@HOST (quotes allowed: 'USER'@'HOST'); user names of letters, "
        f"digits and _ . - $ (1-{MAX_USER} characters), host names of those and % : /"
    )
    if not isinstance(value, str):
        raise InvalidInput(f"invalid account {value!r}: {accepted}")
    user, sep, host = value.rpartition("@")
    if not sep:
        user, host = value, "%"
    user, host = _unquote(user), _unquote(host)
    if (
        not 1 <= len(user) <= MAX_USER
        or not set(user) <= _USER_CHARS
        or not 1 <= len(host) <= MAX_HOST
        or not set(host) <= _HOST_CHARS
    ):
        raise InvalidInput(f"invalid account {value!r}: {accepted}")
    return user, host


def _unquote(part: str) -> str:
    if len(part) >= 2 and part[0] == part[-1] and part[0] in "'\"`":
        return part[1:-1]
    return part


def quote_account(user: str, host: str) -> str:
    """``'user'@'host'``: only for names ``parse_account`` accepted (no quotes inside)."""
    return f"'{user}'@'{host}'"


def grant_statements(kind: str, account: str, database: str) -> list[str]:
    """The statements that make ``account`` a jobtui operator, admin or runner of ``database``."""
    from jobtui.core.errors import InvalidInput
    from jobtui.core.model import quote_identifier

    if kind not in KINDS:
        raise InvalidInput(f"invalid kind {kind!r}: accepted are {', '.join(KINDS)}")
    who = quote_account(*parse_account(account))
    db = quote_identifier(database)

    def on(table: str) -> str:
        return f"{db}.{quote_identifier(table)}"

    if kind == "operator":
        role = schema.OPERATOR_ROLE
        grants = [
            f"GRANT SELECT, INSERT, UPDATE, DELETE ON {on(schema.USER_JOB_VIEW)} TO `{role}`",
            f"GRANT SELECT ON {on(schema.USER_RUN_VIEW)} TO `{role}`",
            f"GRANT SELECT ON {on(schema.meta.name)} TO `{role}`",
            f"GRANT SELECT ON {on(schema.runner.name)} TO `{role}`",
        ]
    elif kind == "admin":
        role = schema.ADMIN_ROLE
        # _ is a wildcard in a schema-level grant: escaped, the grant covers this schema only
        escaped = db.replace("_", "\\_")
        grants = [
            "GRANT SELECT, INSERT, UPDATE, DELETE, CREATE, ALTER, INDEX, DROP, CREATE VIEW, "
            f"SHOW VIEW ON {escaped}.* TO `{role}`",
        ]
    else:
        role = schema.RUNNER_ROLE
        grants = [
            f"GRANT SELECT, INSERT, UPDATE, DELETE ON {on(t.name)} TO `{role}`"
            for t in (schema.job, schema.run, schema.runner)
        ]
        grants += [
            f"GRANT SELECT ON {on(schema.meta.name)} TO `{role}`",
            # the key of the named-lock names (claims.lock_name); never granted to operators
            f"GRANT SELECT ON {on(schema.secret.name)} TO `{role}`",
            f"GRANT SELECT ON {on(schema.action_grant.name)} TO `{role}`",
            f"GRANT SELECT ON `mysql`.`procs_priv` TO `{role}`",
            f"GRANT SELECT ON `mysql`.`db` TO `{role}`",
            f"GRANT SELECT ON `mysql`.`roles_mapping` TO `{role}`",
            # columns only: the rest of mysql.user holds password hashes
            f"GRANT SELECT (`User`, `Host`, `Execute_priv`) ON `mysql`.`user` TO `{role}`",
        ]
    return [
        f"CREATE ROLE IF NOT EXISTS `{role}`",
        *grants,
        f"GRANT `{role}` TO {who}",
        f"SET DEFAULT ROLE `{role}` FOR {who}",
    ]
