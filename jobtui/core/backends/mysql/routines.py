"""A job runs with its owner's rights: the owner's DEFINER routines (MySQL/MariaDB).

At submit, change and import the owner's own session creates, in the jobtui
database, ``SQL SECURITY DEFINER`` routines holding what the job runs:

- ``call``/``sql``: PROCEDURE ``jobtui_w_<id>_<digest12>(IN a1 TEXT, ...)``
  whose body is ``BEGIN [SET ROLE `r`;] CALL `s`.`p`(a1, ...); END`` or the
  job's one statement. The runner calls it with the row's arguments bound.
- ``expr`` schedules: FUNCTION ``jobtui_x_<id>_<digest12>() RETURNS
  DATETIME(6)`` whose body is ``BEGIN [SET ROLE `r`;] RETURN (<expr>); END``,
  evaluated under ``max_statement_time`` (``owner_code.EXPR_TIMEOUT``).

``r`` is the creating session's CURRENT_ROLE(): MariaDB does not activate a
definer's default role inside a DEFINER routine. An adopted event's routines have
no ``SET ROLE``: the event ran with its definer's own grants, no role (``events.adopt``). ``digest12`` covers the
definition (not the role, so the runner knows the exact name), so a change
creates the new routine before the row names it and drops the old one after.
Right after creating one, the owner's session has the keeper (``jobtui_seal``,
jobtui.core.backends.mysql.sqlapi.keeper) revoke the owner's ALTER ROUTINE on it: sealed,
the owner can no longer alter, drop or replace it.

Before running, the runner checks every routine of a batch by exact name on
``mysql.proc`` and ``mysql.procs_priv`` (``verify``): it exists, is SQL
SECURITY DEFINER, its definer is the job's owner exactly, it is sealed, and
its body is the one the row's definition implies. Nothing else is trusted: a row changed through the view names a
routine that does not exist, and only the owner can create routines whose
definer is the owner. docs/privileges.md.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DBAPIError, SQLAlchemyError

from jobtui.core.dberrors import short_error
from jobtui.core.errors import InvalidInput
from jobtui.core.model import Job, Schedule, What, quote_identifier, split_procedure
from jobtui.core.owner_code import RoutineRefused, Verdict

log = logging.getLogger("jobtui.store")

PROC_PREFIX = "jobtui_w_"
FUNC_PREFIX = "jobtui_x_"
PROCEDURE = "PROCEDURE"
SEAL = "jobtui_seal"  # the keeper (jobtui.core.backends.mysql.sqlapi.keeper)
WHO = "jobtui_routine_definer"
RETIRE = "jobtui_retire"
GRANT_OWN = "jobtui_grant_own"  # the definer's own grant (sqlapi/owngrant.py)
FUNCTION = "FUNCTION"
_ROLE_PREFIX = re.compile(r"BEGIN SET ROLE (`(?:[^`]|``)+`); ")
# Errors that mean "this account may not" on mysql.proc
_DENIED = {1044, 1142, 1143, 1227}


@dataclass(frozen=True)
class Routine:
    """One routine a job needs: its type, name, parameters and body."""

    type: str  # PROCEDURE | FUNCTION
    name: str
    params: str
    body: str

    def create_sql(self) -> str:
        if self.type == PROCEDURE:
            return (
                f"CREATE PROCEDURE {quote_identifier(self.name)}({self.params}) "
                f"SQL SECURITY DEFINER {self.body}"
            )
        return (
            f"CREATE FUNCTION {quote_identifier(self.name)}() RETURNS DATETIME(6) "
            f"NOT DETERMINISTIC READS SQL DATA SQL SECURITY DEFINER {self.body}"
        )

    def drop_sql(self) -> str:
        return f"DROP {self.type} IF EXISTS {quote_identifier(self.name)}"


def quote_role(role: str) -> str:
    return "`" + role.replace("`", "``") + "`"


def _unquote_role(quoted: str) -> str:
    return quoted[1:-1].replace("``", "`")


def _digest(*parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:12]


def _prelude(role: str | None) -> str:
    return "BEGIN " if role is None else f"BEGIN SET ROLE {quote_role(role)}; "


def for_what(job_id: int, what: What, role: str | None) -> Routine | None:
    """The PROCEDURE a ``call``/``sql`` job runs (None for actions)."""
    if what.kind not in ("call", "sql"):
        return None
    return _for_what(int(job_id), what, role)


@functools.lru_cache(maxsize=16384)  # the runner checks the same jobs again and again
def _for_what(job_id: int, what: What, role: str | None) -> Routine:
    if what.kind == "call":
        schema_name, proc = split_procedure(what.target)
        names = [f"a{i}" for i in range(1, len(what.args) + 1)]
        statement = (
            f"CALL {quote_identifier(schema_name)}.{quote_identifier(proc)}({', '.join(names)})"
        )
        params = ", ".join(f"IN {n} TEXT" for n in names)
    else:
        statement, params = what.target, ""
    # no role in the name: the runner looks the routine up by its exact name
    digest = _digest(what.kind, what.target, len(what.args))
    return Routine(
        PROCEDURE,
        f"{PROC_PREFIX}{int(job_id)}_{digest}",
        params,
        f"{_prelude(role)}{statement}; END",
    )


@functools.lru_cache(maxsize=4096)
def for_expr(job_id: int, expr: str, role: str | None) -> Routine:
    """The FUNCTION that evaluates an expr schedule."""
    digest = _digest("expr", expr)
    return Routine(
        FUNCTION,
        f"{FUNC_PREFIX}{int(job_id)}_{digest}",
        "",
        f"{_prelude(role)}RETURN ({expr}); END",
    )


def wanted(job_id: int, what: What, schedule: Schedule, role: str | None) -> list[Routine]:
    """Every routine a job with this definition needs."""
    found = []
    proc = for_what(job_id, what, role)
    if proc is not None:
        found.append(proc)
    if schedule.kind == "expr" and schedule.expr is not None:
        found.append(for_expr(job_id, schedule.expr, role))
    return found


def qualified(schema_name: str, name: str) -> str:
    return f"{quote_identifier(schema_name)}.{quote_identifier(name)}"


@functools.lru_cache(maxsize=16384)  # once per routine, not per run
def call_statement(schema_name: str, name: str, nargs: int) -> str:
    """``CALL `db`.`jobtui_w_…`(%s, …)`` (PyMySQL paramstyle: the arguments stay bound)."""
    return f"CALL {qualified(schema_name, name)}({', '.join(['%s'] * nargs)})"


# ---------------------------------------------------------------------- the owner's session


def scalar(conn: Connection, sql: str) -> Any:
    """The first column of the first row of ``sql``, sent as it is (no parameters, so the
    driver leaves its % signs alone)."""
    raw = conn.connection.dbapi_connection
    assert raw is not None
    cur = raw.cursor()
    try:
        cur.execute(sql)
        row = cur.fetchone()
        while cur.nextset():
            pass
        return None if row is None else row[0]
    except conn.dialect.loaded_dbapi.Error as exc:
        # as SQLAlchemy would raise it, so callers handle one kind of error
        raise DBAPIError.instance(sql, None, exc, conn.dialect.loaded_dbapi.Error) from exc
    finally:
        cur.close()


def current_role(conn: Connection) -> str | None:
    role = conn.exec_driver_sql("SELECT CURRENT_ROLE()").scalar()
    return None if role is None else str(role)


def on_cluster(conn: Connection) -> bool:
    """Whether the server is a Galera node (``wsrep_on``; read so that it parses anywhere)."""
    value = conn.exec_driver_sql(
        "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_VARIABLES "
        "WHERE VARIABLE_NAME = 'WSREP_ON'"
    ).scalar()
    return str(value or "").upper() == "ON"


def install(conn: Connection, routines: Iterable[Routine]) -> list[Routine]:
    """CREATE the routines that do not exist yet; returns those created.

    On an error the ones created here are dropped again and InvalidInput
    carries the server's reason. DDL commits by itself: call outside a
    transaction of the caller's.
    """
    routines = list(routines)
    mine = own(conn, routines)
    created: list[Routine] = []
    cluster = any(mine.get((r.type, r.name.lower())) is not True for r in routines) and (
        on_cluster(conn)
    )
    raw = conn.connection.dbapi_connection
    assert raw is not None
    cur = raw.cursor()
    try:
        for routine in routines:
            key = (routine.type, routine.name.lower())
            try:
                if mine.get(key) is not True:
                    if key in mine:  # the owner's, but not what it should be: made again
                        drop(conn, [routine])  # sealed: through the keeper
                    cur.execute(routine.create_sql())  # no parameters: % and ? stay as they are
                    created.append(routine)
                    if cluster:  # the automatic grant stays on this node; a GRANT replicates
                        cur.execute(f"CALL `{GRANT_OWN}`(%s, %s)", (routine.type, routine.name))
            except Exception as exc:
                with contextlib.suppress(DBAPIError):  # the refusal is what matters here
                    drop(conn, created)
                raise InvalidInput(_refusal(cur, routine, exc)) from None
            try:
                # the keeper takes ALTER ROUTINE on it away from the owner: from now on
                # the owner can neither alter, nor drop, nor replace what the runner checks
                cur.execute(f"CALL {quote_identifier(SEAL)}(%s, %s)", (routine.type, routine.name))
            except Exception as exc:
                with contextlib.suppress(DBAPIError):
                    drop(conn, created)
                raise InvalidInput(
                    f"the keeper could not seal the job's {routine.type.lower()} {routine.name} "
                    f"({_reason(exc)}); the owner needs EXECUTE on the procedure {SEAL} "
                    "(`jobtui grant`), and an admin creates it with `jobtui init`"
                ) from None
    finally:
        cur.close()
    return created


def _refusal(cur: Any, routine: Routine, exc: BaseException) -> str:
    """Why the server refused to create ``routine``; a routine of that name made by
    another account (a squatter, error 1304) is named with its account."""
    orig = getattr(exc, "orig", None) or exc
    code = getattr(orig, "args", (None,))[0]
    kind = routine.type.lower()
    if code == 1304:
        squatter = None
        with contextlib.suppress(Exception):
            cur.execute(f"SELECT {quote_identifier(WHO)}(%s, %s)", (routine.type, routine.name))
            row = cur.fetchone()
            squatter = None if row is None or row[0] is None else str(row[0])
        by = f"the account {squatter}" if squatter else "another account"
        return (
            f"the job's {kind} {routine.name} cannot be created: {by} already made a routine "
            "under that name; it is not the owner's and never runs. An admin drops it "
            f"(DROP {routine.type} {routine.name}), then submit again"
        )
    return (
        f"the database refused to create the job's {kind} "
        f"{routine.name} in the owner's session ({_reason(exc)}); the job "
        "runs as that routine, with the owner's rights, so the owner needs "
        "CREATE ROUTINE on the jobtui database (`jobtui grant`) and a statement "
        "that a stored procedure may hold"
    )


def _without_role(body: str) -> str:
    return _ROLE_PREFIX.sub("BEGIN ", body, count=1)


def own(conn: Connection, routines: Sequence[Routine]) -> dict[tuple[str, str], bool]:
    """Which of ``routines`` exist in the current database with this session's account as
    definer (information_schema shows a definer its own routines), and whether each is
    exactly as it should be."""
    if not routines:
        return {}
    names = sorted({r.name for r in routines})
    marks = ", ".join(["%s"] * len(names))
    rows = conn.exec_driver_sql(
        "SELECT ROUTINE_TYPE, ROUTINE_NAME, ROUTINE_DEFINITION, SECURITY_TYPE FROM "
        "information_schema.ROUTINES WHERE ROUTINE_SCHEMA = DATABASE() AND DEFINER = "
        f"CURRENT_USER() AND ROUTINE_NAME IN ({marks})",
        tuple(names),
    ).all()
    # the body as made, whatever role it sets (a sealed routine stays as it was made)
    bodies = {(str(t), str(n).lower()): (_without_role(str(d)), s) for t, n, d, s in rows}
    return {
        (r.type, r.name.lower()): bodies[(r.type, r.name.lower())]
        == (_without_role(r.body), "DEFINER")
        for r in routines
        if (r.type, r.name.lower()) in bodies
    }


def drop(conn: Connection, routines: Iterable[Routine]) -> None:
    """Drop each routine: directly when this account may (an admin; the owner's own
    routine not sealed yet), else through the keeper (``jobtui_retire``: the owner's
    sealed routine, only while no runner holds its job). Raises when neither may."""
    for routine in routines:
        try:
            conn.exec_driver_sql(routine.drop_sql())  # validated names: no % to format
        except DBAPIError as exc:
            job_id = _job_of(routine.name)
            if job_id is None or getattr(exc.orig, "args", (None,))[0] != 1370:
                raise
            if conn.in_transaction():
                conn.rollback()
            conn.exec_driver_sql(
                f"CALL {quote_identifier(RETIRE)}(%s, %s, %s)", (job_id, routine.type, routine.name)
            )


def _job_of(name: str) -> int | None:
    """The job id in a job routine's name (``jobtui_w_<id>_…``)."""
    for prefix in (PROC_PREFIX, FUNC_PREFIX):
        if name.lower().startswith(prefix):
            head = name[len(prefix) :].split("_", 1)[0]
            return int(head) if head.isdigit() else None
    return None


