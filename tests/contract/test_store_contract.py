"""The store contract: one suite, run on SQLite and on MariaDB.

Every test takes the ``store`` or ``db_url`` fixture (tests/conftest.py), so
each runs once per backend; MariaDB-only behaviour (stored procedures) uses
``mariadb_url``. Real databases only: rows are read back with SQLAlchemy, and
where a test needs state no public method creates (another owner's job, run
rows, a running job) it writes that row directly.
"""

from __future__ import annotations

import json
import math
import secrets
import sqlite3
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from sqlalchemy import Column, MetaData, Table, insert, inspect, select, text, update
from sqlalchemy.exc import IntegrityError
from support.demo_db import make_demo
from support.mariadb import admin_connection

from jobtui.core import migrations, schema
from jobtui.core.backends.mysql import owner_index
from jobtui.core.errors import (
    DatabaseUnavailable,
    InvalidInput,
    JobNotFound,
    JobtuiError,
    ReadOnlyError,
)
from jobtui.core.model import Intent, Job, Outcome, Schedule, Status, What
from jobtui.core.schedules import make_schedule
from jobtui.core.store import JobStore, open_store
from jobtui.core.timeutil import to_db
from jobtui.core.transitions import derive_status

T0 = datetime(2030, 1, 7, 12, 0, 0, tzinfo=UTC)


class FakeClock:
    """An injectable clock that only moves when told to."""

    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(T0)


@pytest.fixture
def cstore(db_url: str, clock: FakeClock) -> Iterator[JobStore]:
    """A store on the parametrized backend whose clock stands still at T0."""
    s = open_store(db_url, clock=clock)
    try:
        yield s
    finally:
        s.close()


# ---------------------------------------------------------------------- helpers


def next_day_expr(store: JobStore) -> str:
    """Oracle's INTERVAL 'SYSDATE + 1' in the backend's own SQL."""
    return (
        "datetime(NOW(), '+1 day')" if store.backend.name == "sqlite" else "NOW() + INTERVAL 1 DAY"
    )


def dump_jobs(store: JobStore) -> list[tuple[Any, ...]]:
    """Every column of every job row, in id order: to prove nothing changed."""
    with store.engine.connect() as conn:
        rows = conn.execute(select(schema.job).order_by(schema.job.c.id)).all()
        conn.rollback()
    return [tuple(r) for r in rows]


def row_of(store: JobStore, job_id: int) -> Any:
    with store.engine.connect() as conn:
        row = conn.execute(select(schema.job).where(schema.job.c.id == job_id)).one()
        conn.rollback()
    return row


def set_columns(store: JobStore, job_id: int, **values: Any) -> None:
    """Write state columns directly (what a runner would), keeping status derived."""
    with store.engine.begin() as conn:
        conn.execute(update(schema.job).where(schema.job.c.id == job_id).values(**values))
        row = conn.execute(select(schema.job).where(schema.job.c.id == job_id)).one()
        status = derive_status(
            intent=row.intent, broken=bool(row.broken), running=bool(row.running), phase=row.phase
        )
        conn.execute(
            update(schema.job).where(schema.job.c.id == job_id).values(status=status.value)
        )


def insert_foreign_job(store: JobStore, template: Job, owner: str, name: str) -> None:
    """A copy of ``template``'s row owned by someone else (another DB account)."""
    row = row_of(store, template.id)._asdict()
    row.pop("id")
    row.update(owner=owner, name=name)
    with store.engine.begin() as conn:
        conn.execute(insert(schema.job).values(**row))


def add_run(
    store: JobStore,
    job: Job,
    slot: datetime,
    outcome: str,
    *,
    owner: str | None = None,
    error: str | None = None,
    runner: str = "runner-1",
) -> None:
    with store.engine.begin() as conn:
        conn.execute(
            insert(schema.run).values(
                job_id=job.id,
                job_name=job.name,
                owner=owner or job.owner,
                scheduled_for=to_db(slot),
                started=to_db(slot),
                finished=to_db(slot + timedelta(seconds=1.5)),
                duration=1.5,
                outcome=outcome,
                error=error,
                runner=runner,
                skipped=0,
                manual=False,
            )
        )


def assert_status_derived(store: JobStore, job: Job) -> None:
    """The stored status is always derive_status() of the stored state columns."""
    row = row_of(store, job.id)
    assert row.status == derive_status(
        intent=row.intent, broken=bool(row.broken), running=bool(row.running), phase=row.phase
    )


def sql_every(store: JobStore, name: str = "j", every: float = 60, **kw: Any) -> Job:
    return store.submit(name, What("sql", "SELECT 1"), make_schedule("every", every=every), **kw)


# ---------------------------------------------------------------------- submit


def test_submit_sql_every(cstore: JobStore) -> None:
    job = cstore.submit(
        "nightly",
        What("sql", "UPDATE jobtui_meta SET value = value WHERE 1 = 0;"),
        make_schedule("every", every=2.5),
        description="touches nothing",
        max_failures=3,
    )
    assert job.owner == cstore.owner
    assert job.name == "nightly"
    assert job.description == "touches nothing"
    assert job.what == What("sql", "UPDATE jobtui_meta SET value = value WHERE 1 = 0")
    assert job.schedule.kind == "every" and job.schedule.every == 2.5
    assert (job.status, job.intent, job.phase) == (Status.ENABLED, Intent.ENABLED, "ENABLED")
    assert (job.broken, job.failures, job.max_failures, job.cycles) == (False, 0, 3, 0)
    assert job.next_run == T0
    assert job.created == T0 and job.anchor == T0
    assert cstore.get("nightly") == job
    data = job.to_dict()
    documented = "id owner name status broken failures cycles next_run last_run last_outcome"
    assert {*documented.split(), "schedule", "what"} <= data.keys()
    assert data["next_run"] == "2030-01-07T12:00:00+00:00"
    json.dumps(data)  # the --json shape is serializable as is
    assert_status_derived(cstore, job)


def test_submit_action_builtin(cstore: JobStore) -> None:
    make_demo(cstore)  # the demo.* actions: a demo database
    job = cstore.submit("noop", What("action", "demo.noop"), make_schedule("once"))
    assert job.what == What("action", "demo.noop")
    assert job.what.describe() == "action demo.noop"
    assert job.next_run == T0
    sleeper = cstore.submit(
        "sleeper", What("action", "demo.sleep", ("0.5",)), make_schedule("every", every=60)
    )
    assert cstore.get("sleeper").what.args == ("0.5",) == sleeper.what.args


def test_submit_disabled(cstore: JobStore) -> None:
    job = sql_every(cstore, disabled=True)
    assert (job.status, job.intent) == (Status.DISABLED, Intent.DISABLED)
    assert job.next_run == T0  # its schedule stands; only intent keeps it from running


def test_submit_duplicate_name_is_invalid_and_changes_nothing(cstore: JobStore) -> None:
    sql_every(cstore, "dup")
    before = dump_jobs(cstore)
    with pytest.raises(InvalidInput, match="already exists"):
        sql_every(cstore, "dup", every=5)
    assert dump_jobs(cstore) == before


@pytest.fixture
def proc_store(mariadb_url: str, clock: FakeClock) -> Iterator[JobStore]:
    """A MariaDB store whose database holds two procedures to call."""
    database = mariadb_url.rsplit("/", 1)[1]
    conn = admin_connection(database)
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE calls (a INT, b VARCHAR(20))")
        cur.execute(
            "CREATE PROCEDURE record_call(IN a INT, IN b VARCHAR(20)) "
            "BEGIN INSERT INTO calls VALUES (a, b); END"
        )
        cur.execute("CREATE PROCEDURE with_out(OUT n INT) BEGIN SET n = 1; END")
        cur.execute("CREATE PROCEDURE no_args() BEGIN END")
    conn.close()
    s = open_store(mariadb_url, clock=clock)
    try:
        yield s
    finally:
        s.close()


@pytest.mark.mariadb
def test_submit_call_procedure(proc_store: JobStore) -> None:
    db = proc_store.engine.url.database
    job = proc_store.submit(
        "caller",
        What("call", f"{db}.record_call", ("7", "it's ok")),
        make_schedule("every", every=10),
    )
    assert job.what.kind == "call"
    assert job.what.args == ("7", "it's ok")
    assert proc_store.get("caller").what.describe() == f"call {db}.record_call('7', \"it's ok\")"
    proc_store.submit("bare", What("call", f"{db}.no_args"), make_schedule("once"))


