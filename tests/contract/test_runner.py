"""Runner pools in this process, on SQLite and MariaDB: running, bookkeeping, obeying operators."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import timedelta

import pytest
from sqlalchemy import select, text, update
from sqlalchemy.engine import make_url
from support.demo_db import allow_actions, make_demo
from support.pools import start_pool
from support.procs import FakeClock, wait_for

from jobtui.core import actions, schema
from jobtui.core.bookkeeping import coalesce
from jobtui.core.errors import JobLocked
from jobtui.core.lock_names import lock_name
from jobtui.core.model import Outcome, Status, What
from jobtui.core.runner.pool import RunnerPool
from jobtui.core.runner.procinfo import process_alive
from jobtui.core.schedules import make_schedule
from jobtui.core.store import JobStore
from jobtui.core.timeutil import to_db, utcnow
from jobtui.core.worker import run_foreground

POLL = 0.2


@pytest.fixture
def pools(store: JobStore) -> Iterator[list[RunnerPool]]:
    started: list[RunnerPool] = []
    yield started
    for pool in started:
        pool.stop(grace=0)


def make_ledger(store: JobStore) -> None:
    with store.write() as conn:
        conn.execute(text("CREATE TABLE ledger (job VARCHAR(64), t VARCHAR(40))"))


def ledger_sql(job: str) -> What:
    return What("sql", f"INSERT INTO ledger (job, t) VALUES ('{job}', NOW())")


def long_statement(store: JobStore) -> What:
    """A statement that runs for much longer than any test waits."""
    if store.backend.name == "sqlite":
        return What(
            "sql",
            "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 10000000000) "
            "SELECT count(*) FROM c",
        )
    db = make_url(store.url).database
    with store.write() as conn:
        conn.execute(text("CREATE PROCEDURE slow_proc() BEGIN DO SLEEP(30); END"))
    return What("call", f"{db}.slow_proc")


def runs_of(store: JobStore, name: str) -> list:  # type: ignore[type-arg]
    return sorted(store.runs(name, limit=1000), key=lambda r: r.scheduled_for)


def ok_runs(store: JobStore, name: str) -> list:  # type: ignore[type-arg]
    return [r for r in runs_of(store, name) if r.outcome is Outcome.OK]


def every(seconds: float, **kw: object):  # type: ignore[no-untyped-def]
    return make_schedule("every", every=seconds, **kw)  # type: ignore[arg-type]


# ---------------------------------------------------------------------- running


def test_runs_due_jobs_on_time_with_bookkeeping(store: JobStore, pools: list) -> None:
    make_ledger(store)
    store.submit("tick", ledger_sql("tick"), every(1))
    pool = start_pool(pools, store)
    assert wait_for(lambda: len(ok_runs(store, "tick")) >= 3, 10)
    pool.stop()
    runs = ok_runs(store, "tick")
    job = store.get("tick")
    assert job.cycles == len(runs)
    assert job.status is Status.SLEEPING and not job.running
    assert job.last_outcome is Outcome.OK and job.failures == 0
    assert job.last_run == runs[-1].started
    assert job.next_run is not None and job.next_run > runs[-1].scheduled_for
    assert job.total_time == pytest.approx(sum(r.duration for r in runs), abs=1e-3)
    with store.read() as conn:
        ledger = conn.execute(text("SELECT COUNT(*) FROM ledger WHERE job = 'tick'")).scalar()
    assert ledger == len(runs)
    slots = [r.scheduled_for for r in runs]
    assert all((b - a).total_seconds() == pytest.approx(1.0) for a, b in itertools.pairwise(slots))
    # Each run started at or after its slot, none skipped (the slots above are a second
    # apart). How late is for bench/dispatch.py to measure: on a loaded machine a start
    # 1.05 s after its slot was seen; the bound here only catches a run of another slot.
    for r in runs:
        assert r.runner == pool.runner_id
        assert 0 <= (r.started - r.scheduled_for).total_seconds() < 5.0
        assert r.skipped == 0
    assert store.runners() == []  # deregistered


def test_fresh_job_and_edited_schedule_picked_up_within_a_poll(
    store: JobStore, pools: list
) -> None:
    make_ledger(store)
    start_pool(pools, store, poll=0.5)
    start = utcnow() + timedelta(hours=1)
    store.submit("later", ledger_sql("later"), every(3600, start=start))
    time.sleep(0.8)
    assert runs_of(store, "later") == []
    store.change("later", every=1, start=None)
    assert wait_for(lambda: ok_runs(store, "later"), 3)


def test_failed_run_keeps_error_text(store: JobStore, pools: list) -> None:
    with store.write() as conn:
        conn.execute(text("CREATE TABLE no_such_table (x INT)"))
    store.submit("bad", What("sql", "UPDATE no_such_table SET x = 1"), every(1))
    with store.write() as conn:  # make it fail at run time: the table is gone
        conn.execute(text("DROP TABLE no_such_table"))
    start_pool(pools, store)
    assert wait_for(lambda: any(r.outcome is Outcome.FAILED for r in runs_of(store, "bad")), 10)
    failed = next(r for r in runs_of(store, "bad") if r.outcome is Outcome.FAILED)
    assert "no_such_table" in (failed.error or "")
    job = store.get("bad")
    assert job.failures >= 1 and "no_such_table" in (job.last_error or "")


def test_once_job_runs_once_and_finishes(store: JobStore, pools: list) -> None:
    make_ledger(store)
    store.submit("one", ledger_sql("one"), make_schedule("once"))
    start_pool(pools, store)
    assert wait_for(lambda: store.get("one").status is Status.FINISHED, 10)
    time.sleep(0.6)
    assert [r.outcome for r in runs_of(store, "one")] == [Outcome.OK]
    assert store.get("one").next_run is None


def test_missed_slots_are_coalesced_and_logged(store: JobStore, pools: list) -> None:
    make_ledger(store)
    job = store.submit("late", ledger_sql("late"), every(1))
    assert job.next_run is not None
    missed_from = job.next_run - timedelta(seconds=6)
    with store.write() as conn:  # as if no runner had been up for six seconds
        conn.execute(
            update(schema.job)
            .where(schema.job.c.id == job.id)
            .values(next_run=to_db(missed_from), schedule_anchor=to_db(missed_from))
        )
    start_pool(pools, store)
    assert wait_for(lambda: ok_runs(store, "late"), 10)
    runs = runs_of(store, "late")
    skipped = [r for r in runs if r.outcome is Outcome.SKIPPED]
    assert len(skipped) == 1
    assert skipped[0].scheduled_for == missed_from
    assert skipped[0].skipped >= 5
    first_ok = ok_runs(store, "late")[0]
    # one run for the latest due slot; the rest were not run in a burst
    assert (first_ok.scheduled_for - missed_from).total_seconds() == skipped[0].skipped
    assert 0 <= (first_ok.started - first_ok.scheduled_for).total_seconds() < 1.0


def test_coalesce_arithmetic() -> None:
    t0 = utcnow().replace(microsecond=0)
    sched = every(2)
    assert coalesce(sched, t0, t0, t0) == (t0, 0)
    assert coalesce(sched, t0, t0 + timedelta(seconds=1.9), t0) == (t0, 0)
    assert coalesce(sched, t0, t0 + timedelta(seconds=2), t0) == (t0 + timedelta(seconds=2), 1)
    slot, n = coalesce(sched, t0, t0 + timedelta(seconds=2001), t0)
    assert slot == t0 + timedelta(seconds=2000) and n == 1000
    once = make_schedule("once")
    assert coalesce(once, t0, t0 + timedelta(days=1), t0) == (t0, 0)


def test_lock_names_stay_within_64_characters() -> None:
    short = lock_name("k" * 64, "shop", 7)
    assert short.startswith("jobtui:") and len(short) == 64
    assert "shop" not in short and not short.endswith(":7")  # nothing an operator can compute
    long = lock_name("k" * 64, "s" * 64, 123456789012)
    assert len(long) == 64 and long != short
    assert lock_name("other key", "shop", 7) != short  # the key decides the name
    assert lock_name("k" * 64, "shop", 8) != short and lock_name("k" * 64, "shop2", 7) != short


# ---------------------------------------------------------------------- operators


def test_pause_stops_new_runs_and_resume_has_no_burst(store: JobStore, pools: list) -> None:
    make_ledger(store)
    store.submit("p", ledger_sql("p"), every(1))
    start_pool(pools, store)
    assert wait_for(lambda: len(ok_runs(store, "p")) >= 1, 10)
    store.pause("p")
    assert wait_for(lambda: not store.get("p").running, 5)
    count = len(runs_of(store, "p"))
    time.sleep(2.5)
    assert len(runs_of(store, "p")) == count
    assert store.get("p").status is Status.PAUSED
    resumed_at = utcnow()
    job = store.resume("p")
    assert job.status is Status.RESUMED
    assert job.next_run is not None and job.next_run > resumed_at
    assert wait_for(lambda: len(ok_runs(store, "p")) > count, 5)
    after = [r for r in runs_of(store, "p") if r.scheduled_for > resumed_at]
    assert after and all(r.outcome is Outcome.OK for r in after)
    assert not [r for r in runs_of(store, "p") if r.outcome is Outcome.SKIPPED]


def test_abort_stops_the_statement_within_two_seconds(store: JobStore, pools: list) -> None:
    store.submit("long", long_statement(store), every(3600))
    start_pool(pools, store)
    assert wait_for(lambda: store.get("long").running, 10)
    time.sleep(0.5)  # well inside the statement
    t0 = time.monotonic()
    store.abort("long")
    assert wait_for(lambda: not store.get("long").running, 5, interval=0.02)
    elapsed = time.monotonic() - t0
    assert elapsed < 2.0, elapsed
    job = store.get("long")
    assert job.status is Status.ABORTED and job.phase == "ABORTED"
    assert job.last_outcome is Outcome.ABORTED and not job.abort_requested
    [run] = runs_of(store, "long")
    assert run.outcome is Outcome.ABORTED and "abort" in (run.error or "")
    assert job.failures == 0  # an abort is not a failure and is not retried
    with store.write() as conn:  # even when its slot comes round
        conn.execute(
            update(schema.job).where(schema.job.c.id == job.id).values(next_run=to_db(utcnow()))
        )
    time.sleep(1.0)
    assert len(runs_of(store, "long")) == 1


def test_abort_an_action(store: JobStore, pools: list) -> None:
    make_demo(store)  # the demo.* actions: a demo database
    store.submit("nap", What("action", "demo.sleep", ()), every(3600))
    start_pool(pools, store)
    assert wait_for(lambda: store.get("nap").running, 10)
    t0 = time.monotonic()
    store.abort("nap")
    assert wait_for(lambda: not store.get("nap").running, 5, interval=0.02)
    assert time.monotonic() - t0 < 2.0
    assert [r.outcome for r in runs_of(store, "nap")] == [Outcome.ABORTED]


def test_remove_while_running(store: JobStore, pools: list) -> None:
    make_demo(store)  # the demo.* actions: a demo database
    make_ledger(store)
    store.submit("doomed", What("action", "demo.sleep", ()), every(3600))
    store.submit("other", ledger_sql("other"), every(1))
    pool = start_pool(pools, store)
    assert wait_for(lambda: store.get("doomed").running, 10)
    job = store.get("doomed")
    t0 = time.monotonic()
    store.remove("doomed")
    assert time.monotonic() - t0 < 3.0
    assert store.get_by_id(job.id) is None
    history = store.runs(job_id=job.id, limit=10)
    assert [r.outcome for r in history] == [Outcome.ABORTED]
    count = len(ok_runs(store, "other"))
    assert wait_for(lambda: len(ok_runs(store, "other")) > count + 1, 5)  # pool goes on
    assert pool.in_flight() in ([], ["other"])


def test_run_now_runs_within_a_poll(store: JobStore, pools: list) -> None:
    make_ledger(store)
    store.submit("manual", ledger_sql("manual"), every(3600, start=utcnow() + timedelta(days=1)))
    store.pause("manual")
    start_pool(pools, store, poll=0.5)
    time.sleep(0.6)
    t0 = time.monotonic()
    store.run_now("manual")
    assert wait_for(lambda: ok_runs(store, "manual"), 3)
    assert time.monotonic() - t0 < 1.5
    [run] = runs_of(store, "manual")
    assert run.manual
    job = store.get("manual")
    assert not job.run_now and job.status is Status.PAUSED  # intent untouched
    assert job.next_run is not None and job.next_run > utcnow() + timedelta(hours=23)


class Toggle:
    """A registered action that fails while ``failing`` is set."""

    def __init__(self) -> None:
        self.failing = True
        self.calls = 0
        self.seen_failures: list[int] = []  # ctx.job.failures at each call

    def __call__(self, ctx: actions.ActionContext) -> None:
        self.calls += 1
        self.seen_failures.append(ctx.job.failures)
        if self.failing:
            raise RuntimeError(f"toggle failure #{self.calls}")


@pytest.fixture
def toggle() -> Iterator[Toggle]:
    fn = Toggle()
    actions.register("test.toggle", fn)
    yield fn
    actions.unregister("test.toggle")


def test_backoff_timings_and_broken_with_injected_clock(
    store: JobStore, pools: list, toggle: Toggle
) -> None:
    allow_actions(store, "test.*")  # MySQL/MariaDB: the admins' allow-list
    submitted = store.submit("flaky", What("action", "test.toggle"), every(300), max_failures=4)
    slot0 = submitted.next_run
    assert slot0 is not None
    t0 = slot0 + timedelta(seconds=1)
    clock = FakeClock(t0)
    start_pool(pools, store, clock=clock)

    def failures(n: int) -> bool:
        return store.get("flaky").failures == n and not store.get("flaky").running

    assert wait_for(lambda: failures(1), 10)
    job = store.get("flaky")
    assert job.status is Status.ERROR
    assert job.next_run == t0 + timedelta(minutes=1)  # first retry after 1 minute
    clock.set(t0 + timedelta(seconds=59))
    time.sleep(1.0)
    assert store.get("flaky").failures == 1  # not early
    t1 = clock.set(t0 + timedelta(minutes=1)) or t0 + timedelta(minutes=1)
    assert wait_for(lambda: failures(2), 10)
    assert store.get("flaky").next_run == t1 + timedelta(minutes=2)  # then 2 minutes
    t2 = t1 + timedelta(minutes=2)
    clock.set(t2)
    assert wait_for(lambda: failures(3), 10)
    assert toggle.seen_failures == [0, 1, 2]  # the action sees the job's counters as claimed
    # 4 minutes would be later than the next regular slot: capped at the slot
    assert store.get("flaky").next_run == slot0 + timedelta(seconds=300)
    clock.set(slot0 + timedelta(seconds=300))
    assert wait_for(lambda: failures(4), 10)
    job = store.get("flaky")
    assert job.broken and job.status is Status.BROKEN
    assert "toggle failure #4" in (job.broken_reason or "")
    errors = [r.error for r in runs_of(store, "flaky")]
    assert errors == [f"RuntimeError: toggle failure #{i}" for i in range(1, 5)]
    clock.advance(3600)  # broken: never run, however late it gets
    time.sleep(1.0)
    assert toggle.calls == 4
    # run-now runs a broken job; a success clears BROKEN and resets failures
    toggle.failing = False
    store.run_now("flaky")
    assert wait_for(lambda: toggle.calls == 5 and not store.get("flaky").running, 10)
    job = store.get("flaky")
    assert not job.broken and job.failures == 0 and job.broken_reason is None
    assert job.status is Status.SLEEPING and job.last_outcome is Outcome.OK


def test_stop_lets_runs_finish_then_aborts(store: JobStore, pools: list) -> None:
    make_demo(store)  # the demo.* actions: a demo database
    store.submit("nap", What("action", "demo.sleep", ()), every(3600))
    pool = start_pool(pools, store)
    assert wait_for(lambda: store.get("nap").running, 10)
    t0 = time.monotonic()
    pool.stop(grace=0.5)
    assert time.monotonic() - t0 < 3.0
    job = store.get("nap")
    assert not job.running and job.last_outcome is Outcome.ABORTED
    assert job.phase != "ABORTED"  # a shutdown is not an operator abort: next slot runs
    [run] = runs_of(store, "nap")
    assert run.outcome is Outcome.ABORTED and "grace" in (run.error or "")
    assert store.runners() == []


# ---------------------------------------------------------------------- exclusivity


def test_two_pools_never_run_one_slot_twice(store: JobStore, pools: list) -> None:
    make_ledger(store)
    for i in range(6):
        store.submit(f"j{i}", ledger_sql(f"j{i}"), every(0.5))
    a = start_pool(pools, store, threads=3, name="a")
    b = start_pool(pools, store, threads=3, name="b")
    time.sleep(4)
    a.stop()
    b.stop()
    with store.read() as conn:
        ledger = dict(
            conn.execute(text("SELECT job, COUNT(*) FROM ledger GROUP BY job")).all()  # type: ignore[arg-type]
        )
    for i in range(6):
        runs = ok_runs(store, f"j{i}")
        assert len(runs) >= 5
        assert ledger.get(f"j{i}") == len(runs)
        for x, y in itertools.pairwise(runs):
            assert x.finished <= y.started  # no overlap
    runners = {r.runner for i in range(6) for r in ok_runs(store, f"j{i}")}
    assert runners <= {a.runner_id, b.runner_id}


# ---------------------------------------------------------------------- foreground


def test_run_foreground_runs_a_once_job(store: JobStore) -> None:
    make_ledger(store)
    store.submit(
        "fg", ledger_sql("fg"), make_schedule("once", start=utcnow() + timedelta(seconds=1))
    )
    assert run_foreground(store, "fg", poll=0.2) == 0
    assert [r.outcome for r in runs_of(store, "fg")] == [Outcome.OK]
    assert store.get("fg").status is Status.FINISHED
    assert store.runners() == []


def test_run_foreground_refuses_a_job_another_runner_holds(store: JobStore, pools: list) -> None:
    make_demo(store)  # the demo.* actions: a demo database
    store.submit("held", What("action", "demo.sleep", ("20",)), every(3600))
    pool = start_pool(pools, store)
    assert wait_for(lambda: store.get("held").running, 10)
    with pytest.raises(JobLocked) as info:
        run_foreground(store, "held", poll=0.2)
    message = str(info.value)
    if store.backend.name == "sqlite" or store.backend.cluster:  # held by the row's lease
        assert pool.runner_id in message
    else:
        with store.read() as conn:
            cid = conn.execute(
                select(schema.job.c.runner_connection_id).where(schema.job.c.name == "held")
            ).scalar()
        assert f"already locked by connection {cid}" in message


def test_run_foreground_holds_the_job_against_pools(store: JobStore, pools: list) -> None:
    make_ledger(store)
    store.submit("mine", ledger_sql("mine"), every(0.5, finish=utcnow() + timedelta(seconds=3)))
    result: list[int] = []
    t = threading.Thread(target=lambda: result.append(run_foreground(store, "mine", poll=0.2)))
    t.start()
    time.sleep(0.5)
    other = start_pool(pools, store)
    t.join(20)
    assert result == [0]
    runs = ok_runs(store, "mine")
    assert len(runs) >= 3
    assert other.runner_id not in {r.runner for r in runs}
    assert store.get("mine").status is Status.FINISHED


def test_expr_schedule_is_evaluated_at_run_start(store: JobStore, pools: list) -> None:
    make_ledger(store)
    expr = (
        "datetime(NOW(), '+1 day')" if store.backend.name == "sqlite" else "NOW() + INTERVAL 1 DAY"
    )
    store.submit("daily", ledger_sql("daily"), make_schedule("expr", expr=expr))
    # NULL at a run means "that was the last run" (NULL at submit is refused): NULL from
    # one second after the submit on
    until = (utcnow() + timedelta(seconds=1)).strftime("%Y-%m-%d %H:%M:%S.%f")
    tomorrow = (
        "datetime(NOW(), '+1 day')" if store.backend.name == "sqlite" else "NOW() + INTERVAL 1 DAY"
    )
    last = f"CASE WHEN NOW() < '{until}' THEN {tomorrow} END"
    store.submit("last", ledger_sql("last"), make_schedule("expr", expr=last))
    time.sleep(2.1)  # MariaDB's NOW() keeps whole seconds: a full second past `until`
    start_pool(pools, store)
    assert wait_for(lambda: ok_runs(store, "daily") and ok_runs(store, "last"), 10)
    assert wait_for(lambda: store.get("last").status is Status.FINISHED, 5)
    [run] = ok_runs(store, "daily")
    job = store.get("daily")
    assert job.status is Status.SLEEPING
    assert job.next_run is not None
    # (SQLite's datetime() keeps whole seconds)
    # evaluated at the start of the run cycle (the claim), a moment before execution
    assert job.last_cycle_start is not None and run.started is not None
    assert job.last_cycle_start <= run.started
    assert abs((job.next_run - job.last_cycle_start - timedelta(days=1)).total_seconds()) < 1.0
    assert store.get("last").next_run is None


def test_call_binds_arguments_and_drains_every_result_set(mariadb_url: str) -> None:
    from jobtui.core.store import open_store

    store = open_store(mariadb_url)
    db = make_url(mariadb_url).database
    with store.write() as conn:
        conn.execute(text("CREATE TABLE ledger (job VARCHAR(64), t VARCHAR(40))"))
        conn.execute(
            text(
                "CREATE PROCEDURE chatty(IN a VARCHAR(100), IN b VARCHAR(100)) BEGIN "
                "SELECT 1 AS one; SELECT a, b; INSERT INTO ledger VALUES (a, b); SELECT 3; END"
            )
        )
    tricky = "O'Brien\"; DROP TABLE ledger; --"
    store.submit("chatty", What("call", f"{db}.chatty", (tricky, "%s %(x)s")), every(1))
    pool = RunnerPool(store, threads=1, poll=POLL)
    pool.start()
    try:
        assert wait_for(lambda: len(ok_runs(store, "chatty")) >= 2, 10)
    finally:
        pool.stop()
    with store.read() as conn:
        rows = conn.execute(text("SELECT job, t FROM ledger")).all()
    assert len(rows) == len(ok_runs(store, "chatty"))
    assert rows[0] == (tricky, "%s %(x)s")
    store.close()


def _job(phase: str, **kw: object):  # type: ignore[no-untyped-def]
    from jobtui.core.model import Intent, Job

    values: dict = dict(
        id=1,
        owner="o",
        name="j",
        description="",
        what=What("action", "demo.noop"),
        schedule=every(60),
        status=Status.SLEEPING,
        intent=Intent.ENABLED,
        broken=False,
        failures=0,
        max_failures=3,
        cycles=5,
        created=utcnow(),
        phase=phase,
        running=True,
        anchor=utcnow(),
    )
    values.update(kw)
    return Job(**values)


def test_finish_values_follow_dbms_job_rules() -> None:
    from jobtui.core.bookkeeping import finish_values

    t0 = utcnow()
    t1 = t0 + timedelta(seconds=2)
    nxt = t0 + timedelta(seconds=60)
    ok = finish_values(
        _job("SLEEPING", next_run=nxt, total_time=1.0),
        "SLEEPING",
        outcome=Outcome.OK,
        error=None,
        started=t0,
        finished=t1,
        manual=False,
    )
    assert ok["phase"] == "SLEEPING" and ok["status"] == "SLEEPING" and not ok["running"]
    assert ok["cycles"] == 6 and ok["total_time"] == pytest.approx(3.0)
    assert ok["failures"] == 0 and ok["last_run"] == to_db(t0) and "next_run" not in ok
    last = finish_values(
        _job("ENABLED", next_run=None),
        "ENABLED",
        outcome=Outcome.OK,
        error=None,
        started=t0,
        finished=t1,
        manual=False,
    )
    assert last["phase"] == "FINISHED" and last["status"] == "FINISHED"
    failed = finish_values(
        _job("SLEEPING", next_run=nxt, failures=2),
        "SLEEPING",
        outcome=Outcome.FAILED,
        error="boom",
        started=t0,
        finished=t1,
        manual=False,
    )
    assert failed["failures"] == 3 and failed["broken"] and failed["status"] == "BROKEN"
    assert "boom" in failed["broken_reason"]
    assert failed["next_run"] == to_db(nxt)  # 4 min backoff capped at the next slot
    # run-now of a FINISHED job: it stays FINISHED whatever happens
    for outcome in (Outcome.OK, Outcome.FAILED):
        v = finish_values(
            _job("FINISHED", next_run=None),
            "FINISHED",
            outcome=outcome,
            error="x",
            started=t0,
            finished=t1,
            manual=True,
        )
        assert v["phase"] == "FINISHED" and "next_run" not in v
    aborted = finish_values(
        _job("SLEEPING", next_run=nxt),
        "ABORTED",
        outcome=Outcome.ABORTED,
        error="aborted by operator",
        started=t0,
        finished=t1,
        manual=False,
    )
    assert aborted["phase"] == "ABORTED" and aborted["failures"] == 0
    shutdown = finish_values(
        _job("SLEEPING", next_run=nxt),
        "SLEEPING",
        outcome=Outcome.ABORTED,
        error="grace",
        started=t0,
        finished=t1,
        manual=False,
        shutdown=True,
    )
    assert shutdown["phase"] == "SLEEPING" and shutdown["status"] == "SLEEPING"
    assert "next_run" not in shutdown  # the next regular slot stands
    once_cut = finish_values(
        _job("ENABLED", next_run=None),
        "ENABLED",
        outcome=Outcome.ABORTED,
        error="grace",
        started=t0,
        finished=t1,
        manual=False,
        shutdown=True,
    )
    # A once job cut off by a shutdown (rolled back) runs again, not stuck without a slot.
    assert once_cut["next_run"] == to_db(t1) and once_cut["status"] == "ENABLED"


def test_coalesce_a_long_cron_gap_quickly() -> None:
    t0 = utcnow().replace(microsecond=0)
    sched = make_schedule("cron", cron="* * * * * *")  # every second
    t = time.monotonic()
    slot, n = coalesce(sched, t0, t0 + timedelta(days=2, seconds=0.5), t0)
    assert time.monotonic() - t < 5
    assert slot == t0 + timedelta(days=2)
    assert n >= 10_000  # a lower bound when the gap is this long
    slot, n = coalesce(sched, t0, t0 + timedelta(seconds=30.5), t0)
    assert slot == t0 + timedelta(seconds=30) and n == 30


def test_a_lost_once_job_shows_error_and_is_not_rerun(store: JobStore, pools: list) -> None:
    """A crashed runner's once job: the run is lost, the job shows ERROR, nothing reruns it."""
    make_ledger(store)
    job = store.submit("one", ledger_sql("one"), make_schedule("once"))
    now = utcnow()
    ghost = "ghost-host:1:gone:0000"
    with store.write() as conn:  # what a runner killed mid-run leaves behind
        conn.execute(
            update(schema.job)
            .where(schema.job.c.id == job.id)
            .values(
                running=True,
                status="RUNNING",
                runner_id=ghost,
                next_run=None,
                this_run=to_db(now),
                runner_start=to_db(now),
            )
        )
        conn.execute(
            schema.run.insert().values(
                job_id=job.id,
                job_name="one",
                owner=job.owner,
                scheduled_for=to_db(now),
                started=to_db(now),
                outcome="running",
                runner=ghost,
            )
        )
    start_pool(pools, store, heartbeat_timeout=2.0)
    assert wait_for(lambda: not store.get("one").running, 15)
    time.sleep(3 * POLL)
    after = store.get("one")
    assert after.status is Status.ERROR and after.last_outcome is Outcome.LOST
    assert [r.outcome for r in runs_of(store, "one")] == [Outcome.LOST]