def drop_stale(
    conn: Connection,
    job_id: int,
    keep: Iterable[Routine] = (),
    *,
    types: Iterable[str] | None = None,
) -> list[str]:
    """Drop the job's routines (``jobtui_[wx]_<id>_*``, of ``types``: both by default)
    other than ``keep``.

    Only routines this account may drop go (its own; an admin's ALTER ROUTINE
    on the database covers every owner's); the others are left, and named in
    the result. They are harmless: a job runs only a routine that matches it.
    """
    kept = {(r.type, r.name.lower()) for r in keep}
    rows = conn.exec_driver_sql(
        "SELECT ROUTINE_TYPE, ROUTINE_NAME FROM information_schema.ROUTINES "
        "WHERE ROUTINE_SCHEMA = DATABASE() AND (ROUTINE_NAME LIKE %s OR ROUTINE_NAME LIKE %s)",
        (_like(PROC_PREFIX, job_id), _like(FUNC_PREFIX, job_id)),
    ).all()
    left = []
    wanted_types = {PROCEDURE, FUNCTION} if types is None else set(types)
    for rtype, name in rows:
        if (str(rtype), str(name).lower()) in kept or str(rtype) not in wanted_types:
            continue
        try:
            drop(conn, [Routine(str(rtype), str(name), "", "")])
        except DBAPIError as exc:
            log.debug("routine %s not dropped: %s", name, _reason(exc))
            left.append(str(name))
    return left


