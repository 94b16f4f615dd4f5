"""Claiming and recording jobs in batches: only eligible, unlocked rows are claimed, and
run rows and job rows stay consistent. On MariaDB this is the raw five-statement path
(jobtui/core/batchsql.py); on SQLite the lease path. The pool's threads are not started:
the test drives one worker's claim, execution and recording itself."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from conftest import admin_connection
from demo_db import make_demo
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy import select, text, update
from sqlalchemy.engine import make_url

from jobtui.core import claims, schema
from jobtui.core.batchsql import jobs, row_type, update_jobs
from jobtui.core.db import make_engine
from jobtui.core.model import Outcome, What
from jobtui.core.runner import RunnerPool, _Session
from jobtui.core.schedules import make_schedule
from jobtui.core.store import JobStore
from jobtui.core.timeutil import to_db, utcnow


def make_jobs(store: JobStore, n: int, *, due_ago: float = 0.5) -> list[int]:
    """n jobs doing an INSERT into ledger, every 60 s, their next slot ``due_ago`` seconds ago."""
    with store.write() as conn:
        conn.execute(text("CREATE TABLE ledger (job VARCHAR(64))"))
    ids = []
    for i in range(n):
        job = store.submit(
            f"b{i}",
            What("sql", f"INSERT INTO ledger (job) VALUES ('b{i}')"),
            make_schedule("every", every=60),
        )
        ids.append(job.id)
    j = schema.job
    slot = to_db(utcnow() - timedelta(seconds=due_ago))
    with store.write() as conn:  # the slot on the job's grid: no missed slots before it
        conn.execute(update(j).where(j.c.id.in_(ids)).values(next_run=slot, schedule_anchor=slot))
    return ids


def job_rows(store: JobStore) -> dict[str, dict]:  # type: ignore[type-arg]
    j = schema.job
    with store.read() as conn:
        return {r.name: dict(r._mapping) for r in conn.execute(select(j))}


def run_rows(store: JobStore) -> list[dict]:  # type: ignore[type-arg]
    r = schema.run
    with store.read() as conn:
        return [dict(x._mapping) for x in conn.execute(select(r).order_by(r.c.id))]


def test_batch_claims_only_rows_still_eligible_and_records_them(
    store: JobStore, pool: RunnerPool
) -> None:
    ids = make_jobs(store, 5)
    store.pause("b1")  # became ineligible between the scheduler's read and the claim
    held = None
    if pool.mysql:
        # b3's named lock is held by another connection (another runner executing it)
        held = admin_connection(make_url(store.url).database)
        with held.cursor() as cur:
            cur.execute("SELECT GET_LOCK(%s, 0)", (pool._lock_name(ids[3]),))
            assert cur.fetchone()[0] == 1
    else:
        store.pause("b3")
    session = _Session(pool.engine, pool.mysql)
    try:
        runs = pool._claim(session, ids)
        assert sorted(r.job.name for r in runs) == ["b0", "b2", "b4"]
        rows = job_rows(store)
        for name in ("b0", "b2", "b4"):
            assert rows[name]["running"]
            assert rows[name]["runner_id"] == pool.runner_id
            assert rows[name]["status"] == "RUNNING"
        for name in ("b1", "b3"):
            assert not rows[name]["running"]
            assert rows[name]["runner_id"] is None
        logged = run_rows(store)
        assert sorted(r["job_name"] for r in logged) == ["b0", "b2", "b4"]
        assert all(r["outcome"] == Outcome.RUNNING.value for r in logged)
        if pool.mysql:
            assert held is not None
            with held.cursor() as cur:
                for jid, mine in zip(ids, (True, False, True, False, True), strict=True):
                    cur.execute("SELECT IS_USED_LOCK(%s)", (pool._lock_name(jid),))
                    holder = cur.fetchone()[0]
                    if mine:
                        assert holder == session.cid  # held by the executing connection
                    elif jid == ids[1]:
                        assert holder is None  # taken, found ineligible, released
                    else:
                        assert holder == held.thread_id()

        done = []
        pool._verify(runs)  # as _run_batch does: the batch's routines, in one query
        for run in runs:
            outcome, error = pool._execute(run)
            assert (outcome, error) == (Outcome.OK, None)
            done.append((run, outcome, error, pool.now()))
        pool._finish(done)
    finally:
        session.discard()
        if held is not None:
            held.close()

    rows = job_rows(store)
    for name in ("b0", "b2", "b4"):
        assert not rows[name]["running"]
        assert rows[name]["cycles"] == 1
        assert rows[name]["last_outcome"] == Outcome.OK.value
        assert rows[name]["phase"] == "SLEEPING"
        assert rows[name]["next_run"] > to_db(utcnow())
    for name in ("b1", "b3"):
        assert rows[name]["cycles"] == 0
    logged = run_rows(store)
    assert sorted((r["job_name"], r["outcome"]) for r in logged) == [
        ("b0", "ok"),
        ("b2", "ok"),
        ("b4", "ok"),
    ]
    assert all(r["finished"] >= r["started"] for r in logged)
    with store.read() as conn:
        ledger = sorted(x[0] for x in conn.execute(text("SELECT job FROM ledger")))
    assert ledger == ["b0", "b2", "b4"]
    if pool.mysql:
        with store.read() as conn:
            for jid in ids:
                assert claims.lock_holder(conn, pool._lock_name(jid)) is None


def test_batch_with_a_slot_already_in_the_run_log_claims_the_others(
    store: JobStore, pool: RunnerPool
) -> None:
    ids = make_jobs(store, 4)
    j, r = schema.job, schema.run
    with store.write() as conn:
        slot = conn.execute(select(j.c.next_run).where(j.c.id == ids[2])).scalar_one()
        conn.execute(
            r.insert().values(
                job_id=ids[2],
                job_name="b2",
                owner="someone",
                scheduled_for=slot,
                outcome=Outcome.OK.value,
                skipped=0,
                manual=False,
            )
        )
    session = _Session(pool.engine, pool.mysql)
    try:
        runs = pool._claim(session, ids)
    finally:
        session.discard()
    assert sorted(run.job.name for run in runs) == ["b0", "b1", "b3"]
    rows = job_rows(store)
    assert not rows["b2"]["running"]
    assert rows["b2"]["next_run"] > slot  # moved past the taken slot, not run twice
    logged = run_rows(store)
    assert [x["job_name"] for x in logged].count("b2") == 1  # only the one already there
    if pool.mysql:
        with store.read() as conn:
            assert claims.lock_holder(conn, pool._lock_name(ids[2])) is None


def test_a_run_claimed_ahead_starts_at_its_slot(store: JobStore) -> None:
    ids = make_jobs(store, 3, due_ago=-0.3)  # due 0.3 s from now
    pool = RunnerPool(store, threads=2, poll=0.2, name="ahead", lead=0.5)
    pool.start()
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if sum(x["outcome"] == Outcome.OK.value for x in run_rows(store)) == 3:
                break
            time.sleep(0.05)
    finally:
        pool.stop(grace=5)
    logged = {x["job_id"]: x for x in run_rows(store)}
    assert sorted(logged) == sorted(ids)
    for row in logged.values():
        assert row["outcome"] == Outcome.OK.value
        assert row["started"] >= row["scheduled_for"]  # never before its slot


def test_a_job_paused_between_its_claim_ahead_and_its_slot_does_not_run(
    store: JobStore, pool: RunnerPool
) -> None:
    ids = make_jobs(store, 3, due_ago=-0.4)  # due 0.4 s from now
    pool._lead = timedelta(seconds=1.0)
    session = _Session(pool.engine, pool.mysql)
    try:
        runs = pool._claim(session, ids)
        assert sorted(r.job.name for r in runs) == ["b0", "b1", "b2"]
        assert all(r.ahead for r in runs)
        store.pause("b1")  # returns before the slot
        pool._run_batch(runs)
    finally:
        session.discard()
    logged = {x["job_name"]: x for x in run_rows(store)}
    assert logged["b0"]["outcome"] == logged["b2"]["outcome"] == Outcome.OK.value
    for x in (logged["b0"], logged["b2"]):
        assert x["started"] >= x["scheduled_for"]
    assert logged["b1"]["outcome"] == Outcome.ABORTED.value
    assert logged["b1"]["started"] is None  # never executed
    assert "not started" in logged["b1"]["error"]
    rows = job_rows(store)
    assert not rows["b1"]["running"]
    assert rows["b1"]["intent"] == "PAUSED"
    assert rows["b1"]["phase"] != "ABORTED"  # resume carries on with the schedule
    assert rows["b1"]["cycles"] == 0
    with store.read() as conn:
        ledger = sorted(x[0] for x in conn.execute(text("SELECT job FROM ledger")))
    assert ledger == ["b0", "b2"]


def test_a_slow_run_in_a_burst_does_not_hold_back_the_others_recording(
    store: JobStore, pool: RunnerPool
) -> None:
    """Batches claimed ahead of one slot record after the slot's other batches have
    executed, but wait BURST_WAIT at most: a long run does not keep a short one "running"."""
    make_demo(store)  # the demo.* actions: a demo database
    import threading

    from jobtui.core.runner import BURST_WAIT

    ids = make_jobs(store, 4, due_ago=-0.3)  # due 0.3 s from now
    slow = 3 * BURST_WAIT + 1.0
    store.change("b1", what=What("action", "demo.sleep", (str(slow),)))
    pool._lead = timedelta(seconds=1.0)
    sessions = [_Session(pool.engine, pool.mysql) for _ in range(2)]
    try:
        # two batches of the same slot: b0 and b2 quick; b1 slow, then b3
        batches = [
            pool._claim(sessions[0], [ids[0], ids[2]]),
            pool._claim(sessions[1], [ids[1], ids[3]]),
        ]
        assert all(len(b) == 2 and all(r.ahead for r in b) for b in batches)
        threads = [threading.Thread(target=pool._run_batch, args=(b,)) for b in batches]
        for t in threads:
            t.start()
        recorded_at = None
        deadline = time.monotonic() + slow + 10
        while time.monotonic() < deadline:
            if not job_rows(store)["b0"]["running"]:
                recorded_at = time.monotonic()
                break
            time.sleep(0.02)
        slow_running = job_rows(store)["b1"]["running"]
        for t in threads:
            t.join(timeout=slow + 10)
    finally:
        for session in sessions:
            session.discard()
    assert recorded_at is not None
    assert slow_running  # b0 was recorded while b1 still ran
    logged = {x["job_name"]: x for x in run_rows(store)}
    assert {logged[n]["outcome"] for n in ("b0", "b1", "b2", "b3")} == {Outcome.OK.value}
    assert logged["b1"]["duration"] >= slow - 0.05


def test_partial_row_reads_absent_columns_as_empty() -> None:
    row = row_type(("id", "name"))(7, "x")
    assert (row.id, row.name, row.last_error, row.description) == (7, "x", None, "")
    with pytest.raises(AttributeError):
        _ = row.not_a_column


def test_jobs_from_partial_rows_share_definitions_and_keep_state() -> None:
    cols = ("id", "status", "intent", "phase", "cycles", "schedule_kind", "schedule_interval")
    rows = [
        row_type(cols)(i, "SLEEPING", "ENABLED", "SLEEPING", i * 10, "every", 5.0) for i in (1, 2)
    ]
    a, b = jobs(cols, rows)
    assert (a.id, a.cycles, b.id, b.cycles) == (1, 10, 2, 20)
    assert a.schedule is b.schedule and a.schedule.every == 5.0
    assert (a.description, a.name, a.last_error, a.running) == ("", None, None, False)
    # a changed definition is a different schedule, not the cached one
    (c,) = jobs(cols, [row_type(cols)(3, "SLEEPING", "ENABLED", "SLEEPING", 0, "every", 6.0)])
    assert c.schedule.every == 6.0


def test_update_jobs_refuses_a_name_that_is_not_a_column() -> None:
    with pytest.raises(ValueError, match="not a job column"):
        update_jobs(None, {1: {"cycles; DROP TABLE x": 1}})


@pytest.mark.parametrize(
    "text",
    [
        "2007-02-25 23:06:20",
        "2007-02-25 23:06:20.123456",
        "2007-02-25 23:06:20.12",
        "2007-02-25T23:06:20",
        "9999-12-31 23:59:59.999999",
        "2007-02-31 23:06:20",
        "0000-00-00 00:00:00",
        "2007-W08-7 23:06:20",
        "2007-02-25 23:06:20,123456",
        "2007-02-25 23:06:20.123+05",
        b"2007-02-25 23:06:20",
    ],
)
def test_datetime_decoder_reads_what_pymysql_reads(text: str | bytes) -> None:
    from pymysql.converters import convert_datetime

    from jobtui.core.db import _read_datetime

    ours, theirs = _read_datetime(text), convert_datetime(text)
    assert (type(ours), ours) == (type(theirs), theirs)


@given(
    st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31, 23, 59, 59)),
    st.sampled_from([None, UTC, timezone(timedelta(hours=5, minutes=30))]),
)
def test_datetime_encoder_writes_what_pymysql_writes(value: datetime, tz: Any) -> None:
    from pymysql.converters import escape_datetime

    from jobtui.core.db import write_datetime

    value = value.replace(tzinfo=tz)
    assert write_datetime(value) == escape_datetime(value)


@pytest.mark.mariadb
def test_datetime_encoder_round_trips_through_mariadb(mariadb_url: str) -> None:
    """What the runner binds is what the server stores: with and without microseconds."""
    engine = make_engine(mariadb_url)
    values = [datetime(2026, 12, 2, 16, 0, 0), datetime(2026, 12, 2, 16, 0, 0, 1)]
    try:
        with engine.connect() as conn:
            cur = conn.connection.dbapi_connection.cursor()
            for value in values:
                cur.execute("SELECT CAST(%s AS DATETIME(6))", (value,))
                assert cur.fetchone()[0] == value
    finally:
        engine.dispose()


@given(
    st.lists(
        st.one_of(
            st.none(),
            st.booleans(),
            st.integers(min_value=-(2**63), max_value=2**64),
            st.floats(allow_nan=False, allow_infinity=False),
            st.text(),
            st.datetimes(),
            st.datetimes(timezones=st.just(UTC)),
        ),
        max_size=20,
    ),
    st.booleans(),
)
def test_batch_literals_are_what_pymysql_writes(params: list[Any], no_backslash: bool) -> None:
    """The batch statements' values are escaped exactly as PyMySQL's mogrify does,
    in both of the server's quoting modes."""
    import pymysql
    from pymysql.constants import SERVER_STATUS

    from jobtui.core.batchsql import literals
    from jobtui.core.db import _mysql_conversions

    conn = pymysql.connections.Connection(defer_connect=True, conv=_mysql_conversions())
    conn.server_status = SERVER_STATUS.SERVER_STATUS_NO_BACKSLASH_ESCAPES if no_backslash else 0
    cur = conn.cursor()
    sql = ", ".join(["%s"] * len(params))
    assert sql % literals(conn, params) == cur.mogrify(sql, params)


@pytest.mark.mariadb
def test_a_pooled_connection_lost_on_its_return_is_one_warning_not_a_traceback(
    mariadb_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The server ends a connection (a restart, KILL) while it sits checked out; the pool's
    rollback on its return fails: a worker's log gets one line, not an ERROR traceback."""
    import logging

    claims.quiet_lost_resets()
    engine = make_engine(mariadb_url)
    try:
        conn = engine.connect()
        cid = claims.connection_id(conn)
        conn.commit()  # idle, as a runner's connections are between statements
        admin = admin_connection()
        with admin.cursor() as cur:
            cur.execute("KILL CONNECTION %s", (cid,))
        admin.close()
        with caplog.at_level(logging.WARNING, logger=claims.POOL_LOGGER):
            conn.close()  # back to the pool: the reset finds the connection gone
    finally:
        engine.dispose()
    records = [r for r in caplog.records if r.name == claims.POOL_LOGGER]
    assert [(r.levelname, r.exc_info) for r in records] == [("WARNING", None)]
    assert "lost while it was returned" in records[0].getMessage()