@pytest.mark.mariadb
@pytest.mark.parametrize(
    ("target", "args", "message"),
    [
        ("{db}.missing_proc", (), "does not exist"),
        ("no_such_db.record_call", ("1", "x"), "does not exist"),
        ("{db}.record_call", ("1",), r"takes 2 argument\(s\), 1 given"),
        ("{db}.record_call", ("1", "2", "3"), r"takes 2 argument\(s\), 3 given"),
        ("{db}.no_args", ("1",), r"takes 0 argument\(s\), 1 given"),
        ("{db}.with_out", ("1",), "OUT/INOUT"),
    ],
)
def test_submit_call_bad_procedure(
    proc_store: JobStore, target: str, args: tuple[str, ...], message: str
) -> None:
    db = proc_store.engine.url.database
    sql_every(proc_store, "existing")
    before = dump_jobs(proc_store)
    with pytest.raises(InvalidInput, match=message):
        proc_store.submit(
            "caller", What("call", target.format(db=db), args), make_schedule("every", every=10)
        )
    with pytest.raises(InvalidInput, match=message):
        proc_store.change("existing", what=What("call", target.format(db=db), args))
    assert dump_jobs(proc_store) == before


def test_call_on_sqlite_is_refused(sqlite_url: str) -> None:
    s = open_store(sqlite_url)
    try:
        with pytest.raises(InvalidInput, match="needs MySQL/MariaDB"):
            s.submit("c", What("call", "main.proc"), make_schedule("once"))
        assert dump_jobs(s) == []
    finally:
        s.close()


# ---------------------------------------------------------------------- schedule kinds


def test_schedule_every_with_window(cstore: JobStore) -> None:
    start = T0 + timedelta(hours=1)
    finish = start + timedelta(seconds=25)
    job = cstore.submit(
        "windowed",
        What("sql", "SELECT 1"),
        make_schedule("every", every=10, start=start, finish=finish),
    )
    assert job.next_run == start
    assert job.schedule.start == start and job.schedule.finish == finish
    assert cstore.preview(job) == [start + timedelta(seconds=s) for s in (0, 10, 20)]
    assert job.schedule.describe() == (
        "every 10 s from 2030-01-07 13:00:00 UTC until 2030-01-07 13:00:25 UTC"
    )


def test_schedule_every_grid_from_past_start(cstore: JobStore) -> None:
    start = T0 - timedelta(seconds=95)  # slots at -95, -85 ... -5, +5
    job = cstore.submit(
        "late", What("sql", "SELECT 1"), make_schedule("every", every=10, start=start)
    )
    assert job.next_run == T0 + timedelta(seconds=5)
    assert cstore.preview(job)[:2] == [T0 + timedelta(seconds=5), T0 + timedelta(seconds=15)]


def test_schedule_window_already_over_is_finished(cstore: JobStore) -> None:
    job = cstore.submit(
        "over",
        What("sql", "SELECT 1"),
        make_schedule(
            "every",
            every=10,
            start=T0 - timedelta(hours=2),
            finish=T0 - timedelta(hours=1),
        ),
    )
    assert job.next_run is None
    assert (job.phase, job.status) == ("FINISHED", Status.FINISHED)
    assert cstore.preview(job) == []


def test_schedule_cron_with_tz(cstore: JobStore) -> None:
    job = cstore.submit(
        "berlin",
        What("sql", "SELECT 1"),
        make_schedule("cron", cron="30  9 * * 1-5", tz="Europe/Berlin"),
    )
    assert job.schedule.cron == "30 9 * * 1-5"  # normalised spacing
    assert job.schedule.tz == "Europe/Berlin"
    assert job.schedule.describe() == "cron 30 9 * * 1-5 Europe/Berlin"
    # T0 is Monday 2030-01-07 12:00 UTC = 13:00 in Berlin: the next 09:30 is Tuesday
    assert job.next_run == datetime(2030, 1, 8, 9, 30, tzinfo=ZoneInfo("Europe/Berlin"))
    times = cstore.preview(job)
    assert len(times) == 5
    for t in times:
        local = t.astimezone(ZoneInfo("Europe/Berlin"))
        assert (local.hour, local.minute) == (9, 30) and local.weekday() < 5
    assert times == sorted(set(times))


def test_schedule_cron_six_fields(cstore: JobStore) -> None:
    job = cstore.submit(
        "secs", What("sql", "SELECT 1"), make_schedule("cron", cron="* * * * * */15")
    )
    # T0 is on a slot: a job submitted exactly then runs at once
    assert cstore.preview(job) == [T0 + timedelta(seconds=s) for s in (0, 15, 30, 45, 60)]


def test_schedule_expr(cstore: JobStore) -> None:
    expr = next_day_expr(cstore)
    job = cstore.submit("daily", What("sql", "SELECT 1"), make_schedule("expr", expr=expr))
    assert job.schedule.expr == expr
    assert job.schedule.describe() == f"expr {expr}"
    assert job.next_run == T0  # the first run is now; the expression gives the ones after
    assert cstore.evaluate_expr(expr, T0) == T0 + timedelta(days=1)
    assert cstore.preview(job) == [T0 + timedelta(days=d) for d in range(5)]


def test_schedule_expr_with_start(cstore: JobStore) -> None:
    start = T0 + timedelta(days=3)
    job = cstore.submit(
        "later",
        What("sql", "SELECT 1"),
        make_schedule("expr", expr=next_day_expr(cstore), start=start),
    )
    assert job.next_run == start
    assert cstore.preview(job, 3) == [start + timedelta(days=d) for d in range(3)]


def test_schedule_once(cstore: JobStore) -> None:
    at = T0 + timedelta(minutes=30)
    job = cstore.submit("once", What("sql", "SELECT 1"), make_schedule("once", start=at))
    assert job.next_run == at
    assert cstore.preview(job) == [at]
    assert job.schedule.describe() == "once at 2030-01-07 12:30:00 UTC"
    now_job = cstore.submit("now", What("sql", "SELECT 1"), make_schedule("once"))
    assert now_job.next_run == T0
    assert now_job.schedule.describe() == "once"


def test_preview_five_times(cstore: JobStore) -> None:
    every = sql_every(cstore, "e", every=0.5)
    assert cstore.preview(every) == [T0 + timedelta(seconds=0.5 * k) for k in range(5)]
    cron = cstore.submit("c", What("sql", "SELECT 1"), make_schedule("cron", cron="*/5 * * * *"))
    assert cstore.preview(cron) == [T0 + timedelta(minutes=5 * k) for k in range(5)]
    expr = cstore.submit(
        "x", What("sql", "SELECT 1"), make_schedule("expr", expr=next_day_expr(cstore))
    )
    assert cstore.preview(expr) == [T0 + timedelta(days=k) for k in range(5)]
    assert cstore.preview(expr, 2) == [T0, T0 + timedelta(days=1)]
    # preview_schedule: the console's edit form previews an unsaved schedule
    assert cstore.preview_schedule(make_schedule("every", every=60), 3) == [
        T0,
        T0 + timedelta(minutes=1),
        T0 + timedelta(minutes=2),
    ]


def test_preview_expr_null_ends_the_list(cstore: JobStore) -> None:
    # NULL means "this was the last run" (DBMS_JOB): the preview stops there
    expr = (
        "CASE WHEN NOW() < '2030-01-09' THEN datetime(NOW(), '+1 day') END"
        if cstore.backend.name == "sqlite"
        else "IF(NOW() < '2030-01-09', NOW() + INTERVAL 1 DAY, NULL)"
    )
    job = cstore.submit("ending", What("sql", "SELECT 1"), make_schedule("expr", expr=expr))
    assert cstore.preview(job) == [T0, T0 + timedelta(days=1), T0 + timedelta(days=2)]


# ---------------------------------------------------------------------- change


def test_change_only_what_is_given(cstore: JobStore, clock: FakeClock) -> None:
    make_demo(cstore)  # the demo.* actions: a demo database
    job = cstore.submit(
        "keep",
        What("sql", "SELECT 1"),
        make_schedule("cron", cron="0 3 * * *", tz="America/New_York"),
        description="before",
        max_failures=5,
    )
    clock.advance(60)
    changed = cstore.change("keep", description="after")
    assert changed.description == "after"
    assert changed.what == job.what
    assert changed.schedule == job.schedule
    assert changed.next_run == job.next_run
    assert changed.max_failures == 5
    assert changed.updated == T0 + timedelta(seconds=60)

    changed = cstore.change("keep", max_failures=9)
    assert (changed.max_failures, changed.description) == (9, "after")

    changed = cstore.change("keep", what=What("action", "demo.noop"))
    assert changed.what == What("action", "demo.noop")
    assert changed.schedule == job.schedule and changed.next_run == job.next_run

    changed = cstore.change("keep", tz="Asia/Tokyo")  # the cron stays, its zone changes
    assert (changed.schedule.cron, changed.schedule.tz) == ("0 3 * * *", "Asia/Tokyo")
    assert changed.next_run == datetime(2030, 1, 8, 3, 0, tzinfo=ZoneInfo("Asia/Tokyo"))
    assert_status_derived(cstore, changed)