def _like(prefix: str, job_id: int) -> str:
    """``jobtui\\_w\\_12\\_%``: the routines of job 12 (``_`` is a LIKE wildcard)."""
    return f"{prefix}{int(job_id)}_".replace("_", "\\_") + "%"


def _reason(exc: BaseException) -> str:
    orig = getattr(exc, "orig", None) or exc
    args: tuple[Any, ...] = tuple(getattr(orig, "args", ()))
    if len(args) >= 2 and isinstance(args[0], int):
        return f"({args[0]}) {str(args[1]).splitlines()[0]}"
    return str(orig).splitlines()[0] if str(orig) else type(orig).__name__


# ---------------------------------------------------------------------- the runner's check


def verify(
    conn: Connection, schema_name: str, jobs: Sequence[Job], *, kind: str = PROCEDURE
) -> dict[int, Verdict]:
    """Check each job's routine of ``kind``: one exact-name query on ``mysql.proc``,
    one on ``mysql.procs_priv``.

    PROCEDURE: the ``call``/``sql`` jobs' (others are left out of the result);
    FUNCTION: the expr schedules'. A routine passes when it exists, is SQL
    SECURITY DEFINER, its definer is the job's owner (user and host), the owner
    holds no ALTER ROUTINE on it (sealed by the keeper, so it cannot change
    between this check and the call) and its body is what the row's definition
    implies (any SET ROLE prefix: a definer can only set roles granted to it).
    """
    if kind == PROCEDURE:
        jobs = [j for j in jobs if j.what.kind in ("call", "sql")]
    else:
        jobs = [j for j in jobs if j.schedule.kind == "expr" and j.schedule.expr is not None]
    if not jobs:
        return {}
    # Exact names (the primary key of mysql.proc and of mysql.procs_priv): the cost does
    # not grow with how many routines others made under a job's prefix (issue 23, 3b).
    names = {j.id: _expected(j, kind, None) for j in jobs}
    marks = ", ".join(["%s"] * len(jobs))
    raw = conn.connection.dbapi_connection
    assert raw is not None
    cur = raw.cursor()
    try:
        cur.execute(
            "SELECT name, definer, security_type, param_list, body_utf8 FROM mysql.proc "
            f"WHERE db = %s AND type = %s AND name IN ({marks})",
            (schema_name, kind, *(names[j.id].name for j in jobs)),  # type: ignore[union-attr]
        )
        rows = cur.fetchall()
        unsealed: set[tuple[str, str]] = set()
        wide: dict[str, str] = {}
        for owner in sorted({j.owner for j in jobs}):  # one owner per batch (Rule 6)
            mine = [names[j.id].name for j in jobs if j.owner == owner]  # type: ignore[union-attr]
            where, names_left = _alterable(cur, schema_name, kind, owner, mine)
            unsealed |= {(n.lower(), owner) for n in names_left}
            if where is not None:
                wide[owner] = where
    except conn.dialect.loaded_dbapi.Error as exc:
        code = getattr(exc, "args", (None,))[0]
        if code not in _DENIED:
            raise DBAPIError.instance("verify", None, exc, conn.dialect.loaded_dbapi.Error) from exc
        problem = (
            "the runner cannot verify the job's routine: its account needs SELECT on "
            "mysql.proc and mysql.procs_priv (`jobtui grant ACCOUNT --runner`, "
            "docs/privileges.md)"
        )
        return {j.id: Verdict(None, problem, runner_side=True) for j in jobs}
    finally:
        cur.close()
    by_name: dict[str, list[tuple[Any, ...]]] = {}
    for row in rows:
        by_name.setdefault(str(row[0]).lower(), []).append(row)
    return {
        j.id: _judge(
            j,
            schema_name,
            kind,
            by_name.get(names[j.id].name.lower(), []),  # type: ignore[union-attr]
            unsealed,
        )
        if j.owner not in wide
        else Verdict(
            None,
            f"the job's owner {j.owner} holds ALTER ROUTINE {wide[j.owner]}, so it could "
            "flip or replace the job's routine between the runner's check and its call: "
            "refused. Submit the job from an account without it (an operator: `jobtui "
            "grant ACCOUNT --operator`; docs/privileges.md)",
        )
        for j in jobs
    }


