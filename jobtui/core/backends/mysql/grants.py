"""Who may do what on MySQL/MariaDB: the roles `jobtui grant` makes and the Python
actions an account's jobs may use (SQLite has no accounts).

A job runs with exactly its owner's rights: the owner's own session creates
DEFINER routines holding what the job runs (``backends.mysql.routines``), and
the runner only calls them after checking them on ``mysql.proc``. The runner
therefore needs no EXECUTE on application schemas and checks no grant tables.
The admins' allow-list of actions (``jobtui_action_grant``: fnmatch patterns per
account, ``jobtui grant ACCOUNT --actions PATTERN``) is checked by the runner
before every action run (``check_granted``). docs/privileges.md.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, ClassVar

from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError

from jobtui.core import schema
from jobtui.core.accounts import (
    KINDS,
    PermissionRefused,
    executor_role,
    parse_account,
    quote_account,
    role_name,
)
from jobtui.core.actions import check_patterns, granted_patterns, is_granted
from jobtui.core.backends.base import Grants
from jobtui.core.backends.mysql import operator_views
from jobtui.core.backends.mysql.sqlapi import (
    calls,
    keeper,
    owngrant,
    procedures,
    runlog,
    setalert,
)
from jobtui.core.backends.mysql.sqlapi import views as sqlapi_views
from jobtui.core.dberrors import NO_SUCH_TABLE, PERMISSION_ERRORS, error_code
from jobtui.core.errors import InvalidInput
from jobtui.core.model import quote_identifier

# Access errors ("may not read") and "no such table" (a schema older than the allow-list).
_UNREADABLE = {*PERMISSION_ERRORS, NO_SUCH_TABLE}


class AccountGrants(Grants):
    """MySQL/MariaDB's ``Grants``: the statements `jobtui grant` prints or applies."""

    present: ClassVar[bool] = True

    def __init__(self, *, cluster: bool = False) -> None:
        self.cluster = cluster

    def role_statements(self, kind: str, account: str, database: str) -> list[str]:
        return grant_statements(kind, account, database, cluster=self.cluster)

    def action_statements(
        self,
        account: str,
        database: str,
        *,
        grant: Iterable[str] = (),
        revoke: Iterable[str] = (),
    ) -> list[str]:
        return action_grant_statements(account, database, grant=grant, revoke=revoke)