def test_change_schedule_recomputes_next_run(cstore: JobStore, clock: FakeClock) -> None:
    job = sql_every(cstore, "resched", every=3600)
    assert job.next_run == T0
    clock.advance(100)
    changed = cstore.change("resched", every=30)
    assert changed.schedule.kind == "every" and changed.schedule.every == 30
    assert changed.next_run == T0 + timedelta(seconds=100)  # a new grid from now
    assert changed.anchor == T0 + timedelta(seconds=100)

    changed = cstore.change("resched", cron="0 0 1 * *")
    assert changed.schedule.kind == "cron" and changed.schedule.every is None
    assert changed.next_run == datetime(2030, 2, 1, tzinfo=UTC)

    changed = cstore.change("resched", expr=next_day_expr(cstore))
    assert changed.schedule.kind == "expr" and changed.schedule.cron is None
    assert changed.next_run == clock.now

    start = T0 + timedelta(days=10)
    changed = cstore.change("resched", kind="once", start=start)
    assert changed.schedule == Schedule("once", start=start)
    assert changed.next_run == start

    changed = cstore.change("resched", finish=start + timedelta(days=1))
    assert changed.schedule.start == start and changed.schedule.finish == start + timedelta(days=1)


def test_change_window_to_the_past_finishes_and_back_reenables(
    cstore: JobStore, clock: FakeClock
) -> None:
    sql_every(cstore, "w", every=10)
    changed = cstore.change("w", start=T0 - timedelta(days=2), finish=T0 - timedelta(days=1))
    assert (changed.next_run, changed.status) == (None, Status.FINISHED)
    changed = cstore.change("w", finish=None)
    assert changed.status is Status.ENABLED
    assert changed.next_run is not None and changed.next_run >= T0


def test_change_disabled_flag(cstore: JobStore) -> None:
    sql_every(cstore, "d")
    assert cstore.change("d", disabled=True).status is Status.DISABLED
    assert cstore.change("d", disabled=False).status is Status.ENABLED


def test_change_unknown_job(cstore: JobStore) -> None:
    with pytest.raises(JobNotFound, match="unknown job 'ghost'"):
        cstore.change("ghost", description="x")


# ---------------------------------------------------------------------- remove / get / list


def test_remove_keeps_history(cstore: JobStore) -> None:
    job = sql_every(cstore, "gone")
    other = sql_every(cstore, "stays")
    add_run(cstore, job, T0, "ok")
    removed = cstore.remove("gone")
    assert removed.id == job.id
    with pytest.raises(JobNotFound):
        cstore.get("gone")
    assert [j.name for j in cstore.list_jobs()] == ["stays"]
    assert cstore.get("stays") == other
    history = cstore.runs(job_id=job.id)
    assert [(r.job, r.outcome) for r in history] == [("gone", Outcome.OK)]
    with pytest.raises(JobNotFound):
        cstore.remove("gone")


def test_get_and_list_are_scoped_to_the_owner(cstore: JobStore) -> None:
    mine = sql_every(cstore, "shared")
    sql_every(cstore, "only_mine")
    insert_foreign_job(cstore, mine, "alice@%", "shared")
    insert_foreign_job(cstore, mine, "alice@%", "only_hers")

    assert [j.name for j in cstore.list_jobs()] == ["only_mine", "shared"]
    assert {j.owner for j in cstore.list_jobs()} == {cstore.owner}
    everyone = cstore.list_jobs(all_owners=True)
    assert sorted((j.owner, j.name) for j in everyone) == sorted(
        [
            (cstore.owner, "shared"),
            (cstore.owner, "only_mine"),
            ("alice@%", "shared"),
            ("alice@%", "only_hers"),
        ]
    )
    assert [j.name for j in cstore.list_jobs(owner="alice@%")] == ["only_hers", "shared"]

    assert cstore.get("shared").owner == cstore.owner
    assert cstore.get("shared", owner="alice@%").owner == "alice@%"
    with pytest.raises(JobNotFound, match="unknown job 'only_hers'"):
        cstore.get("only_hers")
    with pytest.raises(JobNotFound, match="'only_mine' for owner 'alice@%'"):
        cstore.get("only_mine", owner="alice@%")
    # steering her job by name from my account does not touch hers
    cstore.pause("shared")
    assert cstore.get("shared", owner="alice@%").status is Status.ENABLED
    with pytest.raises(JobNotFound):
        cstore.pause("only_hers")
    assert cstore.counts_by_status(all_owners=False) == {"ENABLED": 1, "PAUSED": 1}
    assert cstore.counts_by_status() == {"ENABLED": 3, "PAUSED": 1}


def test_owner_is_the_connecting_account(store: JobStore) -> None:
    if store.backend.name == "sqlite":
        import getpass

        assert store.owner == getpass.getuser()
    else:
        with store.engine.connect() as conn:
            assert store.owner == conn.execute(text("SELECT CURRENT_USER()")).scalar_one()


# ---------------------------------------------------------------------- steering


def step(store: JobStore, job: str, op: str) -> Job:
    if op == "broken_on":
        return store.broken(job, True)
    if op == "broken_off":
        return store.broken(job, False)
    return getattr(store, op)(job)  # type: ignore[no-any-return]


# (operation, expected status, intent, phase, broken) in sequence, from a fresh job
TRANSITIONS: list[tuple[str, Status, Intent, str, bool]] = [
    ("pause", Status.PAUSED, Intent.PAUSED, "ENABLED", False),
    ("pause", Status.PAUSED, Intent.PAUSED, "ENABLED", False),
    ("resume", Status.RESUMED, Intent.ENABLED, "RESUMED", False),
    ("resume", Status.RESUMED, Intent.ENABLED, "RESUMED", False),  # no-op
    ("disable", Status.DISABLED, Intent.DISABLED, "RESUMED", False),
    ("enable", Status.ENABLED, Intent.ENABLED, "ENABLED", False),
    ("abort", Status.ABORTED, Intent.ENABLED, "ABORTED", False),
    ("resume", Status.RESUMED, Intent.ENABLED, "RESUMED", False),
    ("abort", Status.ABORTED, Intent.ENABLED, "ABORTED", False),
    ("enable", Status.ENABLED, Intent.ENABLED, "ENABLED", False),
    ("broken_on", Status.BROKEN, Intent.ENABLED, "ENABLED", True),
    ("pause", Status.PAUSED, Intent.PAUSED, "ENABLED", True),  # intent outranks broken
    ("resume", Status.BROKEN, Intent.ENABLED, "RESUMED", True),
    ("disable", Status.DISABLED, Intent.DISABLED, "RESUMED", True),
    ("enable", Status.BROKEN, Intent.ENABLED, "ENABLED", True),  # enabling does not clear it
    ("broken_off", Status.ENABLED, Intent.ENABLED, "ENABLED", False),
    ("run_now", Status.ENABLED, Intent.ENABLED, "ENABLED", False),
]


def test_operator_transitions(cstore: JobStore, clock: FakeClock) -> None:
    job = sql_every(cstore, "steer", every=10)
    assert job.status is Status.ENABLED
    for i, (op, status, intent, phase, broken) in enumerate(TRANSITIONS):
        clock.advance(1)
        after = step(cstore, "steer", op)
        got = (after.status, after.intent, after.phase, after.broken)
        assert got == (status, intent, phase, broken), f"step {i}: {op}"
        assert after == cstore.get("steer")
        assert_status_derived(cstore, after)
        assert not after.abort_requested  # nothing is running
    assert cstore.get("steer").run_now is True


def test_resume_rearms_from_the_next_slot(cstore: JobStore, clock: FakeClock) -> None:
    job = sql_every(cstore, "r", every=10)
    cstore.pause("r")
    clock.advance(95)  # nine slots missed while paused
    resumed = cstore.resume("r")
    assert resumed.next_run == job.next_run + timedelta(seconds=100)  # no burst, on the grid
    assert resumed.next_run > clock.now


def test_broken_on_off(cstore: JobStore, clock: FakeClock) -> None:
    job = sql_every(cstore, "b", every=10)
    set_columns(cstore, job.id, failures=4, phase="ERROR", last_error="boom")
    assert cstore.get("b").status is Status.ERROR
    on = cstore.broken("b", True, reason="stop it")
    assert (on.status, on.broken, on.broken_reason, on.failures) == (
        Status.BROKEN,
        True,
        "stop it",
        4,
    )
    clock.advance(42)
    off = cstore.broken("b", False)
    assert (off.status, off.broken, off.broken_reason, off.failures) == (
        Status.ENABLED,
        False,
        None,
        0,
    )
    assert off.next_run == T0 + timedelta(seconds=50)  # the next slot after now
    nxt = T0 + timedelta(days=2)
    cstore.broken("b", True)
    again = cstore.broken("b", False, next_run=nxt)
    assert again.next_run == nxt
    with pytest.raises(InvalidInput, match="--next"):
        cstore.broken("b", True, next_run=nxt)


