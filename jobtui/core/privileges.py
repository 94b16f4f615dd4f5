"""Who may do what on MySQL/MariaDB: the roles `jobtui grant` makes (SQLite has no accounts).

A job runs with exactly its owner's rights: the owner's own session creates
DEFINER routines holding what the job runs (``jobtui.core.routines``), and
the runner only calls them after checking them on ``mysql.proc``. The runner
therefore needs no EXECUTE on application schemas and checks no grant tables.
``SQL_OWNER_POLICIES`` (``jobtui worker --allow-sql-owner``) stays accepted
but no longer changes anything: every owner's ``sql`` job runs with that
owner's rights. docs/privileges.md.
"""

from __future__ import annotations

from dataclasses import dataclass

from jobtui.core import schema

SQL_OWNER_POLICIES = ("admin", "any")  # accepted, without effect (see above)


class PermissionRefused(Exception):
    """The job's owner may not do what the job asks (e.g. an action no admin allowed it)."""


def split_account(account: str) -> tuple[str, str]:
    """``user@host`` -> (user, host), split at the LAST @ (user names may hold one)."""
    user, sep, host = account.rpartition("@")
    if not sep:
        return account, "%"
    return user, host


# ---------------------------------------------------------------------- grants


@dataclass(frozen=True)
class Rights:
    """The jobtui kinds an account holds (``jobtui doctor``): through its roles, granted
    and active (its default role), or as a superuser (ALL PRIVILEGES ON *.*)."""

    granted: tuple[str, ...]
    active: tuple[str, ...]
    superuser: bool
    exists: bool = True  # False: the server knows no such account


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


