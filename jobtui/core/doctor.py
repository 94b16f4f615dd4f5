"""``jobtui doctor``: one line per check of a jobtui database, each ``ok``, ``warn`` or
``fail`` with what to do. The checks read; none writes. A check the database does not
have (SQLite: accounts, the Event Scheduler, a server clock) is ``ok`` and says it was
skipped. docs/operations.md, "Doctor"."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta

from sqlalchemy.exc import DBAPIError, SQLAlchemyError

from jobtui.core import health, migrations, schema
from jobtui.core.accounts import Rights
from jobtui.core.dberrors import NO_SUCH_TABLE, PERMISSION_ERRORS, error_code, translate_db_error
from jobtui.core.errors import JobtuiError
from jobtui.core.runner.config import DEFAULTS
from jobtui.core.store import JobStore
from jobtui.core.timeutil import aware

OK, WARN, FAIL = "ok", "warn", "fail"
RANK = {OK: 0, WARN: 1, FAIL: 2}
SKEW_WARN = 2.0  # seconds between this machine's clock and the server's
SKEW_FAIL = 60.0
NO_TABLES = "no jobtui tables here"
DB_ACCESS_DENIED = 1044  # the account may not use the database at all
NO_DATABASE_RIGHTS = "the account holds no privilege on this database"
HEARTBEAT_TIMEOUT = DEFAULTS.heartbeat_timeout  # the runner pools' (older heartbeats are dead)
WHAT_KINDS = {
    "operator": "submit and steer its own jobs",
    "admin": "create and upgrade the tables, grant, see every job",
    "runner": "run every owner's jobs",
}


@dataclass(frozen=True)
class Check:
    check: str
    status: str  # ok | warn | fail
    detail: str
    hint: str = ""

    def to_dict(self) -> dict[str, str]:
        return asdict(self)


@dataclass(frozen=True)
class Options:
    overdue: float = health.DEFAULT_OVERDUE
    runner_account: str | None = None
    heartbeat_timeout: float = HEARTBEAT_TIMEOUT


def worst(checks: list[Check]) -> str:
    return max((c.status for c in checks), key=RANK.__getitem__, default=OK)


def run(
    store: JobStore, options: Options, *, clock: Callable[[], datetime] | None = None
) -> list[Check]:
    """Every check, in order; an unreachable database is one ``fail`` line."""
    checks: list[Check] = []
    for check in _checks(store, options, clock or store.now):
        checks.append(check)
        if check.check == "connect" and check.status == FAIL:
            if check.detail.endswith(NO_DATABASE_RIGHTS):
                checks.append(_no_rights(store))
            break
    return checks


def _checks(store: JobStore, options: Options, clock: Callable[[], datetime]) -> Iterator[Check]:
    yield _guarded("connect", lambda: _connect(store))
    found = _guarded("schema", lambda: _schema(store))
    yield found
    yield _guarded("account", lambda: _account(store))
    yield _guarded("runner account", lambda: _runner_account(store, options))
    yield _guarded("event scheduler", lambda: _event_scheduler(store))
    if found.detail == NO_TABLES:  # nothing to read: one line says so, not three more
        for name in ("runners", "overdue", "broken"):
            yield Check(name, FAIL, "skipped: no jobtui tables here", "see the schema line")
    else:
        yield _guarded("runners", lambda: _runners(store, options, clock))
        yield _guarded("overdue", lambda: _overdue(store, options, clock))
        yield _guarded("broken", lambda: _broken(store))
    yield _guarded("clock", lambda: _clock(store, clock))


def _guarded(name: str, check: Callable[[], Check]) -> Check:
    """The check, or a ``fail`` line saying why it could not be made (never a traceback)."""
    try:
        return check()
    except JobtuiError as exc:
        return Check(name, FAIL, f"could not check: {exc}", _db_hint(str(exc)))
    except SQLAlchemyError as exc:
        err = translate_db_error(exc)
        return Check(name, FAIL, f"could not check: {err}", _db_hint(str(err)))


def _db_hint(message: str) -> str:
    if "denied" in message or "privilege" in message.lower():
        return "this account lacks a grant: see the account line (docs/privileges.md)"
    return "see the connect and schema lines"


def _connect(store: JobStore) -> Check:
    try:
        store.ping()
    except JobtuiError as exc:
        if exc.__cause__ is not None and error_code(exc.__cause__) == DB_ACCESS_DENIED:
            return Check(
                "connect",
                FAIL,
                f"{store.masked_url}: {exc}: {NO_DATABASE_RIGHTS}",
                "see the account line",
            )
        return Check(
            "connect",
            FAIL,
            f"{store.masked_url}: {exc}",
            "check the URL (--db, $JOBTUI_DB), that the server runs and listens there, "
            "and the account's name and password",
        )
    return Check("connect", OK, f"{store.masked_url} ({store.backend.name}) answers")


def _no_rights(store: JobStore) -> Check:
    user = store.engine.url.username or "ACCOUNT"
    return Check(
        "account",
        FAIL,
        f"{user} holds no jobtui role on this database (it may not even connect to it)",
        f"an admin runs `jobtui grant {user}@HOST --operator --apply` (or --admin, --runner; "
        "docs/privileges.md)",
    )


def _schema(store: JobStore) -> Check:
    with store.engine.connect() as conn:
        try:
            value = conn.execute(schema.select_meta(schema.VERSION_KEY)).scalar()
        except DBAPIError as exc:
            conn.rollback()
            code = error_code(exc)
            if code == NO_SUCH_TABLE or "no such table" in str(exc.orig):
                return Check("schema", FAIL, NO_TABLES, "run `jobtui init` (as an admin)")
            if code in PERMISSION_ERRORS:
                return Check(
                    "schema",
                    FAIL,
                    "this account may not read jobtui_meta, so it cannot use this database",
                    "see the account line",
                )
            raise
        conn.rollback()
    latest = migrations.LATEST
    if value is None:
        return Check(
            "schema",
            WARN,
            "no schema version stored (made by an old jobtui)",
            "run `jobtui upgrade`",
        )
    found = int(value)
    if found > latest:
        return Check(
            "schema",
            FAIL,
            f"version {found}, newer than this jobtui's ({latest}): every other command "
            "refuses this database",
            f"upgrade jobtui to a release that knows schema version {found}",
        )
    if found < latest:
        return Check(
            "schema",
            WARN,
            f"version {found}; this jobtui brings version {latest}",
            "run `jobtui upgrade` as an admin (docs/operations.md, Upgrades)",
        )
    return Check("schema", OK, f"version {found} (this jobtui's)")


def health_kinds(rights: Rights) -> tuple[str, ...]:
    """The kinds an account may act as: every kind for a superuser, else its active roles."""
    return ("admin", "runner") if rights.superuser else rights.active


def _account(store: JobStore) -> Check:
    owner = store.owner
    with store.engine.connect() as conn:
        rights = store.backend.account_rights(conn, None)
    if rights is None:
        return Check("account", OK, f"{owner}: skipped: the database has no accounts (SQLite)")
    kinds = health_kinds(rights)
    inactive = [k for k in rights.granted if k not in rights.active]
    if not kinds:
        direct = _reads_jobs_directly(store)
        if direct is not None:
            return Check(
                "account",
                WARN,
                f"{owner} holds no jobtui role on this database, yet {direct} (privileges "
                "granted directly?)",
                f"`jobtui grant {owner} --KIND` prints the documented set of grants for "
                "its kind (docs/privileges.md)",
            )
        hint = (
            f"an admin runs `jobtui grant {owner} --operator --apply` (or --admin, --runner; "
            "docs/privileges.md)"
        )
        if inactive:
            hint = f"its role(s) for {', '.join(inactive)} are granted but not active: {hint}"
        return Check("account", FAIL, f"{owner} holds no jobtui role on this database", hint)
    can = "; ".join(f"{k}: {WHAT_KINDS[k]}" for k in kinds)
    who = "a superuser (ALL PRIVILEGES)" if rights.superuser else f"role(s) {', '.join(kinds)}"
    if inactive:
        return Check(
            "account",
            WARN,
            f"{owner}, {who}: {can}; granted but not active: {', '.join(inactive)}",
            "an admin runs `jobtui grant` again for that kind (it sets the default role)",
        )
    return Check("account", OK, f"{owner}, {who}: {can}")


def _reads_jobs_directly(store: JobStore) -> str | None:
    """What an account without a jobtui role can read of the jobs, or None."""
    try:
        tables = store.job_table
    except JobtuiError:
        return None
    if tables is schema.job:
        return "it reads the job table"
    return f"it reads its own jobs through {tables.name}"


def _runner_account(store: JobStore, options: Options) -> Check:
    name = "runner account"
    if not store.backend.grants.present:
        return Check(name, OK, "skipped: the database has no accounts (SQLite)")
    if options.runner_account is None:
        problem = store.run_rights_problem()
        if problem is None and store.sees_all:
            with store.engine.connect() as conn:
                own = store.backend.account_rights(conn, None)
            if own is not None and _lacks_executor(own):
                return _no_executor(name, store.owner)
            return Check(name, OK, f"skipped: this account ({store.owner}) may run jobs itself")
        return Check(
            name,
            OK,
            "skipped: no runner account named",
            "pass --runner-account ACCOUNT (read with SHOW GRANTS FOR: needs SELECT on the "
            "mysql database), or run `jobtui doctor` with the runner's own credentials",
        )
    with store.engine.connect() as conn:
        rights = store.backend.account_rights(conn, options.runner_account)
    who = options.runner_account
    if rights is None:
        return Check(
            name,
            WARN,
            f"{who}: this account may not read its grants",
            "SHOW GRANTS FOR another account needs SELECT on the mysql database (jobtui's "
            "admin role has none): run `jobtui doctor --runner-account` as the server's "
            "root, or `jobtui doctor` with the runner's own credentials",
        )
    if not rights.exists:
        return Check(name, FAIL, f"{who}: the server knows no such account", "check the name")
    if _lacks_executor(rights):
        return _no_executor(name, who)
    if rights.superuser or "runner" in rights.active:
        how = "a superuser (ALL PRIVILEGES)" if rights.superuser else "the runner role, active"
        return Check(name, OK, f"{who}: {how}")
    hint = f"an admin runs `jobtui grant {who} --runner --apply`"
    if "runner" in rights.granted:
        return Check(name, FAIL, f"{who}: the runner role is granted but not its default", hint)
    return Check(name, FAIL, f"{who}: no runner role on this database", hint)


def _lacks_executor(rights: Rights) -> bool:
    """A runner account (not a superuser) without the executor role: its runners' executor
    connections keep the runner role while owner code runs (docs/privileges.md, Rule 6)."""
    return "runner" in rights.active and not rights.superuser and not rights.executor


def _no_executor(name: str, who: str) -> Check:
    return Check(
        name,
        WARN,
        f"{who}: the runner role, active, but not the executor role: owner code runs on "
        "a connection with the runner role's rights, not EXECUTE alone",
        f"an admin runs `jobtui grant {who} --runner --apply` again (it grants the "
        "executor role, which older versions did not)",
    )


def _event_scheduler(store: JobStore) -> Check:
    name = "event scheduler"
    if not store.backend.has_events:
        return Check(name, OK, f"skipped: {store.backend.no_events}")
    with store.engine.connect() as conn:
        state, _zone = store.backend.event_scheduler(conn)
        conn.rollback()
    if state == "ON":
        return Check(name, OK, "ON: the server's events fire")
    return Check(
        name,
        WARN,
        f"{state}: the server's own events (`jobtui events`) do not fire; jobtui's runners "
        "do not need it",
        "SET GLOBAL event_scheduler = ON (and event_scheduler=ON in the server's config)"
        if state == "OFF"
        else "the server was started with event_scheduler=DISABLED: change its config",
    )


def _runners(store: JobStore, options: Options, clock: Callable[[], datetime]) -> Check:
    result = health.check(
        store.runners(),
        [],
        aware(clock()),
        timeout=options.heartbeat_timeout,
        overdue=options.overdue,
    )
    if not result.live_runners:
        return Check(
            "runners",
            FAIL,
            "no live runner serves this database",
            "start `jobtui worker` (or the console with --runners N); `jobtui runners` shows "
            "the registered ones and their heartbeats",
        )
    return Check(
        "runners", OK, f"{len(result.live_runners)} live: {', '.join(result.live_runners)}"
    )


def _overdue(store: JobStore, options: Options, clock: Callable[[], datetime]) -> Check:
    jobs = store.list_jobs(all_owners=store.sees_all)
    result = health.check([], jobs, aware(clock()), timeout=0, overdue=options.overdue)
    if result.overdue:
        names = ", ".join(j["name"] for j in result.overdue[:10])
        more = f" and {len(result.overdue) - 10} more" if len(result.overdue) > 10 else ""
        return Check(
            "overdue",
            FAIL,
            f"{len(result.overdue)} job(s) due more than {options.overdue:g} s ago and not "
            f"started: {names}{more}",
            "see the runners line; `jobtui runners --check` repeats this check",
        )
    scope = "every owner's" if store.sees_all else "this account's"
    return Check("overdue", OK, f"{len(jobs)} job(s) ({scope}), none overdue")


def _broken(store: JobStore) -> Check:
    broken = [j for j in store.list_jobs(all_owners=store.sees_all) if j.broken]
    if broken:
        names = ", ".join(j.name for j in broken[:10])
        more = f" and {len(broken) - 10} more" if len(broken) > 10 else ""
        return Check(
            "broken",
            WARN,
            f"{len(broken)} BROKEN job(s), which never run until cleared: {names}{more}",
            "`jobtui show NAME` says why; `jobtui broken NAME --off` clears it once fixed",
        )
    return Check("broken", OK, "no BROKEN job")


def _clock(store: JobStore, clock: Callable[[], datetime]) -> Check:
    with store.engine.connect() as conn:
        before = time.monotonic()
        here = aware(clock())
        server = store.backend.server_time(conn)
        after = time.monotonic()
    if server is None:
        return Check("clock", OK, "skipped: the database uses this machine's clock (SQLite)")
    # the server's reading falls between ours and the answer: compare to the midpoint
    skew = (aware(server) - (here + timedelta(seconds=(after - before) / 2))).total_seconds()
    detail = f"the server's clock is {abs(skew):.3f} s {'ahead of' if skew > 0 else 'behind'} this machine's"
    hint = (
        "synchronise both clocks (NTP): schedules, heartbeats and leases compare this "
        "machine's time with the server's"
    )
    if abs(skew) >= SKEW_FAIL:
        return Check("clock", FAIL, detail, hint)
    if abs(skew) >= SKEW_WARN:
        return Check("clock", WARN, detail, hint)
    return Check("clock", OK, detail)