def test_abort_of_a_running_job_requests_the_kill(cstore: JobStore) -> None:
    job = sql_every(cstore, "busy")
    set_columns(cstore, job.id, running=True, runner_id="runner-1", this_run=to_db(T0))
    running = cstore.get("busy")
    assert running.status is Status.RUNNING
    # RUNNING outranks every operator state: the row still says what is happening
    assert cstore.pause("busy").status is Status.RUNNING
    assert cstore.get("busy").intent is Intent.PAUSED
    aborted = cstore.abort("busy")
    assert (aborted.status, aborted.phase, aborted.abort_requested) == (
        Status.RUNNING,
        "ABORTED",
        True,
    )
    assert_status_derived(cstore, aborted)
    with pytest.raises(InvalidInput, match="running now"):
        cstore.run_now("busy")  # the runner would drop it when this run ends
    assert cstore.get("busy").run_now is False
    # the runner finishes the run and clears running: the phase shows
    set_columns(cstore, job.id, running=False, abort_requested=False)
    assert cstore.get("busy").status is Status.PAUSED
    assert cstore.resume("busy").status is Status.RESUMED


def test_run_now_does_not_change_status(cstore: JobStore) -> None:
    sql_every(cstore, "rn")
    cstore.broken("rn", True)
    job = cstore.run_now("rn")
    assert (job.run_now, job.status) == (True, Status.BROKEN)
    cstore.abort("rn")
    assert cstore.get("rn").run_now is False  # abort cancels a pending run-now


def test_finished_job(cstore: JobStore, clock: FakeClock) -> None:
    job = cstore.submit("one", What("sql", "SELECT 1"), make_schedule("once"))
    set_columns(cstore, job.id, phase="FINISHED", next_run=None, cycles=1)
    assert cstore.get("one").status is Status.FINISHED
    with pytest.raises(InvalidInput, match="FINISHED"):
        cstore.pause("one")
    assert cstore.abort("one").status is Status.FINISHED  # nothing to abort
    assert cstore.disable("one").status is Status.FINISHED  # FINISHED outranks intent
    clock.advance(5)
    again = cstore.enable("one")
    assert (again.status, again.phase, again.next_run) == (
        Status.ENABLED,
        "ENABLED",
        T0 + timedelta(seconds=5),
    )


def test_steering_a_disabled_job(cstore: JobStore) -> None:
    sql_every(cstore, "off", disabled=True)
    before = dump_jobs(cstore)
    with pytest.raises(InvalidInput, match="DISABLED"):
        cstore.pause("off")
    with pytest.raises(InvalidInput, match="enable"):
        cstore.resume("off")
    assert dump_jobs(cstore) == before


@pytest.mark.parametrize("op", ["pause", "resume", "enable", "disable", "abort", "run_now"])
def test_steering_unknown_job(store: JobStore, op: str) -> None:
    with pytest.raises(JobNotFound):
        getattr(store, op)("nobody")


# ---------------------------------------------------------------------- export / import


def make_varied_jobs(store: JobStore) -> None:
    make_demo(store)  # the demo.* actions: a demo database
    store.submit(
        "every_window",
        What("sql", "SELECT 1"),
        make_schedule("every", every=0.5, start=T0, finish=T0 + timedelta(days=1)),
        description="with a window",
        max_failures=2,
    )
    store.submit(
        "cron_tz",
        What("action", "demo.noop"),
        make_schedule("cron", cron="0 */2 * * *", tz="America/New_York"),
    )
    store.submit(
        "expr_daily",
        What("sql", "SELECT 2"),
        make_schedule("expr", expr=next_day_expr(store)),
        disabled=True,
    )
    store.submit(
        "once_later",
        What("action", "demo.sleep", ("1",)),
        make_schedule("once", start=T0 + timedelta(hours=5)),
        description="ünïcödé ✓",
    )


def test_export_import_round_trip(cstore: JobStore) -> None:
    make_varied_jobs(cstore)
    exported = cstore.export()
    text_form = json.dumps(exported)  # what `jobtui export` writes
    assert [e["name"] for e in exported] == ["cron_tz", "every_window", "expr_daily", "once_later"]
    definitions = {
        j.name: (j.what, j.schedule, j.description, j.max_failures, j.intent)
        for j in cstore.list_jobs()
    }
    for name in list(definitions):
        cstore.remove(name)
    assert cstore.list_jobs() == []

    assert cstore.import_jobs(json.loads(text_form)) == (4, 0)
    again = {
        j.name: (j.what, j.schedule, j.description, j.max_failures, j.intent)
        for j in cstore.list_jobs()
    }
    assert again == definitions
    assert cstore.export() == exported
    for job in cstore.list_jobs():
        assert_status_derived(cstore, job)
    # importing the same file again changes the jobs in place
    assert cstore.import_jobs({"jobs": exported}) == (0, 4)
    assert cstore.export() == exported


def test_import_validates_everything_before_writing(cstore: JobStore) -> None:
    make_varied_jobs(cstore)
    exported = cstore.export()
    before = dump_jobs(cstore)

    def variant(**patch: Any) -> list[dict[str, Any]]:
        data = json.loads(json.dumps(exported))
        data[0]["description"] = "changed by import"
        new = {
            "name": "fresh",
            "what": {"kind": "sql", "target": "SELECT 1", "args": []},
            "schedule": {"kind": "every", "every": 5},
        }
        data.append(new)
        bad = json.loads(json.dumps(new))
        bad["name"] = "bad_one"
        for key, value in patch.items():
            if key.startswith("schedule."):
                bad["schedule"][key.split(".", 1)[1]] = value
            elif key.startswith("what."):
                bad["what"][key.split(".", 1)[1]] = value
            else:
                bad[key] = value
        data.append(bad)
        return data

    cases: list[tuple[Any, str]] = [
        (variant(**{"schedule.every": 0}), "every"),
        (variant(**{"schedule.kind": "cron", "schedule.cron": "61 * * * *"}), "cron"),
        (variant(**{"what.kind": "action", "what.target": "no.such.action"}), "unknown action"),
        (variant(**{"what.target": "SELECT 1; DROP TABLE jobtui_job"}), "one"),
        (variant(**{"what.target": "SELEKT nonsense"}), "rejected"),
        (variant(**{"schedule.kind": "expr", "schedule.expr": "'not a date'"}), "not a date"),
        (variant(name="x;y"), "invalid job name"),
        (variant(name="fresh"), "appears twice"),
        (variant(max_failures=0), "max-failures"),
        (variant(disabled="yes"), "disabled"),
        (variant(**{"schedule.start": "yesterday"}), "ISO 8601"),
        ({"jobs": "nope"}, "list of jobs"),
        ([42], "mapping"),
    ]
    for data, message in cases:
        with pytest.raises(InvalidInput, match=message):
            cstore.import_jobs(data)
        assert dump_jobs(cstore) == before, message


# ---------------------------------------------------------------------- run log


def test_runs_filtering(cstore: JobStore) -> None:
    a = sql_every(cstore, "a")
    b = sql_every(cstore, "b")
    for i in range(6):
        add_run(cstore, a, T0 + timedelta(minutes=i), "ok" if i % 2 else "failed", error=f"e{i}")
    add_run(cstore, b, T0 + timedelta(minutes=10), "aborted")
    add_run(cstore, b, T0 + timedelta(minutes=11), "running")
    add_run(cstore, a, T0 + timedelta(minutes=20), "ok", owner="alice@%")

    every = cstore.runs()
    assert len(every) == 8
    assert [r.scheduled_for for r in every] == sorted(
        (r.scheduled_for for r in every), reverse=True
    )
    assert every[0].job == "b" and every[0].outcome is Outcome.RUNNING
    assert every[0].finished is not None and every[0].duration == 1.5

    only_a = cstore.runs("a")
    assert {r.job for r in only_a} == {"a"} and len(only_a) == 6
    assert [r.error for r in only_a] == ["e5", "e4", "e3", "e2", "e1", "e0"]
    assert len(cstore.runs("a", limit=2)) == 2
    assert [r.error for r in cstore.runs("a", outcome="failed")] == ["e4", "e2", "e0"]
    assert [r.job for r in cstore.runs(outcome="aborted")] == ["b"]
    assert cstore.runs(job_id=b.id, outcome="ok") == []
    assert len(cstore.runs(all_owners=True)) == 9
    assert [r.owner for r in cstore.runs(owner="alice@%")] == ["alice@%"]

    data = every[1].to_dict()
    documented = "job scheduled_for started finished duration outcome error runner"
    assert set(documented.split()) <= data.keys()
    assert data["scheduled_for"] == "2030-01-07T12:10:00+00:00"
    assert data["runner"] == "runner-1"

    with pytest.raises(InvalidInput, match="invalid outcome 'great'"):
        cstore.runs(outcome="great")
    for bad in (0, -1, 100_001, "10"):
        with pytest.raises(InvalidInput, match="--limit"):
            cstore.runs(limit=bad)  # type: ignore[arg-type]
    with pytest.raises(JobNotFound):
        cstore.runs("ghost")


def test_run_log_refuses_a_second_row_for_one_slot(store: JobStore) -> None:
    job = sql_every(store, "slot")
    add_run(store, job, T0, "ok")
    with pytest.raises(IntegrityError):
        add_run(store, job, T0, "ok", runner="runner-2")
    add_run(store, job, T0 + timedelta(microseconds=1), "ok")  # microsecond precision kept
    assert len(store.runs("slot")) == 2


# ---------------------------------------------------------------------- schema


