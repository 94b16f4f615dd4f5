"""Security of the runner between owners (issue #11): no session state crosses from one
owner's run to another's (reproduction 10), a removed job's row outlives its run
(reproduction 9), and no owner can starve the others of a pool's threads.

The jobs are submitted through the store of the owner's own account (real MariaDB
accounts from tests/support/accounts.py where owners matter); the pools run as root.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import timedelta

import pytest
from sqlalchemy import text
from support.accounts import Server, grant_execute, root_sql
from support.pools import every, runs_of, start_pool
from support.procs import wait_for

from jobtui.cli import main
from jobtui.core import actions
from jobtui.core.backends.mysql.driver import reset_mysql_session
from jobtui.core.errors import InvalidInput
from jobtui.core.model import Outcome, What
from jobtui.core.runner.executor import dbapi_connection
from jobtui.core.runner.owners import owner_cap
from jobtui.core.runner.pool import RunnerPool
from jobtui.core.schedules import make_schedule
from jobtui.core.store import JobStore, open_store
from jobtui.core.timeutil import utcnow

POLL = 0.2


@pytest.fixture
def pools() -> Iterator[list[RunnerPool]]:
    started: list[RunnerPool] = []
    yield started
    for pool in started:
        pool.stop(grace=0)


# ---------------------------------------------------------------------- repro 10: sessions


@pytest.mark.mariadb
def test_reset_session_restores_what_connecting_set_up(mariadb_url: str) -> None:
    """COM_RESET_CONNECTION, then the engine's own set-up again: UTC, autocommit off,
    utf8mb4, no user variables, no named locks, the global sql_mode."""
    store = open_store(mariadb_url)
    try:
        with store.engine.connect() as conn:
            fresh = conn.execute(
                text("SELECT @@time_zone, @@autocommit, @@character_set_client, @@sql_mode")
            ).one()
            conn.rollback()
            conn.execute(
                text(
                    "SET SESSION time_zone = '+05:00', @leak = 'x', SESSION sql_mode = '', "
                    "NAMES latin1, autocommit = 1"
                )
            )
            conn.execute(text("SELECT GET_LOCK('jt-reset-probe', 0)"))
            raw = dbapi_connection(conn)
            reset_mysql_session(raw)
            after = conn.execute(
                text(
                    "SELECT @@time_zone, @@autocommit, @@character_set_client, @@sql_mode, "
                    "@leak, IS_USED_LOCK('jt-reset-probe')"
                )
            ).one()
            conn.rollback()
        assert tuple(after[:4]) == tuple(fresh) == ("+00:00", 0, "utf8mb4", fresh[3])
        assert after[4] is None and after[5] is None
        assert raw.get_autocommit() is False
    finally:
        store.close()


@pytest.mark.mariadb
def test_one_owners_session_settings_never_reach_another_owners_run(
    server: Server, pools: list[RunnerPool]
) -> None:
    """Repro 10: alice's procedure sets the session's time zone, sql_mode and a user
    variable and takes a named lock; bob's jobs on the same (one-thread) pool see none
    of it, and his `NOW() + INTERVAL 1 SECOND` stays one second ahead, not five hours."""
    db = server.database
    root_sql(
        server,
        "CREATE TABLE probe (tz VARCHAR(64), leak VARCHAR(64), mode TEXT, lck INT, at DATETIME(6))",
        "CREATE PROCEDURE dirty() BEGIN SET SESSION time_zone = '+05:00'; "
        "SET @leak = 'alice'; SET SESSION sql_mode = ''; DO GET_LOCK('jt-alice-lock', 0); END",
        "CREATE PROCEDURE peek() BEGIN INSERT INTO probe VALUES (@@session.time_zone, @leak, "
        "@@session.sql_mode, IS_USED_LOCK('jt-alice-lock'), NOW(6)); END",
    )
    grant_execute(server, "dirty", "alice")
    grant_execute(server, "peek", "bob")
    alice, bob, root = server.store("alice"), server.store("bob"), open_store(server.url)
    try:
        with root.engine.connect() as conn:
            global_mode = conn.execute(text("SELECT @@GLOBAL.sql_mode")).scalar()
            conn.rollback()
        # short jobs, all due together: without owner batches they share one batch
        for i in range(3):
            alice.submit(f"dirty{i}", What("call", f"{db}.dirty"), every(0.2))
            bob.submit(f"peek{i}", What("call", f"{db}.peek"), every(0.2))
        bob.submit(
            "soon",
            What("call", f"{db}.peek"),
            make_schedule("expr", expr="NOW() + INTERVAL 1 SECOND"),
        )
        start_pool(pools, root, threads=1)
        assert wait_for(
            lambda: len([r for r in runs_of(bob, "soon") if r.outcome is Outcome.OK]) >= 3, 30
        )
        assert wait_for(
            lambda: len([r for r in runs_of(alice, "dirty0") if r.outcome is Outcome.OK]) >= 5, 30
        )
        pools[0].stop()
        for name in ("dirty0", "peek0", "soon"):
            store = alice if name.startswith("dirty") else bob
            bad = [
                r for r in runs_of(store, name) if r.outcome not in (Outcome.OK, Outcome.SKIPPED)
            ]
            assert not bad, [(r.outcome, r.error) for r in bad]
        soon = bob.get("soon")
        assert soon.next_run is not None
        assert soon.next_run - utcnow() < timedelta(minutes=1), soon.next_run
        with root.engine.connect() as conn:
            rows = conn.execute(text("SELECT tz, leak, mode, lck FROM probe")).all()
            conn.rollback()
        assert len(rows) >= 10
        assert {tuple(r) for r in rows} == {("+00:00", None, global_mode, None)}
    finally:
        for s in (alice, bob, root):
            s.close()


# ---------------------------------------------------------------------- repro 9: remove


def long_what(store: JobStore) -> What:
    """A statement that runs far longer than any test waits (and can be interrupted)."""
    if store.backend.name == "sqlite":
        return What(
            "sql",
            "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 10000000000) "
            "SELECT count(*) FROM c",
        )
    with store.write() as conn:
        conn.execute(text("CREATE PROCEDURE slow_proc() BEGIN DO SLEEP(30); END"))
    db = store.engine.url.database
    return What("call", f"{db}.slow_proc")


def quick_what(store: JobStore) -> What:
    return What("sql", "SELECT 1")


def test_remove_of_a_running_job_keeps_its_row_until_the_run_has_ended(
    store: JobStore, pools: list[RunnerPool], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Repro 9: remove aborts the run; the row stays (remove_requested) and the name taken
    until the runner records the run's end; the same name submitted afterwards is a new
    job whose runs are its own."""
    store.submit("victim", long_what(store), make_schedule("once"))
    old = store.get("victim")
    pool = start_pool(pools, store)
    assert wait_for(lambda: store.get("victim").running, 20)
    # The runner does not notice the abort for now: the removal stays pending.
    monkeypatch.setattr(pool, "_check_aborts", lambda: None)
    pending = store.remove("victim", wait=0.3)
    assert pending.remove_requested and pending.id == old.id
    current = store.get("victim")
    assert current.running and current.remove_requested and current.abort_requested
    assert current.to_dict()["remove_requested"] is True
    with pytest.raises(InvalidInput, match="is being removed"):
        store.submit("victim", quick_what(store), make_schedule("once"))
    with pytest.raises(InvalidInput, match="is being removed"):
        store.run_now("victim")
    with pytest.raises(InvalidInput, match="is being removed"):
        store.change("victim", description="x")
    monkeypatch.undo()  # the monitor sees the request: abort, record, delete
    assert wait_for(lambda: store.get_by_id(old.id) is None, 20)
    (run,) = runs_of(store, "victim")
    assert run.job_id == old.id and run.outcome is Outcome.ABORTED
    assert run.error == "aborted: the job was removed while it ran"
    # The name is free now: a new job, run on its own.
    fresh = store.submit("victim", quick_what(store), make_schedule("once"))
    assert fresh.id != old.id and not fresh.remove_requested
    assert wait_for(lambda: store.get("victim").phase == "FINISHED", 20)
    runs = runs_of(store, "victim")
    assert sorted((r.job_id, r.outcome) for r in runs) == sorted(
        [(old.id, Outcome.ABORTED), (fresh.id, Outcome.OK)]
    )