# Every account the owner may act as: itself and the roles granted to it (recursively:
# SET ROLE may activate any of them, inside its own routine too).
_ALTERS_EVERYTHING = (
    "WITH RECURSIVE g (u, h) AS (SELECT CAST(%s AS CHAR(128)), CAST(%s AS CHAR(255)) "
    "UNION SELECT rm.Role, '' FROM "
    "mysql.roles_mapping rm JOIN g ON rm.User = g.u AND rm.Host = g.h) "
    "SELECT CURRENT_USER() = %s, "
    "EXISTS (SELECT 1 FROM mysql.user mu JOIN g ON mu.User = g.u AND mu.Host = g.h "
    "WHERE mu.Alter_routine_priv = 'Y'), "
    "EXISTS (SELECT 1 FROM mysql.db d JOIN g ON d.User = g.u AND d.Host = g.h "
    "WHERE d.Alter_routine_priv = 'Y' AND %s LIKE d.Db)"
)


def _account(owner: str) -> tuple[str, str]:
    user, sep, host = owner.rpartition("@")
    return (user, host) if sep else (owner, "%")


def _alterable(
    cur: Any, schema_name: str, kind: str, owner: str, names: list[str]
) -> tuple[str | None, list[str]]:
    """In one query: where ``owner`` holds ALTER ROUTINE beyond its own routines (the
    keeper cannot seal those away: "on the database …" or "on every database"; None when
    it does not, or when the owner is the runner's own account: nothing to borrow), and
    which of its routines ``names`` it may still alter (not sealed)."""
    user, host = _account(owner)
    marks = ", ".join(["%s"] * len(names))
    cur.execute(
        _ALTERS_EVERYTHING
        + ", (SELECT GROUP_CONCAT(Routine_name SEPARATOR '/') FROM mysql.procs_priv "
        "WHERE Host = %s AND Db = %s AND User = %s AND Routine_type = %s "
        f"AND Routine_name IN ({marks}) AND FIND_IN_SET('Alter Routine', Proc_priv))",
        (user, host, owner, schema_name, host, schema_name, user, kind, *names),
    )
    same, everywhere, here, left = cur.fetchone()
    unsealed = [] if left is None else str(left).split("/")
    if same:
        return None, unsealed
    if everywhere:
        return "on every database", unsealed
    if here:
        return f"on the database {schema_name}", unsealed
    return None, unsealed