def test_init_is_idempotent(store: JobStore) -> None:
    sql_every(store, "survives")
    store.init()
    store.init()
    assert [j.name for j in store.list_jobs()] == ["survives"]
    with store.engine.connect() as conn:
        version = conn.execute(
            select(schema.meta.c.value).where(schema.meta.c.key == "schema_version")
        ).scalar_one()
        conn.rollback()
    assert version == str(schema.SCHEMA_VERSION)


def test_tables_columns_and_unique_constraints(store: JobStore) -> None:
    insp = inspect(store.engine)
    assert {"jobtui_job", "jobtui_run", "jobtui_runner", "jobtui_meta"} <= set(
        insp.get_table_names()
    )
    mysql = store.backend.has_accounts
    for table in schema.metadata.sorted_tables:
        # MySQL/MariaDB only: the stored user part of the owner, last (docs/privileges.md)
        extra = [owner_index.OWNER_USER] if mysql and table.name in owner_index.OWNER_INDEX else []
        assert [c["name"] for c in insp.get_columns(table.name)] == [
            c.name for c in table.columns
        ] + extra
    if mysql:
        for table, index in owner_index.OWNER_INDEX.items():
            assert index in {i["name"] for i in insp.get_indexes(table)}
    uniques = {
        u["name"]: u["column_names"]
        for t in ("jobtui_job", "jobtui_run")
        for u in insp.get_unique_constraints(t)
    }
    assert uniques["uq_jobtui_job_owner_name"] == ["owner", "name"]
    assert uniques["uq_jobtui_run_job_slot"] == ["job_id", "scheduled_for"]
    indexes = {i["name"] for i in insp.get_indexes("jobtui_job")}
    assert {"ix_jobtui_job_next_run", "ix_jobtui_job_updated"} <= indexes
    # a name is unique per owner, not globally
    job = sql_every(store, "same")
    insert_foreign_job(store, job, "bob@%", "same")
    with pytest.raises(IntegrityError):
        insert_foreign_job(store, job, "bob@%", "same")


def test_times_keep_microseconds(store: JobStore) -> None:
    start = datetime(2031, 5, 6, 7, 8, 9, 123456, tzinfo=UTC)
    job = store.submit(
        "micro", What("sql", "SELECT 1"), make_schedule("every", every=0.25, start=start)
    )
    assert job.next_run == start
    assert job.schedule.start == start


def _old_table(table: Table, meta: MetaData, keep: set[str]) -> Table:
    """``table`` as an older version might have had it: only the ``keep`` columns."""
    return Table(
        table.name,
        meta,
        *(
            Column(c.name, c.type, primary_key=c.primary_key)
            for c in table.columns
            if c.name in keep
        ),
    )


def test_upgrade_adds_missing_columns(db_url: str) -> None:
    """The baseline migration on tables from an older version adds what they lack; rows survive."""
    old = MetaData()
    runner_cols = {c.name for c in schema.runner.columns} - {"stopping"}
    _old_table(schema.runner, old, runner_cols)
    _old_table(schema.job, old, {"id", "owner", "name", "next_run", "updated"})
    _old_table(schema.run, old, {"id", "job_id", "scheduled_for", "started", "outcome"})
    store = open_store(db_url, init=False)
    try:
        old.create_all(store.engine)
        with store.engine.begin() as conn:
            conn.execute(
                insert(old.tables["jobtui_runner"]).values(
                    id="r-old",
                    name="old",
                    host="h",
                    pid=1,
                    threads=2,
                    started=to_db(T0),
                    heartbeat=to_db(T0),
                )
            )
            conn.execute(
                insert(old.tables["jobtui_job"]).values(owner="o", name="legacy", updated=to_db(T0))
            )
        assert "stopping" not in {
            c["name"] for c in inspect(store.engine).get_columns("jobtui_runner")
        }
        store.init()
        store.init()
        insp = inspect(store.engine)
        for table in schema.metadata.sorted_tables:
            assert {c["name"] for c in insp.get_columns(table.name)} - {owner_index.OWNER_USER} == {
                c.name for c in table.columns
            }, table.name
        runner = store.runners()[0]
        assert (runner.id, runner.stopping, runner.threads) == ("r-old", False, 2)
        with store.engine.connect() as conn:
            legacy = conn.execute(select(schema.job)).one()
            conn.rollback()
        assert (legacy.name, legacy.failures, legacy.max_failures, legacy.what_args) == (
            "legacy",
            0,
            16,
            "[]",
        )
        assert bool(legacy.broken) is False and bool(legacy.running) is False
        assert legacy.total_time == 0
    finally:
        store.close()


def test_sqlite_job_table_from_before_autoincrement_is_rebuilt(sqlite_url: str) -> None:
    """A job table made without AUTOINCREMENT reused the newest removed job's id.

    The baseline migration moves its rows to a rebuilt table: same ids and values, same
    indexes, and new ids above every id the run log has seen.
    """
    old = MetaData()
    legacy = schema.job.to_metadata(old)
    legacy.dialect_options["sqlite"]["autoincrement"] = False
    schema.run.to_metadata(old)
    store = open_store(sqlite_url, init=False)
    try:
        old.create_all(store.engine)
        with store.engine.connect() as conn:
            made = conn.exec_driver_sql("SELECT sql FROM sqlite_master WHERE name = 'jobtui_job'")
            assert "AUTOINCREMENT" not in made.scalar_one().upper()
            conn.rollback()
        store.init()
        for name in ("a", "b", "c"):
            store.submit(name, What("sql", "SELECT 1"), make_schedule("every", every=60))
        store.pause("a")
        # c (id 3) is removed, but its runs stay in the log
        removed = store.get("c").id
        with store.engine.begin() as conn:
            conn.execute(
                insert(schema.run).values(
                    job_id=removed,
                    job_name="c",
                    owner=store.get("c").owner,
                    scheduled_for=to_db(T0),
                    outcome="ok",
                )
            )
        store.remove("c")
        before = {j.name: j for j in store.list_jobs(all_owners=True)}
        with store.engine.connect() as conn:  # the old table would hand out 3 again
            assert conn.exec_driver_sql("SELECT MAX(id) FROM jobtui_job").scalar() == 2
            conn.rollback()

        migrations.upgrade(store.engine)
        migrations.upgrade(store.engine)  # once only

        with store.engine.connect() as conn:
            made = conn.exec_driver_sql("SELECT sql FROM sqlite_master WHERE name = 'jobtui_job'")
            assert "AUTOINCREMENT" in made.scalar_one().upper()
            tables = conn.exec_driver_sql("SELECT name FROM sqlite_master WHERE type = 'table'")
            assert not [n for n in tables.scalars() if n.endswith("__before_autoincrement")]
            conn.rollback()
        insp = inspect(store.engine)
        assert {i["name"] for i in insp.get_indexes("jobtui_job")} >= {
            i.name for i in schema.job.indexes
        }
        after = {j.name: j for j in store.list_jobs(all_owners=True)}
        assert after == before
        assert after["a"].status is Status.PAUSED
        new = store.submit("d", What("sql", "SELECT 1"), make_schedule("once"))
        assert new.id > removed
        with pytest.raises(Exception, match="exists"):
            store.submit("a", What("sql", "SELECT 1"), make_schedule("once"))
    finally:
        store.close()


@pytest.mark.parametrize("made", ["new", "before autoincrement"])
def test_sqlite_several_processes_open_a_new_or_old_file_at_once(
    sqlite_url: str, made: str
) -> None:
    """Four stores (own engines and connections, as four processes) open it together.

    Their schema work used to start as reads and fail with "database is locked"
    when two tried to become writes at once (a new file: CREATE TABLE).
    """
    if made != "new":
        old = MetaData()
        legacy = schema.job.to_metadata(old)
        legacy.dialect_options["sqlite"]["autoincrement"] = False
        first = open_store(sqlite_url, init=False)
        try:
            old.create_all(first.engine)
            with first.engine.begin() as conn:
                for name in ("a", "b"):
                    conn.execute(
                        insert(legacy).values(
                            owner="o",
                            name=name,
                            what_kind="sql",
                            what_target="SELECT 1",
                            schedule_kind="once",
                            schedule_anchor=to_db(T0),
                            status="SCHEDULED",
                            intent="ENABLED",
                            phase="SLEEPING",
                            created=to_db(T0),
                            updated=to_db(T0),
                        )
                    )
        finally:
            first.close()
    errors: list[BaseException] = []
    gate = threading.Barrier(4)

    def open_one() -> None:
        try:
            gate.wait(10)
            open_store(sqlite_url).close()
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=open_one) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == []
    con = sqlite3.connect(sqlite_url.removeprefix("sqlite:///"))
    try:
        sql = con.execute("SELECT sql FROM sqlite_master WHERE name = 'jobtui_job'").fetchone()[0]
        assert "AUTOINCREMENT" in sql.upper()
        rows = con.execute("SELECT id, name FROM jobtui_job ORDER BY id").fetchall()
        assert rows == ([] if made == "new" else [(1, "a"), (2, "b")])
    finally:
        con.close()