def test_cli_remove_waits_for_the_aborted_run_and_reports_pending(
    store: JobStore,
    pools: list[RunnerPool],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`jobtui remove` of a running job: removed once its run has ended (exit 0); a run
    that outlives the wait: "removal ... is pending" (exit 0), the row kept."""
    store.submit("long1", long_what(store), make_schedule("once"))
    store.submit(
        "long2",
        long_what(store) if store.backend.name == "sqlite" else store.get("long1").what,
        make_schedule("once"),
    )
    pool = start_pool(pools, store, owner_share=1.0)  # both at once: one owner, two threads
    assert wait_for(lambda: store.get("long1").running and store.get("long2").running, 20)
    assert main(["--db", store.url, "remove", "long1"]) == 0
    out = capsys.readouterr().out
    assert out.strip() == "removed job long1 (its run log is kept)"
    assert [r.outcome for r in runs_of(store, "long1")] == [Outcome.ABORTED]
    monkeypatch.setattr(pool, "_check_aborts", lambda: None)
    monkeypatch.setattr(JobStore, "remove", _short_wait(JobStore.remove))
    assert main(["--db", store.url, "remove", "long2"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("removal of job long2 is pending: its run is being aborted"), out
    assert store.get("long2").remove_requested
    monkeypatch.undo()
    assert wait_for(lambda: not [j for j in store.list_jobs() if j.name == "long2"], 20)


def _short_wait(remove):  # type: ignore[no-untyped-def]
    def wrapper(self, name, *, owner=None, wait=10.0):  # type: ignore[no-untyped-def]
        return remove(self, name, owner=owner, wait=0.3)

    return wrapper


# ---------------------------------------------------------------------- starvation


def test_owner_share_of_threads() -> None:
    assert [owner_cap(n, 0.5) for n in (1, 2, 3, 4, 10)] == [1, 1, 1, 2, 5]
    assert owner_cap(4, 1.0) == 4 and owner_cap(4, 0.01) == 1 and owner_cap(3, 2 / 3) == 2
    for bad in (0, -0.5, 1.5, float("nan")):
        with pytest.raises(ValueError, match="owner_share"):
            RunnerPool(None, owner_share=bad)  # type: ignore[arg-type]


def test_worker_owner_share_option_is_validated(
    sqlite_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    for bad in ("0", "1.5", "-1", "half", "nan", ""):
        assert main(["--db", sqlite_url, "worker", "--owner-share", bad]) == 2
        err = capsys.readouterr().err
        assert "invalid --owner-share" in err and "above 0 and at most 1" in err, err


def _check_on_time(bob: JobStore, alice: JobStore, cap: int, seconds: float) -> None:
    """Over ``seconds``: alice never runs more than ``cap`` jobs at once, and bob's
    every-1s job runs each slot on time."""
    deadline = time.monotonic() + seconds
    most = 0
    while time.monotonic() < deadline:
        most = max(most, sum(1 for j in alice.list_jobs() if j.running))
        time.sleep(0.1)
    assert 1 <= most <= cap
    runs = [r for r in runs_of(bob, "tick") if r.outcome is Outcome.OK]
    assert len(runs) >= seconds - 2, [(r.scheduled_for, r.started) for r in runs]
    for r in runs:
        assert (r.started - r.scheduled_for).total_seconds() < 0.8, r
    assert not [r for r in runs_of(bob, "tick") if r.outcome is Outcome.SKIPPED]


@pytest.mark.mariadb
@pytest.mark.parametrize("threads", [2, 4])
def test_endless_jobs_of_one_owner_leave_the_others_on_time(
    server: Server, pools: list[RunnerPool], threads: int
) -> None:
    db = server.database
    root_sql(
        server,
        "CREATE PROCEDURE endless() BEGIN DO SLEEP(600); END",
        "CREATE PROCEDURE noop() BEGIN END",
    )
    grant_execute(server, "endless", "alice")
    grant_execute(server, "noop", "bob")
    alice, bob, root = server.store("alice"), server.store("bob"), open_store(server.url)
    try:
        for i in range(4):
            alice.submit(f"endless{i}", What("call", f"{db}.endless"), every(1))
        bob.submit("tick", What("call", f"{db}.noop"), every(1))
        pool = start_pool(pools, root, threads=threads)
        assert pool.owner_cap == owner_cap(threads, 0.5)
        assert wait_for(lambda: any(j.running for j in alice.list_jobs()), 10)
        _check_on_time(bob, alice, pool.owner_cap, 6)
    finally:
        for p in pools:
            p.stop(grace=0)
        for s in (alice, bob, root):
            s.close()


def test_endless_actions_of_one_owner_leave_the_others_on_time_sqlite(
    sqlite_url: str, pools: list[RunnerPool]
) -> None:
    """SQLite has no accounts: two stores whose owners are set as a login would set them."""

    def endless(ctx: actions.ActionContext) -> None:
        ctx.abort_event.wait(600)
        if ctx.abort_event.is_set():
            raise actions.ActionAborted("aborted")

    actions.register("test.endless", endless)
    alice, bob = open_store(sqlite_url), open_store(sqlite_url)
    alice._owner, bob._owner = "alice", "bob"
    try:
        for i in range(4):
            alice.submit(f"endless{i}", What("action", "test.endless"), every(1))
        bob.submit("tick", What("sql", "SELECT 1"), every(1))
        pool = start_pool(pools, alice, threads=2)
        assert wait_for(lambda: any(j.running for j in alice.list_jobs()), 10)
        assert [j.owner for j in alice.list_jobs()] == ["alice"] * 4
        _check_on_time(bob, alice, pool.owner_cap, 6)
    finally:
        for p in pools:
            p.stop(grace=0)
        alice.close()
        bob.close()


def test_a_reaped_run_of_a_removed_job_frees_its_name(
    store: JobStore, pools: list[RunnerPool]
) -> None:
    """The runner of a job removed while it ran died: the reaper that releases the job
    deletes the row instead (its run is over), and the name is free."""
    job = store.submit("orphan", quick_what(store), every(3600))
    with store.write() as conn:
        conn.execute(
            text(
                "UPDATE jobtui_job SET running = 1, runner_id = 'gone-runner', "
                "remove_requested = 1, abort_requested = 1 WHERE id = :id"
            ),
            {"id": job.id},
        )
    with pytest.raises(InvalidInput, match="is being removed"):
        store.submit("orphan", quick_what(store), every(3600))
    start_pool(pools, store, heartbeat_timeout=1.0)
    assert wait_for(lambda: store.get_by_id(job.id) is None, 20)
    assert store.submit("orphan", quick_what(store), every(3600)).id != job.id


def test_owner_queue_passes_other_owners_while_one_holds_its_share() -> None:
    from jobtui.core.runner.owners import OwnerQueue as _OwnerQueue

    q = _OwnerQueue(cap=1)
    for owner, jid in (("alice", 1), ("alice", 2), ("bob", 3)):
        q.put(("run", [jid]), owner)
    assert q.get() == (("run", [1]), "alice", False)
    assert q.runnable() == 1  # alice's second waits; bob's passes
    assert q.get() == (("run", [3]), "bob", False)
    q.put(None)
    assert q.get() == (None, None, False)  # a stop passes too
    q.done("alice")
    assert q.get() == (("run", [2]), "alice", False)


def test_owner_queue_lets_batches_of_short_jobs_take_all_threads_but_one() -> None:
    """An owner's long items hold at most ``cap`` threads; its batches of short jobs may
    take more, up to ``short_cap`` items in all, so one thread stays for the others."""
    from jobtui.core.runner.owners import OwnerQueue as _OwnerQueue

    q = _OwnerQueue(cap=2, short_cap=3)
    q.put(("run", [1]), "alice")
    q.put(("run", [2]), "alice")
    q.put(("run", [3]), "alice")  # long: past alice's share of 2
    q.put(("run", [4, 5]), "alice", short=True)
    q.put(("run", [6, 7]), "alice", short=True)  # past the 3 items alice may hold
    q.put(("run", [8]), "bob")
    taken = [q.get() for _ in range(4)]
    assert taken == [
        (("run", [1]), "alice", False),
        (("run", [2]), "alice", False),
        (("run", [4, 5]), "alice", True),
        (("run", [8]), "bob", False),
    ]
    assert q.runnable() == 0  # alice holds 3: neither her long item nor her batch
    q.done("alice", True)  # the batch ended: another item of hers, the first in line
    assert q.runnable() == 1
    assert q.get() == (("run", [6, 7]), "alice", True)  # her long one still waits (2 long)
    q.done("alice", False)
    assert q.get() == (("run", [3]), "alice", False)