def _text(value: Any) -> str:
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", errors="replace")
    return "" if value is None else str(value)


def _expected(job: Job, kind: str, role: str | None) -> Routine | None:
    if kind == PROCEDURE:
        return for_what(job.id, job.what, role)
    assert job.schedule.expr is not None
    return for_expr(job.id, job.schedule.expr, role)


def _judge(
    job: Job,
    schema_name: str,
    kind: str,
    rows: list[tuple[Any, ...]],
    unsealed: set[tuple[str, str]] = frozenset(),  # type: ignore[assignment]
) -> Verdict:
    what = "--expr" if kind == FUNCTION else f"--{job.what.kind}"
    fix = f"run `jobtui change {job.name} {what} …` as the owner ({job.owner})"
    problems = []
    for name, definer, security, params, body_raw in rows:
        name, body = str(name), _text(body_raw)
        match = _ROLE_PREFIX.match(body)
        role = _unquote_role(match.group(1)) if match else None
        expected = _expected(job, kind, role)
        if expected is None or expected.name.lower() != name.lower():
            continue  # another definition's routine (the row changed, or a change is under way)
        label = f"{kind.lower()} {qualified(schema_name, name)}"
        if str(definer) != job.owner:
            problems.append(
                f"{label} was created by {definer!s}, not by the job's owner {job.owner}: "
                f"refused; {fix}"
            )
        elif str(security) != "DEFINER":
            problems.append(f"{label} is not SQL SECURITY DEFINER: refused; {fix}")
        elif (name.lower(), job.owner) in unsealed:
            problems.append(
                f"{label} is not sealed: its owner {job.owner} can still alter or replace it "
                f"(ALTER ROUTINE on it was not revoked by {SEAL}): refused; {fix}"
            )
        elif body != expected.body or _text(params) != expected.params:
            problems.append(
                f"{label} does not hold the job's definition (it was changed outside "
                f"jobtui): refused; {fix}"
            )
        else:
            return Verdict(name, None)
    if problems:
        return Verdict(None, problems[0])
    routine, prefix = ("function", FUNC_PREFIX) if kind == FUNCTION else ("procedure", PROC_PREFIX)
    return Verdict(
        None,
        f"the job's {routine} `{schema_name}`.`{prefix}{job.id}_…` that matches its definition "
        "does not exist: it was dropped, or the job was changed outside jobtui (e.g. through "
        f"the view); {fix}",
    )