# ---------------------------------------------------------------------- reachability, read-only


def test_unreachable_mariadb_is_database_unavailable_without_password() -> None:
    url = "mysql+pymysql://jobuser:Sup3rSecretPw@127.0.0.1:1/jobs"
    with pytest.raises(DatabaseUnavailable) as info:
        open_store(url)
    message = str(info.value)
    assert "Sup3rSecretPw" not in message
    assert "127.0.0.1" in message and "***" in message
    assert info.value.exit_code == 1
    assert "Sup3rSecretPw" not in repr(info.value.__cause__)
    lazy = open_store(url, init=False)
    try:
        with pytest.raises(DatabaseUnavailable) as info2:
            lazy.list_jobs()
        assert "Sup3rSecretPw" not in str(info2.value)
        assert "Sup3rSecretPw" not in lazy.masked_url
    finally:
        lazy.close()


def test_unusable_sqlite_path_is_database_unavailable(tmp_path: Any) -> None:
    blocker = tmp_path / "a_file"
    blocker.write_text("not a directory")
    with pytest.raises(DatabaseUnavailable, match="cannot create the directory"):
        open_store(f"sqlite:///{blocker}/sub/jobtui.db")
    with pytest.raises(DatabaseUnavailable):
        open_store(f"sqlite:///{tmp_path}")  # a directory, not a database file


def test_read_only_store_refuses_writes(db_url: str) -> None:
    writer = open_store(db_url)
    sql_every(writer, "ro")
    ro = open_store(db_url, read_only=True)
    try:
        before = dump_jobs(writer)
        exported = ro.export()
        refused: list[Callable[[], Any]] = [
            ro.init,
            lambda: sql_every(ro, "new"),
            lambda: ro.change("ro", description="x"),
            lambda: ro.remove("ro"),
            lambda: ro.pause("ro"),
            lambda: ro.resume("ro"),
            lambda: ro.enable("ro"),
            lambda: ro.disable("ro"),
            lambda: ro.abort("ro"),
            lambda: ro.run_now("ro"),
            lambda: ro.broken("ro", True),
            lambda: ro.import_jobs(exported),
            lambda: ro.prune_runs(keep=0),
        ]
        for call in refused:
            with pytest.raises(ReadOnlyError, match="read-only"):
                call()
        assert dump_jobs(writer) == before
        assert [j.name for j in ro.list_jobs()] == ["ro"]
        assert ro.get("ro").name == "ro"
        assert ro.preview(ro.get("ro"))
        assert ro.runs() == []
    finally:
        ro.close()
        writer.close()


# ---------------------------------------------------------------------- bad input corpus

NAME_CASES = [
    "",
    "with space",
    "semi;colon",
    "back`tick",
    "nul\x00byte",
    "j\u043eb",  # Cyrillic o: a look-alike
    "\uff4aob",  # fullwidth j
    "x" * 65,
    "-leading-dash",
    "new\nline",
]

IDENTIFIER_CASES = [
    "db.pro`c",
    "db.proc;DROP",
    "d`b.proc",
    "db.pr\x00oc",
    "db.\u0440roc",  # Cyrillic r
    "db.pro c",
    "db." + "p" * 65,
    "d" * 65 + ".proc",
    "noschema",
    "a.b.c",
    "db.",
    ".proc",
]


def bad_input_cases(store: JobStore) -> list[tuple[str, Callable[[], Any], str]]:
    """(id, call, message fragment): each must raise InvalidInput and change nothing."""
    sql = What("sql", "SELECT 1")
    every = make_schedule("every", every=10)
    past_expr = (
        "datetime(NOW(), '-1 day')" if store.backend.name == "sqlite" else "NOW() - INTERVAL 1 DAY"
    )
    cases: list[tuple[str, Callable[[], Any], str]] = []
    for name in NAME_CASES:
        cases.append((f"name {name!r}", lambda n=name: store.submit(n, sql, every), "job name"))
    for target in IDENTIFIER_CASES:
        cases.append(
            (
                f"call {target!r}",
                lambda t=target: store.submit("c", What("call", t), every),
                "invalid (procedure|schema name|procedure name)",
            )
        )
    cases += [
        (
            "unknown action",
            lambda: store.submit("a", What("action", "no.such"), every),
            "unknown action",
        ),
        (
            "action path",
            lambda: store.submit("a", What("action", "os:system"), every),
            "unknown action",
        ),
        (
            "action slash",
            lambda: store.submit("a", What("action", "a/b"), every),
            "invalid action name",
        ),
        (
            "two statements",
            lambda: store.submit("s", What("sql", "SELECT 1; SELECT 2"), every),
            "exactly one",
        ),
        ("sql syntax", lambda: store.submit("s", What("sql", "SELEC 1"), every), "rejected"),
        ("empty sql", lambda: store.submit("s", What("sql", "  "), every), "empty SQL"),
        (
            "sql with args",
            lambda: store.submit("s", What("sql", "SELECT 1", ("x",)), every),
            "--arg",
        ),
        ("bad kind", lambda: store.submit("s", What("shell", "ls"), every), "what kind"),  # type: ignore[arg-type]
        ("cron 3 fields", lambda: make_schedule("cron", cron="* * *"), "5 fields"),
        ("cron minute 61", lambda: make_schedule("cron", cron="61 * * * *"), "cron"),
        ("cron 31 feb", lambda: make_schedule("cron", cron="0 0 31 2 *"), "never fires"),
        ("cron words", lambda: make_schedule("cron", cron="every monday"), "cron"),
        (
            "cron unknown tz",
            lambda: make_schedule("cron", cron="* * * * *", tz="Mars/Olympus"),
            "time zone",
        ),
        (
            "cron tz path",
            lambda: make_schedule("cron", cron="* * * * *", tz="../../etc/passwd"),
            "time zone",
        ),
        ("tz without cron", lambda: make_schedule("every", every=5, tz="UTC"), "--tz"),
        ("every 0", lambda: make_schedule("every", every=0), "--every"),
        ("every negative", lambda: make_schedule("every", every=-5), "--every"),
        ("every too small", lambda: make_schedule("every", every=0.05), "--every"),
        ("every nan", lambda: make_schedule("every", every=math.nan), "--every"),
        ("every inf", lambda: make_schedule("every", every=math.inf), "--every"),
        ("every text", lambda: make_schedule("every", every="often"), "--every"),
        ("every missing", lambda: make_schedule("every"), "--every"),
        (
            "finish before start",
            lambda: make_schedule("every", every=5, start=T0, finish=T0 - timedelta(seconds=1)),
            "not after start",
        ),
        (
            "finish equals start",
            lambda: make_schedule("once", start=T0, finish=T0),
            "not after start",
        ),
        ("kind", lambda: make_schedule("weekly"), "schedule kind"),
        (
            "expr semicolon",
            lambda: make_schedule("expr", expr="NOW(); DROP TABLE jobtui_job"),
            "not allowed",
        ),
        (
            "expr select",
            lambda: make_schedule("expr", expr="(SELECT MAX(next_run) FROM jobtui_job)"),
            "not allowed",
        ),
        ("expr comment", lambda: make_schedule("expr", expr="NOW() -- x"), "not allowed"),
        ("expr sleep", lambda: make_schedule("expr", expr="NOW() + SLEEP(5)"), "not allowed"),
        (
            "expr lock function",
            lambda: make_schedule("expr", expr="NOW() + INTERVAL RELEASE_ALL_LOCKS() DAY"),
            "not allowed",
        ),
        (
            "expr get_lock",
            lambda: make_schedule("expr", expr="NOW() + INTERVAL GET_LOCK('x', 9) DAY"),
            "not allowed",
        ),
        ("expr assignment", lambda: make_schedule("expr", expr="@x := NOW()"), "not allowed"),
        ("expr empty", lambda: make_schedule("expr", expr=" "), "empty --expr"),
        (
            "expr not a date",
            lambda: store.submit("x", sql, make_schedule("expr", expr="'hello'")),
            "not a date",
        ),
        (
            "expr number",
            lambda: store.submit("x", sql, make_schedule("expr", expr="42")),
            "not a date",
        ),
        (
            "expr past",
            lambda: store.submit("x", sql, make_schedule("expr", expr=past_expr)),
            "not after NOW",
        ),
        (
            "expr syntax",
            lambda: store.submit("x", sql, make_schedule("expr", expr="NOW( +")),
            "rejected",
        ),
        (
            "expr unknown column",
            lambda: store.submit("x", sql, make_schedule("expr", expr="no_such_col")),
            "rejected",
        ),
        (
            "description long",
            lambda: store.submit("d", sql, every, description="x" * 2001),
            "too long",
        ),
        ("description nul", lambda: store.submit("d", sql, every, description="a\x00b"), "NUL"),
        ("max_failures 0", lambda: store.submit("m", sql, every, max_failures=0), "--max-failures"),
        (
            "max_failures negative",
            lambda: store.submit("m", sql, every, max_failures=-3),
            "--max-failures",
        ),
        (
            "max_failures fraction",
            lambda: store.submit("m", sql, every, max_failures=2.5),
            "--max-failures",
        ),  # type: ignore[arg-type]
        (
            "max_failures text",
            lambda: store.submit("m", sql, every, max_failures="many"),
            "--max-failures",
        ),  # type: ignore[arg-type]
        (
            "max_failures huge",
            lambda: store.submit("m", sql, every, max_failures=10**7),
            "--max-failures",
        ),
        # change: the same checks, and the existing job stays as it was
        ("change every 0", lambda: store.change("base", every=0), "--every"),
        ("change cron", lambda: store.change("base", cron="* *"), "cron"),
        (
            "change two kinds",
            lambda: store.change("base", every=5, cron="* * * * *"),
            "one schedule",
        ),
        ("change tz on every", lambda: store.change("base", tz="UTC"), "--tz"),
        ("change expr select", lambda: store.change("base", expr="SELECT NOW()"), "not allowed"),
        ("change expr past", lambda: store.change("base", expr=past_expr), "not after NOW"),
        (
            "change finish before start",
            lambda: store.change("base", start=T0, finish=T0 - timedelta(days=1)),
            "not after start",
        ),
        ("change description", lambda: store.change("base", description="y" * 2001), "too long"),
        ("change max_failures", lambda: store.change("base", max_failures=0), "--max-failures"),
        (
            "change action",
            lambda: store.change("base", what=What("action", "nope")),
            "unknown action",
        ),
        ("change sql", lambda: store.change("base", what=What("sql", "DELETE FROM; x")), "one"),
        ("broken next with on", lambda: store.broken("base", True, next_run=T0), "--next"),
    ]
    return cases


