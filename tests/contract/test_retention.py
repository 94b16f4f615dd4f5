"""Run-log retention: the rules of prune_runs, the runners' housekeeping, `jobtui prune`.

Both backends; time comes from an injected clock (no test waits for days).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import func, insert, select
from sqlalchemy.engine import make_url
from support.mariadb import admin_connection
from support.procs import FakeClock, wait_for

from jobtui.cli import main
from jobtui.core import schema
from jobtui.core.errors import InvalidInput, JobtuiError
from jobtui.core.model import Job, Outcome, What
from jobtui.core.retention import Retention, prune_lock_name
from jobtui.core.runner.pool import RunnerPool
from jobtui.core.schedules import make_schedule
from jobtui.core.store import JobStore, open_store
from jobtui.core.timeutil import to_db, utcnow

T0 = datetime(2030, 3, 1, 12, 0, 0, tzinfo=UTC)
ERRORS = ("failed", "aborted", "lost")


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(T0)


@pytest.fixture
def rstore(db_url: str, clock: FakeClock) -> Iterator[JobStore]:
    s = open_store(db_url, clock=clock)
    try:
        yield s
    finally:
        s.close()


def job(store: JobStore, name: str) -> Job:
    return store.submit(name, What("sql", "SELECT 1"), make_schedule("every", every=60))


def add_runs(
    store: JobStore, j: Job, slots: list[tuple[datetime, str]], runner: str | None = "r1"
) -> None:
    rows = [
        {
            "job_id": j.id,
            "job_name": j.name,
            "owner": j.owner,
            "scheduled_for": to_db(slot),
            "started": to_db(slot),
            "finished": None if outcome == "running" else to_db(slot + timedelta(seconds=1)),
            "duration": None if outcome == "running" else 1.0,
            "outcome": outcome,
            "error": f"{outcome} at {slot.isoformat()}",
            "runner": runner,
            "skipped": 0,
            "manual": False,
        }
        for slot, outcome in slots
    ]
    with store.engine.begin() as conn:
        conn.execute(insert(schema.run), rows)


def outcomes(store: JobStore, j: Job) -> list[tuple[datetime, str]]:
    runs = store.runs(j.name, limit=100_000)
    return sorted((r.scheduled_for, r.outcome.value) for r in runs)


def count_runs(store: JobStore) -> int:
    with store.read() as conn:
        return int(conn.execute(select(func.count()).select_from(schema.run)).scalar_one())


# ---------------------------------------------------------------------- the rules


def test_keep_counts_successes_and_errors_apart(rstore: JobStore) -> None:
    a = job(rstore, "a")
    # 10 ok runs, then 3 failures, then 10 more ok runs (newest last), one running
    slots = [(T0 - timedelta(minutes=100 - i), "ok") for i in range(10)]
    slots += [(T0 - timedelta(minutes=80 - i), ERRORS[i]) for i in range(3)]
    slots += [(T0 - timedelta(minutes=70 - i), "ok") for i in range(10)]
    slots += [(T0 - timedelta(days=400), "running")]  # ancient, but in flight: never pruned
    add_runs(rstore, a, slots)
    assert rstore.prune_runs(keep=5, dry_run=True) == 15
    assert len(outcomes(rstore, a)) == 24  # a dry run deletes nothing
    assert rstore.prune_runs(keep=5) == 15
    left = outcomes(rstore, a)
    oks = [t for t, o in left if o == "ok"]
    assert oks == sorted(t for t, o in slots if o == "ok")[-5:]
    assert [o for _, o in left if o in ERRORS] == list(ERRORS)  # the errors outlive 20 oks
    assert [o for _, o in left].count("running") == 1
    assert rstore.prune_runs(keep=2) == 4  # 3 oks, 1 error
    assert rstore.prune_runs(keep=2) == 0  # idempotent


def test_age_limits_keep_errors_longer(rstore: JobStore, clock: FakeClock) -> None:
    a = job(rstore, "a")
    b = job(rstore, "b")
    for j in (a, b):
        add_runs(
            rstore,
            j,
            [
                (T0 - timedelta(days=100), "ok"),
                (T0 - timedelta(days=100, minutes=1), "failed"),
                (T0 - timedelta(days=45), "ok"),
                (T0 - timedelta(days=45, minutes=1), "lost"),
                (T0 - timedelta(days=45, minutes=2), "skipped"),
                (T0 - timedelta(days=1), "ok"),
                (T0 - timedelta(days=1, minutes=1), "aborted"),
                (T0 - timedelta(days=200), "running"),
            ],
        )
    # only b, by job id; counts off
    assert rstore.prune_runs(keep=None, keep_days=30, keep_error_days=90, job_id=b.id) == 4
    assert [o for _, o in outcomes(rstore, b)] == ["running", "lost", "aborted", "ok"]
    assert len(outcomes(rstore, a)) == 8
    # error days shorter than ok days: errors are still kept as long as ok runs
    assert rstore.prune_runs(keep=None, keep_days=60, keep_error_days=10, dry_run=True) == 2
    # the clock moves: a's 45-day-old ok run and skipped row are 61 days old now
    clock.advance(16 * 86_400)
    assert rstore.prune_runs(keep=None, keep_days=60, keep_error_days=10, job_id=a.id) == 5
    assert [o for _, o in outcomes(rstore, a)] == ["running", "aborted", "ok"]
    # no age limit: nothing goes by age
    assert rstore.prune_runs(keep=None, keep_days=None) == 0


def test_batches_are_bounded(rstore: JobStore) -> None:
    a = job(rstore, "a")
    add_runs(rstore, a, [(T0 - timedelta(days=40, seconds=i), "ok") for i in range(53)])
    assert rstore.prune_runs(keep=None, keep_days=30, batch=10, max_batches=2) == 20
    assert count_runs(rstore) == 33
    assert rstore.prune_runs(keep=None, keep_days=30, batch=10) == 33
    assert count_runs(rstore) == 0


def test_bad_retention_values_are_refused(rstore: JobStore) -> None:
    job(rstore, "a")
    before = count_runs(rstore)
    bad: list[dict[str, object]] = [
        {"keep": -1},
        {"keep": True},
        {"keep": 2.5},
        {"keep": "10"},
        {"keep_days": 0},
        {"keep_days": -1.0},
        {"keep_days": float("nan")},
        {"keep_days": float("inf")},
        {"keep_error_days": "30"},
        {"keep_days": 36_501},
        {"batch": 0},
        {"max_batches": 0},
        {"job_id": "1"},
    ]
    for kwargs in bad:
        with pytest.raises(InvalidInput):
            rstore.prune_runs(**kwargs)  # type: ignore[arg-type]
    assert count_runs(rstore) == before
    for kwargs in ({"keep_runs": -5}, {"keep_days": 0.0}, {"interval": 0}, {"batch": 10**6}):
        with pytest.raises(InvalidInput):
            Retention(**kwargs)  # type: ignore[arg-type]
    assert Retention().error_days == 90 and Retention(keep_days=120).error_days == 120
    assert Retention(keep_days=None).error_days is None


# ---------------------------------------------------------------------- the runners prune


def test_runner_housekeeping_prunes_and_spares_running_rows(db_url: str) -> None:
    store = open_store(db_url)
    try:
        now = utcnow()
        a = job(store, "a")
        store.disable("a")  # nothing of its own runs: the test owns its run log
        b = job(store, "b")
        store.disable("b")
        add_runs(store, a, [(now - timedelta(days=40, minutes=i), "ok") for i in range(30)])
        add_runs(
            store,
            a,
            [(now - timedelta(days=40, minutes=i, seconds=30), "failed") for i in range(3)],
        )
        add_runs(store, a, [(now - timedelta(minutes=i), "ok") for i in range(1, 13)])
        # runner None: no reaper takes this for a dead runner's run
        add_runs(store, b, [(now - timedelta(days=400), "running")], runner=None)
        pool = RunnerPool(
            store,
            threads=1,
            poll=0.2,
            retention=Retention(
                keep_runs=10, keep_days=30, keep_error_days=90, interval=0.3, batch=7
            ),
        )
        pool.start()
        try:
            assert wait_for(lambda: pool.pruned >= 32, 20, interval=0.1), pool.pruned
        finally:
            pool.stop(grace=0)
        left = outcomes(store, a)
        assert [o for _, o in left].count("ok") == 10  # 30 by age, 2 by count
        assert [o for _, o in left].count("failed") == 3  # 40 days: errors stay 90
        assert [o for _, o in outcomes(store, b)] == ["running"]
        assert pool.pruned == 32
    finally:
        store.close()


def test_store_retention_is_the_pools_default(sqlite_url: str) -> None:
    store = open_store(sqlite_url)
    try:
        assert RunnerPool(store).retention == Retention()
        store.retention = Retention(keep_runs=3)
        assert RunnerPool(store).retention.keep_runs == 3
        assert RunnerPool(store, retention=Retention(keep_runs=7)).retention.keep_runs == 7
    finally:
        store.close()


@pytest.mark.mariadb
def test_one_pruner_at_a_time_on_mariadb(mariadb_url: str) -> None:
    store = open_store(mariadb_url)
    try:
        a = job(store, "a")
        add_runs(store, a, [(utcnow() - timedelta(days=40, minutes=i), "ok") for i in range(5)])
        db = str(make_url(mariadb_url).database)
        other = admin_connection(db)
        with other.cursor() as cur:
            cur.execute("SELECT GET_LOCK(%s, 0)", (prune_lock_name(store.lock_key(), db),))
            assert cur.fetchone()[0] == 1  # type: ignore[index]
        assert store.prune_runs(keep=None, keep_days=30) == 0  # a runner skips its pass
        with pytest.raises(JobtuiError, match="another process"):
            store.prune_runs(keep=None, keep_days=30, wait=0.3)
        assert count_runs(store) == 5
        other.close()  # the lock goes with its connection (the server notices a moment later)
        deadline = time.monotonic() + 10
        while (pruned := store.prune_runs(keep=None, keep_days=30)) == 0:
            if time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert pruned == 5
    finally:
        store.close()


# ---------------------------------------------------------------------- jobtui prune


def test_cli_prune(db_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    store = open_store(db_url)
    try:
        now = utcnow()
        a = job(store, "a")
        add_runs(store, a, [(now - timedelta(days=40, minutes=i), "ok") for i in range(4)])
        add_runs(
            store, a, [(now - timedelta(days=40, minutes=i, seconds=30), "lost") for i in range(2)]
        )
        add_runs(store, a, [(now - timedelta(minutes=i), "ok") for i in range(1, 6)])
    finally:
        store.close()
    assert main(["--db", db_url, "prune", "--dry-run", "--keep-runs", "3"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("would delete 6 run(s)") and "3 per job" in out
    assert main(["--db", db_url, "prune", "--json", "--keep-runs", "off"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data == {
        "deleted": 4,
        "dry_run": False,
        "keep_runs": None,
        "keep_days": 30.0,
        "keep_error_days": 90.0,
    }
    assert main(["--db", db_url, "prune", "--keep-runs", "1", "--keep-error-days", "off"]) == 0
    assert capsys.readouterr().out.startswith("deleted 5 run(s)")
    for bad in (
        ["--keep-runs", "-1"],
        ["--keep-days", "0"],
        ["--keep-days", "x"],
        ["--keep-error-days", "nan"],
    ):
        assert main(["--db", db_url, "prune", *bad]) == 2
        err = capsys.readouterr().err
        assert err.startswith("jobtui: error: argument") and err.count("\n") == 1
    store = open_store(db_url)
    try:
        assert sorted(r.outcome for r in store.runs("a")) == [Outcome.LOST, Outcome.OK]
    finally:
        store.close()


def test_keep_options_reach_the_worker_console_and_demo() -> None:
    from jobtui.cli.options import retention_of
    from jobtui.cli.parser import parse_args

    for verb in (["worker"], ["console"], ["demo"], ["prune"]):
        args = parse_args([*verb, "--keep-runs", "5", "--keep-days", "2.5"])
        assert retention_of(args) == Retention(keep_runs=5, keep_days=2.5, keep_error_days=90.0)
        assert retention_of(parse_args(verb)) == Retention()
        args = parse_args([*verb, "--keep-runs", "off", "--keep-error-days", "off"])
        assert retention_of(args) == Retention(keep_runs=None, keep_days=30.0, keep_error_days=None)


@pytest.mark.slow
def test_a_worker_process_prunes(sqlite_url: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from support.procs import Worker

    store = open_store(sqlite_url)
    try:
        a = job(store, "a")
        store.disable("a")
        add_runs(store, a, [(utcnow() - timedelta(minutes=i), "ok") for i in range(1, 21)])
        w = Worker(
            sqlite_url,
            tmp_path,
            name="pruner",
            threads=1,
            poll=0.5,
            extra=["--keep-runs", "4", "--prune-interval", "0.5"],
        )
        try:
            assert wait_for(lambda: count_runs(store) == 4, 30, interval=0.2), w.log()
            assert w.terminate() == 0
        finally:
            w.cleanup()
        assert [o for _, o in outcomes(store, a)] == ["ok"] * 4
    finally:
        store.close()
