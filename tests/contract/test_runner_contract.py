"""The runners' contract, one suite run over each backend (the ``db_url`` fixture, through
``store`` and ``pool``): claiming and recording jobs in batches. Only eligible, unlocked
rows are claimed, and run rows and job rows stay consistent. On MariaDB this is the raw
five-statement path (jobtui/core/backends/mysql/batch.py, named locks); on SQLite the
lease path. The pool's threads are not started: the test drives one worker's claim,
execution and recording itself."""

from __future__ import annotations

import time
from datetime import timedelta

from sqlalchemy import select, text, update
from sqlalchemy.engine import make_url
from support.demo_db import make_demo
from support.mariadb import admin_connection

from jobtui.core import schema
from jobtui.core.model import Outcome, What
from jobtui.core.runner.pool import RunnerPool
from jobtui.core.runner.session import Session
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
    if pool.backend.named_locks:
        # b3's named lock is held by another connection (another runner executing it)
        held = admin_connection(make_url(store.url).database)
        with held.cursor() as cur:
            cur.execute("SELECT GET_LOCK(%s, 0)", (pool._lock_name(ids[3]),))
            assert cur.fetchone()[0] == 1
    else:
        store.pause("b3")
    session = Session(pool.engine, pool.backend)
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
        if pool.backend.named_locks:
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
    if pool.backend.named_locks:
        with store.read() as conn:
            for jid in ids:
                assert store.backend.lock_holder(conn, pool._lock_name(jid)) is None


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
    session = Session(pool.engine, pool.backend)
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
    if pool.backend.named_locks:
        with store.read() as conn:
            assert store.backend.lock_holder(conn, pool._lock_name(ids[2])) is None


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
    session = Session(pool.engine, pool.backend)
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

    from jobtui.core.runner.config import BURST_WAIT

    ids = make_jobs(store, 4, due_ago=-0.3)  # due 0.3 s from now
    slow = 3 * BURST_WAIT + 1.0
    store.change("b1", what=What("action", "demo.sleep", (str(slow),)))
    pool._lead = timedelta(seconds=1.0)
    sessions = [Session(pool.engine, pool.backend) for _ in range(2)]
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


def test_a_job_held_in_the_foreground_is_refused_to_another_runner(
    store: JobStore, pool: RunnerPool
) -> None:
    """``jobtui run NAME`` holds its job (a named lock on MariaDB, a lease on SQLite);
    another runner asking for the same hold learns who has it."""
    (jid,) = make_jobs(store, 1)
    other = RunnerPool(store, threads=1, poll=0.2, name="other", lead=0.0)
    mine, theirs = Session(pool.engine, pool.backend), Session(pool.engine, pool.backend)
    now = pool.now()
    until = now + timedelta(seconds=30)
    try:
        first = pool.backend.take_hold(
            mine.get(),
            jid,
            lock_name=pool._lock_name,
            runner_id=pool.runner_id,
            now=now,
            lease_until=until,
        )
        assert first is None
        second = other.backend.take_hold(
            theirs.get(),
            jid,
            lock_name=pool._lock_name,
            runner_id=other.runner_id,
            now=now,
            lease_until=until,
        )
        assert second is not None
        name, holder = second
        if pool.backend.named_locks:
            assert (name, holder) == (None, f"connection {mine.cid}")
        else:
            assert (name, holder) == ("b0", f"runner {pool.runner_id}")
            assert job_rows(store)["b0"]["locked_by"] == pool.runner_id
    finally:
        mine.discard()
        theirs.discard()


def test_a_long_first_run_does_not_stall_the_jobs_batched_before_it(store: JobStore) -> None:
    """Issue 26: a job never run yet joins a batch of short ones, last. Its first run may
    be long; the short jobs ran and were recorded before it started, and they are due
    again (every second) while it runs: the pool takes them again at once, it does not
    keep them busy until the whole batch ends."""
    from jobtui.core.schedules import make_schedule as schedule

    make_demo(store)  # the demo.* actions: a demo database
    with store.write() as conn:
        conn.execute(text("CREATE TABLE ledger (job VARCHAR(64))"))
    store.submit(
        "tick", What("sql", "INSERT INTO ledger (job) VALUES ('tick')"), schedule("every", every=1)
    )
    pool = RunnerPool(store, threads=4, poll=0.2, name="stall")  # as the demo
    pool.start()
    try:
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and store.get("tick").cycles < 2:
            time.sleep(0.05)
        tick = store.get("tick")
        assert tick.cycles >= 2 and tick.last_duration is not None
        assert tick.next_run is not None
        # on one of tick's slots: both due in the same pass, so batched [tick, long]
        long_run = 8.0
        store.submit(
            "long",
            What("action", "demo.sleep", (str(long_run),)),
            schedule("every", every=3600, start=tick.next_run + timedelta(seconds=2)),
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not store.get("long").running:
            time.sleep(0.02)
        assert store.get("long").running
        started = store.get("tick").cycles
        time.sleep(4.0)
        during = store.get("tick").cycles - started
        long_job = store.get("long")
    finally:
        pool.stop(grace=0)
    assert long_job.running  # still in its first run while tick was watched
    assert long_job.cycles == 0
    # every second for 4 s: 3 or more runs (stalled, it made none until `long` ended)
    assert during >= 3, f"tick ran {during} time(s) in 4 s during long's first run"