def test_bad_input_corpus_changes_nothing(cstore: JobStore) -> None:
    sql_every(cstore, "base", description="the one that exists")
    before = dump_jobs(cstore)
    failures = []
    for case_id, call, message in bad_input_cases(cstore):
        try:
            call()
        except InvalidInput as exc:
            text_ = str(exc)
            import re

            if not re.search(message, text_):
                failures.append(f"{case_id}: message {text_!r} lacks {message!r}")
            if "\n" in text_.strip():
                failures.append(f"{case_id}: message is not one line: {text_!r}")
        except Exception as exc:  # anything else is a bug: it would be a traceback
            failures.append(f"{case_id}: {type(exc).__name__}: {exc}")
        else:
            failures.append(f"{case_id}: accepted")
        if dump_jobs(cstore) != before:
            failures.append(f"{case_id}: the job table changed")
            before = dump_jobs(cstore)
    assert failures == []


@pytest.mark.mariadb
def test_identifier_limits_are_inclusive(mariadb_url: str) -> None:
    """64 characters is the longest identifier MySQL allows, and jobtui accepts it."""
    long_name = "p" * 64
    database = mariadb_url.rsplit("/", 1)[1]
    conn = admin_connection(database)
    with conn.cursor() as cur:
        cur.execute(f"CREATE PROCEDURE `{long_name}`() BEGIN END")
    conn.close()
    s = open_store(mariadb_url)
    try:
        job = s.submit("j" * 64, What("call", f"{database}.{long_name}"), make_schedule("once"))
        assert job.name == "j" * 64
    finally:
        s.close()


# ---------------------------------------------------------------------- housekeeping, refresh


def test_prune_runs_keeps_the_newest_and_the_running(cstore: JobStore) -> None:
    a = sql_every(cstore, "a")
    b = sql_every(cstore, "b")
    for i in range(5):
        add_run(cstore, a, T0 + timedelta(minutes=i), "ok", error=f"a{i}")
    add_run(cstore, a, T0 - timedelta(days=1), "running", error="old but in flight")
    for i in range(2):
        add_run(cstore, b, T0 + timedelta(minutes=i), "failed", error=f"b{i}")
    assert cstore.prune_runs(keep=2) == 3
    assert [r.error for r in cstore.runs("a")] == ["a4", "a3", "old but in flight"]
    assert [r.error for r in cstore.runs("b")] == ["b1", "b0"]
    assert cstore.prune_runs(keep=0, job_id=b.id) == 2
    assert cstore.runs("b") == []
    assert len(cstore.runs("a")) == 3
    for bad in (-1, "3", 1.5, True):
        with pytest.raises(InvalidInput, match="keep"):
            cstore.prune_runs(keep=bad)  # type: ignore[arg-type]


def test_jobs_changed_since(cstore: JobStore, clock: FakeClock) -> None:
    sql_every(cstore, "old")
    mark = clock.now
    clock.advance(1)
    sql_every(cstore, "new")
    clock.advance(1)
    cstore.pause("old")
    assert {j.name for j in cstore.jobs_changed_since(None)} == {"old", "new"}
    assert {j.name for j in cstore.jobs_changed_since(mark)} == {"old", "new"}
    assert {j.name for j in cstore.jobs_changed_since(mark + timedelta(seconds=1))} == {"old"}
    assert cstore.jobs_changed_since(clock.now) == []
    assert len(cstore.job_ids()) == 2


def test_runners_listing(cstore: JobStore) -> None:
    with cstore.engine.begin() as conn:
        conn.execute(
            insert(schema.runner).values(
                id="host-a:1:abc",
                name="w1",
                host="host-a",
                pid=1,
                threads=4,
                connection_id=None,
                started=to_db(T0),
                heartbeat=to_db(T0 + timedelta(seconds=30)),
                stopping=False,
            )
        )
    (info,) = cstore.runners()
    assert (info.id, info.name, info.threads, info.stopping) == ("host-a:1:abc", "w1", 4, False)
    assert info.heartbeat == T0 + timedelta(seconds=30)
    assert info.alive(T0 + timedelta(seconds=40), timeout=15)
    assert not info.alive(T0 + timedelta(seconds=46), timeout=15)


def test_remove_of_a_running_job_asks_for_abort_first(cstore: JobStore) -> None:
    job = sql_every(cstore, "busy")
    set_columns(cstore, job.id, running=True, runner_id="gone-runner")
    pending = cstore.remove("busy", wait=0.3)  # nobody finishes it: the row is kept
    assert pending.id == job.id and pending.remove_requested
    kept = cstore.get("busy")
    assert kept.running and kept.abort_requested and kept.remove_requested
    set_columns(cstore, job.id, running=False)  # the run ended (a reaper released it)
    removed = cstore.remove("busy", wait=0.3)
    assert removed.id == job.id and not removed.remove_requested
    with pytest.raises(JobNotFound):
        cstore.get("busy")


def test_names_are_case_sensitive_and_text_is_full_utf8(store: JobStore) -> None:
    """The same on both backends: MySQL's default collations would fold case."""
    sql_every(store, "Nightly", description="emoji \U0001f680 and ünïcödé")
    sql_every(store, "nightly")
    assert [j.name for j in store.list_jobs()] == ["Nightly", "nightly"]
    assert store.get("Nightly").description == "emoji \U0001f680 and ünïcödé"
    with pytest.raises(JobNotFound):
        store.get("NIGHTLY")
    store.pause("nightly")
    assert store.get("Nightly").status is Status.ENABLED


@pytest.mark.mariadb
def test_tables_are_utf8mb4_on_a_latin1_database(clock: FakeClock) -> None:
    from support.mariadb import MYSQL_SERVER, require_mysql

    require_mysql()
    name = f"jobtui_t_latin1_{secrets.token_hex(4)}"
    conn = admin_connection()
    with conn.cursor() as cur:
        cur.execute(f"CREATE DATABASE `{name}` CHARACTER SET latin1")
    conn.close()
    s = open_store(f"{MYSQL_SERVER}/{name}", clock=clock)
    try:
        job = sql_every(s, "rocket", description="\U0001f680")
        assert s.get("rocket").description == "\U0001f680" == job.description
        with s.engine.connect() as conn:
            tables = conn.execute(
                text(
                    "SELECT TABLE_NAME, ENGINE, TABLE_COLLATION FROM information_schema.TABLES "
                    "WHERE TABLE_SCHEMA = DATABASE() AND TABLE_TYPE = 'BASE TABLE'"
                )
            ).all()
            conn.rollback()
        assert sorted(t[0] for t in tables) == sorted(
            [*schema.metadata.tables, *schema.history_metadata.tables]
        )
        assert {(t[1], t[2]) for t in tables} == {("InnoDB", "utf8mb4_bin")}
    finally:
        s.close()
        conn = admin_connection()
        with conn.cursor() as cur:
            cur.execute(f"DROP DATABASE IF EXISTS `{name}`")
        conn.close()


# ---------------------------------------------------------------------- concurrency