def check(verdict: Verdict | None) -> str:
    """The routine's name, or RoutineRefused with the reason."""
    if verdict is None:
        raise RoutineRefused("the job's routine was not verified before the run")
    if verdict.name is None:
        raise RoutineRefused(
            verdict.problem or "the job's routine was refused", runner_side=verdict.runner_side
        )
    return verdict.name


# ---------------------------------------------------------------------- a job's routines


def install_for_job(
    engine: Engine,
    job_id: int,
    what: What | None,
    schedule: Schedule | None,
    *,
    session_role: bool = True,
) -> tuple[list[Routine], list[Routine]]:
    """Create the job's routines for ``what`` and an expr ``schedule`` (either may be
    None: not given) in a session of ``engine`` (the owner's): (wanted, created).

    ``session_role`` False: no ``SET ROLE`` prelude whatever the session's role, so the
    routines run with the owner's own grants only (an adopted event's rights).
    A refusal raises InvalidInput with the server's reason, nothing left behind.
    """
    with engine.connect() as conn:
        try:
            role = current_role(conn) if session_role else None
            want = []
            if what is not None:
                want += [r for r in [for_what(job_id, what, role)] if r is not None]
            if schedule is not None and schedule.kind == "expr" and schedule.expr is not None:
                want.append(for_expr(job_id, schedule.expr, role))
            return want, install(conn, want)
        finally:
            conn.rollback()


def drop_for_job(
    engine: Engine,
    job_id: int,
    keep: list[Routine] | None = None,
    *,
    only: list[Routine] | None = None,
    types: list[str] | None = None,
) -> None:
    """Drop the job's routines other than ``keep`` (or exactly ``only``); a failure is
    logged, never raised: a routine that matches no job is never run."""
    try:
        with engine.connect() as conn:
            try:
                if only is not None:
                    drop(conn, only)
                else:
                    left = drop_stale(conn, job_id, keep or [], types=types)
                    if left:
                        log.info("routines left for an admin to drop: %s", ", ".join(left))
            finally:
                conn.rollback()
    except SQLAlchemyError as exc:
        log.warning("could not drop the routines of job %s: %s", job_id, short_error(exc))


def install_missing(engine: Engine, jobs: Iterable[Job]) -> int:
    """Create the routines ``jobs`` need and lack, in a session of ``engine`` (their
    owner's); returns how many were created."""
    created = 0
    with engine.connect() as conn:
        try:
            role = current_role(conn)
            want = [r for j in jobs for r in wanted(j.id, j.what, j.schedule, role)]
            for i in range(0, len(want), 500):
                created += len(install(conn, want[i : i + 500]))
        finally:
            conn.rollback()
    return created