def test_process_alive_tells_a_live_process_from_a_gone_one_or_a_newer_one() -> None:
    """What the SQLite reaper asks of a silent runner on this host (docs/runners.md)."""
    now = utcnow()
    assert process_alive(os.getpid())
    assert process_alive(os.getpid(), since=now)  # we ran then
    # a process that started after the runner's last heartbeat got its pid later
    assert not process_alive(os.getpid(), since=now - timedelta(days=365 * 30))
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    assert wait_for(lambda: not process_alive(child.pid), 10)  # a zombie until waited for
    assert child.wait(5) == 0
    assert not process_alive(child.pid)  # gone


def test_reaping_own_orphans_leaves_a_claim_made_meanwhile_running(store: JobStore) -> None:
    """A pool's own `running` run rows that no thread has are orphans (a claim whose
    commit reply was lost) and become lost; but one whose job row the pool holds is a
    claim that committed after the pool looked at its threads' work: a live run.

    The chaos test saw the race: a job running with its run row already `lost`.
    """
    live = store.submit("live", What("sql", "SELECT 1"), every(60))
    orphan = store.submit("orphan", What("sql", "SELECT 1"), every(60))
    pool = RunnerPool(store, threads=1)
    pool._engine = store.engine  # not started: no thread of its own reaps meanwhile
    now = utcnow()
    j, r = schema.job, schema.run
    with store.write() as conn:
        conn.execute(
            update(j).where(j.c.id == live.id).values(running=True, runner_id=pool.runner_id)
        )
        for job in (live, orphan):
            conn.execute(
                r.insert().values(
                    job_id=job.id,
                    job_name=job.name,
                    owner=job.owner,
                    scheduled_for=to_db(now),
                    started=to_db(now),
                    outcome="running",
                    runner=pool.runner_id,
                )
            )
    pool._reaper.mark_lost(pool.runner_id, now, "test", skip=set(), unless_held=True)
    outcomes = {run.job: run.outcome for run in store.runs(limit=10, all_owners=True)}
    assert outcomes == {"live": Outcome.RUNNING, "orphan": Outcome.LOST}
    # Without a thread that has it, the held job is an orphan too: released, then lost.
    pool._reaper.reap_self(utcnow())
    outcomes = {run.job: run.outcome for run in store.runs(limit=10, all_owners=True)}
    assert outcomes == {"live": Outcome.LOST, "orphan": Outcome.LOST}
    assert not store.get("live").running