def test_concurrent_submits_of_one_name_create_one_job(db_url: str) -> None:
    stores = [open_store(db_url) for _ in range(4)]
    barrier = threading.Barrier(len(stores))
    outcomes: list[str] = []

    def submit(s: JobStore) -> None:
        barrier.wait()
        try:
            sql_every(s, "racer")
            outcomes.append("created")
        except InvalidInput as exc:
            outcomes.append("exists" if "already exists" in str(exc) else str(exc))
        except Exception as exc:  # a traceback-worthy error is what this test hunts
            outcomes.append(f"{type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=submit, args=(s,)) for s in stores]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert sorted(outcomes) == ["created", "exists", "exists", "exists"]
        assert len(stores[0].list_jobs()) == 1
    finally:
        for s in stores:
            s.close()


def test_concurrent_steering_keeps_status_derived(db_url: str) -> None:
    stores = [open_store(db_url) for _ in range(3)]
    sql_every(stores[0], "steered")
    errors: list[str] = []
    plans = [
        ["pause", "resume"] * 6,
        ["broken_on", "broken_off"] * 6,
        ["disable", "enable", "abort", "resume"] * 3,
    ]

    def steer(s: JobStore, plan: list[str]) -> None:
        for op in plan:
            try:
                step(s, "steered", op)
            except InvalidInput:
                pass  # e.g. pause while another thread disabled it: refused, fine
            except Exception as exc:
                errors.append(f"{op}: {type(exc).__name__}: {exc}")

    threads = [
        threading.Thread(target=steer, args=(s, p)) for s, p in zip(stores, plans, strict=True)
    ]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert errors == []
        job = stores[0].get("steered")
        assert_status_derived(stores[0], job)
        assert job.status in (Status.ENABLED, Status.RESUMED, Status.ABORTED, Status.PAUSED)
        assert job.broken is False
    finally:
        for s in stores:
            s.close()


def test_sqlite_file_uses_wal_and_a_busy_timeout(sqlite_url: str) -> None:
    s = open_store(sqlite_url)
    try:
        with s.engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
            assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() >= 5000
            conn.rollback()
        # writes take the write lock up front (BEGIN IMMEDIATE): a second writer waits
        with s.write() as conn:
            assert conn.exec_driver_sql("PRAGMA main.journal_mode").scalar() == "wal"
            other = sqlite3.connect(sqlite_url.removeprefix("sqlite:///"), timeout=0.1)
            try:
                with pytest.raises(sqlite3.OperationalError, match="locked"):
                    other.execute("BEGIN IMMEDIATE")
            finally:
                other.close()
    finally:
        s.close()


def test_preview_count_is_bounded(cstore: JobStore) -> None:
    job = sql_every(cstore, "p", every=1)
    assert cstore.preview(job, 0) == []
    assert len(cstore.preview(job, 1000)) == 1000
    for bad in (-1, 1001, 2.0, "5", True):
        with pytest.raises(InvalidInput, match="count"):
            cstore.preview(job, bad)  # type: ignore[arg-type]


# DBMS_JOB's favourite INTERVALs, in each backend's SQL, evaluated at T0 (Monday 2030-01-07 12:00)
INTERVALS = {
    "sqlite": [
        ("datetime(NOW(), '+1 hour')", datetime(2030, 1, 7, 13, 0, tzinfo=UTC)),
        ("strftime('%Y-%m-01', NOW(), '+1 month')", datetime(2030, 2, 1, tzinfo=UTC)),
        (
            "datetime(NOW(), 'start of day', '+1 day', '+3 hours')",
            datetime(2030, 1, 8, 3, tzinfo=UTC),
        ),
        ("date(NOW(), 'weekday 5')", datetime(2030, 1, 11, tzinfo=UTC)),
    ],
    "mysql": [
        ("NOW() + INTERVAL 1 HOUR", datetime(2030, 1, 7, 13, 0, tzinfo=UTC)),
        ("LAST_DAY(NOW()) + INTERVAL 1 DAY", datetime(2030, 2, 1, tzinfo=UTC)),
        (
            "STR_TO_DATE(DATE_FORMAT(NOW() + INTERVAL 1 MONTH, '%Y-%m-01'), '%Y-%m-%d')",
            datetime(2030, 2, 1, tzinfo=UTC),
        ),
        ("TIMESTAMP(CURDATE() + INTERVAL 1 DAY, '03:00:00')", datetime(2030, 1, 8, 3, tzinfo=UTC)),
        ("NOW() + INTERVAL 90 MINUTE", datetime(2030, 1, 7, 13, 30, tzinfo=UTC)),
    ],
}


def test_interval_expressions(cstore: JobStore) -> None:
    for i, (expr, expected) in enumerate(INTERVALS[cstore.backend.name]):
        assert cstore.evaluate_expr(expr, T0) == expected, expr
        job = cstore.submit(
            f"interval{i}", What("sql", "SELECT 1"), make_schedule("expr", expr=expr)
        )
        assert cstore.preview(job, 2) == [T0, expected], expr


@pytest.mark.mariadb
@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("mysql+pymysql://jobtui_nobody:Pw-Secret-42@{host}/test", "Access denied"),
        ("mysql+pymysql://root:Pw-Secret-42@{host}/test", "Access denied"),
        (
            "mysql+pymysql://root@{host}/jobtui_no_such_database",
            "database 'jobtui_no_such_database' does not exist on this server: create it first",
        ),
    ],
)
def test_refused_mariadb_logins_are_unavailable_without_password(url: str, message: str) -> None:
    from support.mariadb import MYSQL_SERVER, require_mysql

    require_mysql()
    host = MYSQL_SERVER.split("@", 1)[1]
    with pytest.raises(DatabaseUnavailable) as info:
        open_store(url.format(host=host))
    text_ = str(info.value)
    assert "Pw-Secret-42" not in text_
    assert info.value.exit_code == 1
    assert message in text_


def test_read_only_on_an_empty_database_says_to_init(db_url: str) -> None:
    ro = open_store(db_url, read_only=True)
    try:
        with pytest.raises(JobtuiError, match="jobtui init") as info:
            ro.list_jobs()
        assert info.value.exit_code == 1
    finally:
        ro.close()


@pytest.mark.parametrize("kind", ["once", "expr", "every"])
def test_resume_after_the_window_closed_finishes(
    cstore: JobStore, clock: FakeClock, kind: str
) -> None:
    start, finish = T0 + timedelta(hours=1), T0 + timedelta(hours=2)
    schedule = make_schedule(
        kind,
        every=60 if kind == "every" else None,
        expr=next_day_expr(cstore) if kind == "expr" else None,
        start=start,
        finish=finish,
    )
    cstore.submit("windowed", What("sql", "SELECT 1"), schedule)
    cstore.pause("windowed")
    clock.advance(3 * 3600)  # paused until after the window
    job = cstore.resume("windowed")
    assert (job.status, job.next_run) == (Status.FINISHED, None)
    assert cstore.preview(job) == []


# ---------------------------------------------------------------------- the console's reads


def test_a_batch_read_equals_one_row_reads_and_shares_alike_schedules(cstore: JobStore) -> None:
    """jobs_changed_since reads many rows at once (shared What/Schedule objects); each Job
    equals the one read on its own, and sharing never leaks one job's schedule to another."""
    make_demo(cstore)  # the demo.* actions: a demo database
    sql_every(cstore, "a", every=60)
    sql_every(cstore, "b", every=60)
    sql_every(cstore, "c", every=90)
    cstore.submit(
        "d", What("action", "demo.sleep", ("0.5",)), make_schedule("cron", cron="*/5 * * * *")
    )
    cstore.pause("b")
    batch = {j.name: j for j in cstore.jobs_changed_since(None)}
    assert batch == {name: cstore.get(name) for name in "abcd"}
    assert batch["a"].schedule is batch["b"].schedule  # alike: made once
    assert batch["c"].schedule.every == 90 and batch["d"].what.args == ("0.5",)
    assert all(
        j.created.tzinfo is UTC and j.updated and j.updated.tzinfo is UTC for j in batch.values()
    )


def test_poll_sees_changes_made_by_another_connection(db_url: str) -> None:
    """The console's reader (autocommit on MariaDB) is never held on an old snapshot."""
    reader, writer = open_store(db_url), open_store(db_url)
    try:
        assert reader.jobs_changed_since(None) == []
        sql_every(writer, "later")
        assert [j.name for j in reader.jobs_changed_since(None)] == ["later"]
        assert reader.job_ids() == {writer.get("later").id}
        writer.pause("later")
        assert reader.jobs_changed_since(None)[0].status is Status.PAUSED
    finally:
        reader.close()
        writer.close()


def test_poll_reconnects_when_the_server_drops_its_connection(mariadb_url: str) -> None:
    """A kept reader connection killed on the server is replaced on the spot, once."""
    store = open_store(mariadb_url)
    try:
        sql_every(store, "j")

        def connection_id() -> int:
            return int(store.poll(lambda c: c.execute(text("SELECT CONNECTION_ID()")).scalar_one()))

        first = connection_id()
        assert connection_id() == first  # kept between calls
        admin = admin_connection()
        try:
            with admin.cursor() as cur:
                cur.execute("KILL %s", (first,))
        finally:
            admin.close()
        assert [j.name for j in store.jobs_changed_since(None)] == ["j"]
        assert connection_id() != first
    finally:
        store.close()
