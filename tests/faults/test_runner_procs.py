"""Runner pools in real worker processes: exclusivity, kill -9, lost connections, SIGTERM."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import text
from support.demo_db import make_demo
from support.mariadb import admin_connection
from support.procs import (
    check_exclusive,
    create_ledger_proc,
    kill_mid_call_and_check_rerun,
    ledger_counts,
    mysql_db,
    spawn,
    wait_for,
    worker_list,
)

from jobtui.core.model import Outcome, What
from jobtui.core.schedules import make_schedule
from jobtui.core.store import open_store
from jobtui.core.timeutil import utcnow

pytestmark = pytest.mark.slow


@pytest.fixture
def workers() -> Iterator[list]:  # type: ignore[type-arg]
    with worker_list() as started:
        yield started


# ---------------------------------------------------------------------- exclusivity


@pytest.mark.mariadb
def test_exclusivity_three_workers_mariadb(mariadb_url: str, workers: list, tmp_path: Path) -> None:
    create_ledger_proc(mariadb_url)
    store = open_store(mariadb_url)
    db = mysql_db(mariadb_url)
    start = utcnow() + timedelta(seconds=4)
    jobs = 50
    duration = 20
    finish = start + timedelta(seconds=duration - 0.5)
    for i in range(jobs):
        store.submit(
            f"j{i:02d}",
            What("call", f"{db}.ledger_ins", (f"j{i:02d}",)),
            make_schedule("every", every=1, start=start, finish=finish),
        )
    for n in range(3):
        spawn(workers, mariadb_url, tmp_path, f"w{n}", threads=4, poll=1.0)
    assert wait_for(lambda: all(w.started() for w in workers), 20)
    time.sleep(max(0.0, (finish - utcnow()).total_seconds()) + 3)
    for w in workers:
        assert w.terminate() == 0, w.log()
    by_job = check_exclusive(store)
    ledger = ledger_counts(store)
    expected = duration  # slots start, start+1 ... start+19
    total_ok = 0
    for i in range(jobs):
        name = f"j{i:02d}"
        ok = [r for r in by_job[name] if r.outcome is Outcome.OK]
        total_ok += len(ok)
        assert ledger[name] == len(ok), name  # every ok run executed exactly once
    assert total_ok >= 0.95 * expected * jobs, total_ok
    runners = {r.runner for rs in by_job.values() for r in rs}
    assert len(runners) >= 2  # the work really was shared
    for w in workers:
        assert "Traceback" not in w.log(), w.log()
    store.close()


def test_two_sqlite_workers_share_one_file(sqlite_url: str, workers: list, tmp_path: Path) -> None:
    store = open_store(sqlite_url)
    with store.write() as conn:
        conn.execute(text("CREATE TABLE ledger (job VARCHAR(64), t VARCHAR(40))"))
    start = utcnow() + timedelta(seconds=3)
    finish = start + timedelta(seconds=9.5)
    for i in range(10):
        store.submit(
            f"s{i}",
            What("sql", f"INSERT INTO ledger (job, t) VALUES ('s{i}', NOW())"),
            make_schedule("every", every=1, start=start, finish=finish),
        )
    for n in range(2):
        spawn(workers, sqlite_url, tmp_path, f"sq{n}", threads=3, poll=1.0)
    time.sleep(max(0.0, (finish - utcnow()).total_seconds()) + 2.5)
    for w in workers:
        assert w.terminate() == 0, w.log()
    by_job = check_exclusive(store)
    ledger = ledger_counts(store)
    total_ok = 0
    for i in range(10):
        ok = [r for r in by_job[f"s{i}"] if r.outcome is Outcome.OK]
        assert ledger[f"s{i}"] == len(ok)
        total_ok += len(ok)
    assert total_ok >= 0.9 * 10 * 10, total_ok
    for w in workers:
        log = w.log()
        assert "locked" not in log.lower(), log
        assert "Traceback" not in log, log
    store.close()


# ---------------------------------------------------------------------- dead runners


@pytest.mark.mariadb
def test_kill9_mid_run_is_lost_and_never_overlaps_the_orphan(
    mariadb_url: str, workers: list, tmp_path: Path
) -> None:
    create_ledger_proc(mariadb_url)
    store = open_store(mariadb_url)
    db = mysql_db(mariadb_url)
    start = utcnow() + timedelta(seconds=4)
    job = store.submit(
        "slow",
        What("call", f"{db}.slow_ins", ("slow", "10")),
        make_schedule("every", every=8, start=start),
    )
    timeout = 4.0
    a = spawn(workers, mariadb_url, tmp_path, "a", threads=2, poll=0.5, heartbeat_timeout=timeout)
    assert wait_for(a.started, 20)
    assert wait_for(lambda: store.get("slow").running, 15)
    a_id = a.runner_id()
    assert store.get("slow").runner_id == a_id
    b = spawn(
        workers, mariadb_url, tmp_path, "b", threads=2, poll=0.5, heartbeat_timeout=timeout, grace=1
    )
    assert wait_for(b.started, 20)
    admin = admin_connection(db)
    lost_after = kill_mid_call_and_check_rerun(
        store,
        job,
        start=start,
        every=8,
        victim=str(a_id),
        kill=a.kill9,
        heir=b,
        admin=admin,
    )
    assert lost_after < timeout + 2 + 0.5 + 2.5  # timeout + reap + poll + margin
    admin.close()
    store.close()


def test_kill9_sqlite_lease_expires_and_another_worker_takes_over(
    sqlite_url: str, workers: list, tmp_path: Path
) -> None:
    store = open_store(sqlite_url)
    make_demo(store)  # the demo.* actions: a demo database
    store.submit("nap", What("action", "demo.sleep", ("30",)), make_schedule("every", every=3))
    timeout = 4.0
    a = spawn(workers, sqlite_url, tmp_path, "a", threads=1, poll=0.5, heartbeat_timeout=timeout)
    assert wait_for(lambda: store.get("nap").running, 20)
    a_id = a.runner_id()
    b = spawn(workers, sqlite_url, tmp_path, "b", threads=1, poll=0.5, heartbeat_timeout=timeout)
    assert wait_for(b.started, 20)
    a.kill9()
    t0 = time.monotonic()
    assert wait_for(
        lambda: any(r.outcome is Outcome.LOST for r in store.runs("nap", limit=10)), timeout + 6
    )
    assert time.monotonic() - t0 < timeout + 2 + 0.5 + 2.5
    b_id = b.runner_id()
    assert wait_for(lambda: store.get("nap").runner_id == b_id and store.get("nap").running, 8)
    assert a_id not in {r.id for r in store.runners()}
    assert b.terminate() == 0
    check_exclusive(store)
    store.close()


def test_a_stopped_sqlite_worker_keeps_its_job_until_it_resumes(
    sqlite_url: str, workers: list, tmp_path: Path
) -> None:
    """SIGSTOP: silent for longer than the heartbeat timeout, yet alive on this host.

    On SQLite nothing but the reaper keeps another runner off a running job, and
    the stopped worker's run goes on once it resumes: reaping it would run the
    job twice at once. The other worker leaves it alone (and says why); after
    SIGCONT the run ends ok in the worker that started it.
    """
    store = open_store(sqlite_url)
    make_demo(store)  # the demo.* actions: a demo database
    # Long enough to be still running when b is up and a is stopped, on a loaded machine too.
    store.submit("nap", What("action", "demo.sleep", ("10",)), make_schedule("every", every=1))
    timeout = 2.0
    a = spawn(workers, sqlite_url, tmp_path, "a", threads=1, poll=0.5, heartbeat_timeout=timeout)
    assert wait_for(lambda: store.get("nap").running, 20)
    a_id = a.runner_id()
    b = spawn(workers, sqlite_url, tmp_path, "b", threads=1, poll=0.5, heartbeat_timeout=timeout)
    assert wait_for(b.started, 20)
    os.kill(a.pid, signal.SIGSTOP)
    try:
        assert wait_for(lambda: "its process is alive on this host" in b.log(), 4 * timeout), (
            b.log()
        )
        time.sleep(2 * timeout)  # b looks again every 0.5 s
        job = store.get("nap")
        assert job.running and job.runner_id == a_id, job
        assert not [r for r in store.runs("nap") if r.outcome is Outcome.LOST]
        assert a_id in {r.id for r in store.runners()}
    finally:
        os.kill(a.pid, signal.SIGCONT)
    assert wait_for(
        lambda: any(r.outcome is Outcome.OK and r.runner == a_id for r in store.runs("nap")), 15
    ), store.runs("nap")
    assert a.terminate() == 0 and b.terminate() == 0
    check_exclusive(store)  # no overlap, no slot twice, nothing left running
    assert "Traceback" not in a.log() + b.log()
    store.close()


# ---------------------------------------------------------------------- lost connections


@pytest.mark.mariadb
def test_every_runner_connection_killed_at_once(
    mariadb_url: str, workers: list, tmp_path: Path
) -> None:
    create_ledger_proc(mariadb_url)
    store = open_store(mariadb_url)
    db = mysql_db(mariadb_url)
    for i in range(8):
        store.submit(
            f"k{i}", What("call", f"{db}.ledger_ins", (f"k{i}",)), make_schedule("every", every=1)
        )
    store.submit(
        "sleeper", What("call", f"{db}.slow_ins", ("sleeper", "3")), make_schedule("every", every=1)
    )
    for n in range(2):
        spawn(workers, mariadb_url, tmp_path, f"c{n}", threads=3, poll=0.5)
    assert wait_for(lambda: all(w.started() for w in workers), 20)
    time.sleep(4)
    store.close()  # the test's own pool: only runner connections remain on this database
    admin = admin_connection()
    with admin.cursor() as cur:
        cur.execute(
            "SELECT ID FROM information_schema.PROCESSLIST WHERE DB = %s AND ID <> CONNECTION_ID()",
            (db,),
        )
        ids = [row[0] for row in cur.fetchall()]
        assert len(ids) >= 4
        for cid in ids:
            try:
                cur.execute(f"KILL CONNECTION {int(cid)}")
            except Exception as exc:  # it may have gone by itself meanwhile
                assert "Unknown thread" in str(exc)
    killed = utcnow()
    store = open_store(mariadb_url)
    time.sleep(6)
    for w in workers:
        assert w.proc.poll() is None, w.log()  # still alive
        assert w.terminate() == 0, w.log()
        print(w.log()[-3000:])
        assert "Traceback" not in w.log(), w.log()
    by_job = check_exclusive(store)
    ledger = ledger_counts(store)
    for i in range(8):
        rs = by_job[f"k{i}"]
        ok = [r for r in rs if r.outcome is Outcome.OK]
        failed = [r for r in rs if r.outcome is Outcome.FAILED]
        assert len(ok) <= ledger[f"k{i}"] <= len(ok) + len(failed)
        after = [r for r in ok if r.started > killed + timedelta(seconds=2)]
        assert len(after) >= 2, f"k{i} did not recover: {rs}"
    assert store.runners() == []
    admin.close()
    store.close()


# ---------------------------------------------------------------------- shutdown


def test_sigterm_waits_for_grace_then_aborts(
    sqlite_url: str, workers: list, tmp_path: Path
) -> None:
    store = open_store(sqlite_url)
    make_demo(store)  # the demo.* actions: a demo database
    store.submit("nap", What("action", "demo.sleep", ("30",)), make_schedule("every", every=3600))
    store.submit(
        "quick", What("action", "demo.sleep", ("0.5",)), make_schedule("every", every=3600)
    )
    # 4 threads: one owner's jobs hold at most half of them (--owner-share), and both
    # of its jobs must run at once here
    w = spawn(workers, sqlite_url, tmp_path, "g", threads=4, poll=0.5, grace=1.5)
    assert wait_for(lambda: store.get("nap").running and store.get("quick").last_outcome, 20)
    t0 = time.monotonic()
    assert w.terminate() == 0
    assert 1.0 < time.monotonic() - t0 < 8
    [run] = store.runs("nap", limit=10)
    assert run.outcome is Outcome.ABORTED and "grace" in (run.error or "")
    assert store.get("nap").phase != "ABORTED"
    log = w.log()
    assert "job=quick" in log and "outcome=ok" in log
    assert "job=nap" in log and "outcome=aborted" in log
    assert store.runners() == []
    store.close()
