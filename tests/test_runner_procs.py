"""Runner pools in real worker processes: exclusivity, kill -9, lost connections, SIGTERM."""

from __future__ import annotations

import itertools
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from conftest import admin_connection
from procs import Worker, wait_for
from sqlalchemy import text
from sqlalchemy.engine import make_url

from jobtui.core.claims import lock_name
from jobtui.core.model import Outcome, What
from jobtui.core.schedules import make_schedule
from jobtui.core.store import JobStore, open_store
from jobtui.core.timeutil import utcnow

pytestmark = pytest.mark.slow


@pytest.fixture
def workers(tmp_path: Path) -> Iterator[list[Worker]]:
    started: list[Worker] = []
    yield started
    for w in started:
        w.cleanup()


def spawn(workers: list[Worker], url: str, log_dir: Path, name: str, **kw: object) -> Worker:
    w = Worker(url, log_dir, name=name, **kw)  # type: ignore[arg-type]
    workers.append(w)
    return w


def all_runs(store: JobStore) -> list:  # type: ignore[type-arg]
    return store.runs(limit=100_000, all_owners=True)


def check_exclusive(store: JobStore) -> dict[str, list]:  # type: ignore[type-arg]
    """No slot twice, no two runs of one job at once, nothing left running. Runs by job."""
    runs = all_runs(store)
    slots = Counter((r.job_id, r.scheduled_for) for r in runs)
    assert max(slots.values(), default=1) == 1
    by_job: dict[str, list] = defaultdict(list)  # type: ignore[type-arg]
    for r in runs:
        assert r.outcome is not Outcome.RUNNING, r
        if r.started is not None:
            by_job[r.job].append(r)
    for job, rs in by_job.items():
        rs.sort(key=lambda r: r.started)
        for a, b in itertools.pairwise(rs):
            assert a.finished is not None
            assert a.finished <= b.started, f"{job}: {a} overlaps {b}"
    return by_job


def mysql_db(url: str) -> str:
    return str(make_url(url).database)


def create_ledger_proc(url: str, *, sleep: float = 0) -> None:
    conn = admin_connection(mysql_db(url))
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE ledger (job VARCHAR(64), t DATETIME(6), conn BIGINT)")
        cur.execute(
            "CREATE PROCEDURE ledger_ins(IN j VARCHAR(64)) "
            "BEGIN INSERT INTO ledger VALUES (j, NOW(6), CONNECTION_ID()); END"
        )
        cur.execute(
            # Short sleeps in a loop: MariaDB notices a vanished client during one long
            # SLEEP (every 5 s), but not here, so an orphan really runs on to its end.
            "CREATE PROCEDURE slow_ins(IN j VARCHAR(64), IN s DOUBLE) "
            "BEGIN DECLARE t_end DATETIME(6) DEFAULT NOW(6) + INTERVAL s SECOND; "
            "INSERT INTO ledger VALUES (j, NOW(6), CONNECTION_ID()); "
            "WHILE NOW(6) < t_end DO DO SLEEP(0.05); END WHILE; END"
        )
    conn.close()


def ledger_counts(store: JobStore) -> Counter[str]:
    with store.read() as conn:
        return Counter(
            {j: n for j, n in conn.execute(text("SELECT job, COUNT(*) FROM ledger GROUP BY job"))}
        )


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
    name = lock_name(db, job.id)

    def holder() -> int | None:
        with admin.cursor() as cur:
            cur.execute("SELECT IS_USED_LOCK(%s)", (name,))
            return cur.fetchone()[0]  # type: ignore[index,no-any-return]

    orphan = holder()
    assert orphan is not None
    time.sleep(max(0.0, (start + timedelta(seconds=2) - utcnow()).total_seconds()))
    a.kill9()
    killed_at = time.monotonic()

    def lost() -> bool:
        return any(r.outcome is Outcome.LOST for r in store.runs("slow", limit=10))

    assert wait_for(lost, timeout + 6, interval=0.1)
    assert time.monotonic() - killed_at < timeout + 2 + 0.5 + 2.5  # timeout + reap + poll + margin
    [lost_run] = [r for r in store.runs("slow", limit=10) if r.outcome is Outcome.LOST]
    assert a_id in (lost_run.error or "") and lost_run.scheduled_for == start
    # the orphaned CALL still sleeps on the server and keeps the lock: nobody runs the job
    assert holder() == orphan
    assert store.get("slow").running
    assert wait_for(lambda: holder() != orphan, 15, interval=0.05)
    freed_at = utcnow()
    b_id = b.runner_id()

    def rerun():  # type: ignore[no-untyped-def]
        return [r for r in store.runs("slow", limit=10) if r.runner == b_id and r.started]

    [second] = wait_for(rerun, 10, interval=0.1)
    assert second.started >= freed_at - timedelta(seconds=0.2)
    assert second.scheduled_for == start + timedelta(seconds=8)  # the next slot, late, not twice
    assert b.terminate() == 0
    check_exclusive(store)
    admin.close()
    store.close()


def test_kill9_sqlite_lease_expires_and_another_worker_takes_over(
    sqlite_url: str, workers: list, tmp_path: Path
) -> None:
    store = open_store(sqlite_url)
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
    store.submit("nap", What("action", "demo.sleep", ("30",)), make_schedule("every", every=3600))
    store.submit(
        "quick", What("action", "demo.sleep", ("0.5",)), make_schedule("every", every=3600)
    )
    w = spawn(workers, sqlite_url, tmp_path, "g", threads=2, poll=0.5, grace=1.5)
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