def grant_statements(kind: str, account: str, database: str, *, cluster: bool = False) -> list[str]:
    """The statements that make ``account`` a jobtui operator, admin or runner of ``database``
    (``cluster``: on a Galera cluster, where a runner also needs PROCESS)."""
    from jobtui.core.errors import InvalidInput
    from jobtui.core.model import quote_identifier
    from jobtui.core.sqlapi import views as sqlapi_views

    if kind not in KINDS:
        raise InvalidInput(f"invalid kind {kind!r}: accepted are {', '.join(KINDS)}")
    who = quote_account(*parse_account(account))
    db = quote_identifier(database)

    def on(table: str) -> str:
        return f"{db}.{quote_identifier(table)}"

    role = schema.role_name(kind, database)
    # _ is a wildcard in a schema-level grant: escaped, the grant covers this schema only
    escaped = db.replace("_", "\\_")
    if kind == "operator":
        writable = ", ".join(quote_identifier(c) for c in schema.operator_columns())
        grants = [
            # INSERT and UPDATE of the definition and steering columns only: the runner's
            # bookkeeping is read-only (a grant of the whole view, as older versions
            # gave, is given and then revoked, so that a second grant finds it)
            f"GRANT SELECT, INSERT, UPDATE, DELETE ON {on(schema.USER_JOB_VIEW)} TO `{role}`",
            f"REVOKE INSERT, UPDATE ON {on(schema.USER_JOB_VIEW)} FROM `{role}`",
            f"GRANT INSERT ({writable}), UPDATE ({writable}) ON {on(schema.USER_JOB_VIEW)} "
            f"TO `{role}`",
            f"GRANT SELECT ON {on(schema.USER_RUN_VIEW)} TO `{role}`",
            f"GRANT SELECT ON {on(schema.meta.name)} TO `{role}`",
            # the runner list through a view that cannot lock it (older versions granted
            # the table: granted and revoked again, so that a second grant finds it)
            f"GRANT SELECT ON {on(schema.runner.name)} TO `{role}`",
            f"REVOKE SELECT ON {on(schema.runner.name)} FROM `{role}`",
            f"GRANT SELECT ON {on(schema.RUNNERS_VIEW)} TO `{role}`",
            # the SQL interface's views of its own jobs (docs/sql.md), never dba_jobs*
            *(f"GRANT SELECT ON {on(v)} TO `{role}`" for v in sqlapi_views.OPERATOR_VIEWS),
            # the job's own routines, made by the operator's session (routines.py)
            f"GRANT CREATE ROUTINE ON {escaped}.* TO `{role}`",
        ]
        grants += sql_procedure_grants(db, role)
    elif kind == "admin":
        # No EXECUTE here: MariaDB checks a DEFINER routine's EXECUTE for its definer
        # without the definer's roles, and automatic_sp_privileges grants the creator
        # EXECUTE on its own routine only when it lacks it (through its active role too).
        grants = [
            "GRANT SELECT, INSERT, UPDATE, DELETE, CREATE, ALTER, INDEX, DROP, CREATE VIEW, "
            f"SHOW VIEW, CREATE ROUTINE, ALTER ROUTINE ON {escaped}.* TO `{role}`",
            # the keeper (jobtui_seal, defined by the admin at init) revokes ALTER ROUTINE
            # on each job routine from its owner: it needs the GRANT OPTION to
            f"GRANT GRANT OPTION ON {escaped}.* TO `{role}`",
        ]
        grants += sql_procedure_grants(db, role)
    else:
        grants = [
            f"GRANT SELECT, INSERT, UPDATE, DELETE ON {on(t.name)} TO `{role}`"
            for t in (schema.job, schema.run, schema.runner, schema.alert_outbox)
        ]
        # jobtui_secret: the key of the named-lock names (claims.lock_name), never granted
        # to operators; jobtui_action_grant: the admins' allow-list of actions
        grants += [
            f"GRANT SELECT ON {on(t.name)} TO `{role}`"
            for t in (schema.meta, schema.secret, schema.action_grant, schema.setting)
        ]
        grants += [
            # the owners' routines in this database (each runs with its definer's rights)
            f"GRANT EXECUTE ON {escaped}.* TO `{role}`",
            # verifying them before each run: definer, security type, body
            f"GRANT SELECT ON `mysql`.`proc` TO `{role}`",
            # refusing a routine its owner can still alter (ALTER ROUTINE not sealed away)
            f"GRANT SELECT ON `mysql`.`procs_priv` TO `{role}`",
            # ... or can alter every routine of the database, directly or through a role
            # (only these columns: mysql.user holds password hashes)
            f"GRANT SELECT (`User`, `Host`, `Alter_routine_priv`) ON `mysql`.`user` TO `{role}`",
            f"GRANT SELECT (`User`, `Host`, `Db`, `Alter_routine_priv`) ON `mysql`.`db` "
            f"TO `{role}`",
            f"GRANT SELECT ON `mysql`.`roles_mapping` TO `{role}`",
            # KILL QUERY of a run executing in its owner's (DEFINER) context: abort
            f"GRANT CONNECTION ADMIN ON *.* TO `{role}`",
        ]
        if cluster:
            # a cluster's reaper finds a dead runner's executing connection on the node
            # that ran it, whatever account opened it, before it releases the job
            # (docs/cluster.md)
            grants.append(f"GRANT PROCESS ON *.* TO `{role}`")
    return [
        f"CREATE ROLE IF NOT EXISTS `{role}`",
        *grants,
        f"GRANT `{role}` TO {who}",
        f"SET DEFAULT ROLE `{role}` FOR {who}",
    ]


def sql_procedure_grants(db: str, role: str) -> list[str]:
    """EXECUTE on exactly the SQL interface's public procedures (user_export included)
    and the two run-log helpers ``run`` needs (never on the whole database:
    docs/privileges.md)."""
    from jobtui.core.sqlapi import calls, keeper, owngrant, procedures, runlog, setalert

    return [
        *(
            f"GRANT EXECUTE ON PROCEDURE {db}.`{name}` TO `{role}`"
            for name in (
                *procedures.PUBLIC,
                calls.USER_EXPORT,
                *runlog.HELPERS,
                *keeper.HELPERS,
                owngrant.GRANT_OWN,
            )
        ),
        # the keeper's lookup of a squatter: who made the routine under a job's name
        f"GRANT EXECUTE ON FUNCTION {db}.`{keeper.WHO}` TO `{role}`",
        # set_alert's look at the caller's own patterns of the allow-list
        f"GRANT EXECUTE ON FUNCTION {db}.`{setalert.ALLOWED}` TO `{role}`",
    ]