def grant_statements(kind: str, account: str, database: str, *, cluster: bool = False) -> list[str]:
    """The statements that make ``account`` a jobtui operator, admin or runner of ``database``
    (``cluster``: on a Galera cluster, where a runner also needs PROCESS)."""
    if kind not in KINDS:
        raise InvalidInput(f"invalid kind {kind!r}: accepted are {', '.join(KINDS)}")
    who = quote_account(*parse_account(account))
    db = quote_identifier(database)

    def on(table: str) -> str:
        return f"{db}.{quote_identifier(table)}"

    role = role_name(kind, database)
    # _ is a wildcard in a schema-level grant: escaped, the grant covers this schema only
    escaped = db.replace("_", "\\_")
    if kind == "operator":
        writable = ", ".join(quote_identifier(c) for c in operator_views.operator_columns())
        grants = [
            # INSERT and UPDATE of the definition and steering columns only: the runner's
            # bookkeeping is read-only (a grant of the whole view, as older versions
            # gave, is given and then revoked, so that a second grant finds it)
            f"GRANT SELECT, INSERT, UPDATE, DELETE ON {on(operator_views.USER_JOB_VIEW)} TO `{role}`",
            f"REVOKE INSERT, UPDATE ON {on(operator_views.USER_JOB_VIEW)} FROM `{role}`",
            f"GRANT INSERT ({writable}), UPDATE ({writable}) ON {on(operator_views.USER_JOB_VIEW)} "
            f"TO `{role}`",
            f"GRANT SELECT ON {on(operator_views.USER_RUN_VIEW)} TO `{role}`",
            f"GRANT SELECT ON {on(schema.meta.name)} TO `{role}`",
            # the runner list through a view that cannot lock it (older versions granted
            # the table: granted and revoked again, so that a second grant finds it)
            f"GRANT SELECT ON {on(schema.runner.name)} TO `{role}`",
            f"REVOKE SELECT ON {on(schema.runner.name)} FROM `{role}`",
            f"GRANT SELECT ON {on(operator_views.RUNNERS_VIEW)} TO `{role}`",
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
        # jobtui_secret: the key of the named-lock names (lock_names.lock_name), never granted
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
    executor: list[str] = []
    if kind == "runner":
        # The role of the runner's executor connections, where owner code runs: EXECUTE
        # on the jobtui database and nothing else (no table, no key, no KILL). The runner
        # sets it there with SET ROLE; its default role stays the runner's.
        ex = executor_role(database)
        executor = [
            f"CREATE ROLE IF NOT EXISTS `{ex}`",
            f"GRANT EXECUTE ON {escaped}.* TO `{ex}`",
            f"GRANT `{ex}` TO {who}",
        ]
    return [
        f"CREATE ROLE IF NOT EXISTS `{role}`",
        *grants,
        *executor,
        f"GRANT `{role}` TO {who}",
        f"SET DEFAULT ROLE `{role}` FOR {who}",
    ]


def sql_procedure_grants(db: str, role: str) -> list[str]:
    """EXECUTE on exactly the SQL interface's public procedures (user_export included)
    and the two run-log helpers ``run`` needs (never on the whole database:
    docs/privileges.md)."""
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


# ---------------------------------------------------------------------- the actions' allow-list


def grant_account(account: str) -> str:
    """``user@host`` as the owner column holds it (CURRENT_USER()), from any accepted form."""
    user, host = parse_account(account)
    text_ = f"{user}@{host}"
    width = schema.action_grant.c.account.type.length or 190  # type: ignore[attr-defined]
    if len(text_) > width:
        raise InvalidInput(
            f"invalid account {account!r} for an action grant: user@host is at most {width} "
            "characters"
        )
    return text_


def action_grant_statements(
    account: str,
    database: str,
    *,
    grant: Iterable[str] = (),
    revoke: Iterable[str] = (),
) -> list[str]:
    """The statements that allow (``grant``) or take back (``revoke``) action patterns.

    One row per (account, pattern) in ``database``'s jobtui_action_grant; the
    account is stored as ``user@host``, exactly as a job's owner column holds it.
    """
    owner = grant_account(account)
    grant = check_patterns(grant) if grant else []
    revoke = check_patterns(revoke) if revoke else []
    both = [p for p in grant if p in revoke]
    if both:
        raise InvalidInput(
            f"action pattern {both[0]!r} is both granted and revoked: give it to one of "
            "--actions and --revoke-actions"
        )
    table = f"{quote_identifier(database)}.{quote_identifier(schema.action_grant.name)}"
    return [
        *(
            f"INSERT INTO {table} (`account`, `pattern`) VALUES ('{owner}', '{p}') "
            "ON DUPLICATE KEY UPDATE `account` = `account`"
            for p in grant
        ),
        *(f"DELETE FROM {table} WHERE `account` = '{owner}' AND `pattern` = '{p}'" for p in revoke),
    ]


def _not_granted(account: str, name: str) -> str:
    try:
        who = quote_account(*parse_account(account))
    except InvalidInput:  # an owner no grant could name: nothing to suggest for it
        who = "ACCOUNT"
    return (
        f"the job's owner {account!r} may not use action {name!r}: no pattern in "
        f"{schema.action_grant.name} allows it (an admin allows it with `jobtui grant "
        f"{who} --actions PATTERN --apply`, docs/privileges.md)"
    )


def check_granted(conn: Connection, job: Any) -> None:
    """Before a run (MySQL/MariaDB, ``Backend.check_action_granted``): PermissionRefused
    unless a pattern allows the job's owner.

    The runner's guarantee: every owner, every run, whatever submit checked.
    An allow-list the runner cannot read refuses too.
    """
    try:
        patterns = granted_patterns(conn, job.owner)
    except DBAPIError as exc:
        if error_code(exc) in _UNREADABLE:
            raise PermissionRefused(
                f"the runner cannot read {schema.action_grant.name}, so it runs no action: its "
                "account needs SELECT on that table (`jobtui grant ACCOUNT --runner`; an "
                "older schema: an admin runs `jobtui init`)"
            ) from None
        raise
    if not is_granted(patterns, job.what.target):
        raise PermissionRefused(_not_granted(job.owner, job.what.target))


def refuse_ungranted(conn: Connection, account: str, name: str) -> None:
    """At submit/change: InvalidInput when the account may read the allow-list and no
    pattern allows ``name``. An operator may not read it: the runner then decides.
    MySQL/MariaDB (``Backend.refuse_ungranted``): SQLite allows every registered action."""
    try:
        patterns = granted_patterns(conn, account)
    except DBAPIError as exc:
        if error_code(exc) in _UNREADABLE:
            return
        raise
    if not is_granted(patterns, name):
        raise InvalidInput(_not_granted(account, name))
