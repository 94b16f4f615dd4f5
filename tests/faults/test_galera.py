"""jobtui on a 3-node MariaDB Galera cluster (issue 25, docs/cluster.md).

Real nodes on loopback (tests/support/galera_cluster.py), real ``jobtui worker`` processes,
a ledger table the jobs write to: exclusivity is checked on the run log and on
what the jobs really did.
"""

from __future__ import annotations

import itertools
import secrets
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

import pymysql
import pytest
from sqlalchemy import text
from support.galera_cluster import GaleraDB
from support.procs import (
    check_exclusive,
    create_ledger_proc,
    ledger_counts,
    spawn,
    wait_for,
    worker_list,
)

from jobtui.core import accounts, events
from jobtui.core.backends.mysql.galera import GaleraBackend
from jobtui.core.model import Outcome, What
from jobtui.core.schedules import make_schedule
from jobtui.core.store import JobStore, open_store
from jobtui.core.timeutil import utcnow

pytestmark = [pytest.mark.galera, pytest.mark.slow]


@pytest.fixture
def workers() -> Iterator[list]:  # type: ignore[type-arg]
    with worker_list() as started:
        yield started


def _connect(gdb: GaleraDB, n: int):  # type: ignore[no-untyped-def]
    def connect(database: str) -> pymysql.Connection:  # type: ignore[type-arg]
        return gdb.cluster.admin(n, database)  # type: ignore[no-any-return]

    return connect


def _ledger(gdb: GaleraDB) -> None:
    create_ledger_proc(gdb.urls[0], connect=_connect(gdb, 1))
    conn = gdb.cluster.admin(1, gdb.name)
    with conn.cursor() as cur:
        # Commits a tick every 0.2 s: what a run did stays, even when it is killed.
        cur.execute(
            "CREATE PROCEDURE tick_ins(IN j VARCHAR(64), IN s DOUBLE) "
            "BEGIN DECLARE t_end DATETIME(6) DEFAULT NOW(6) + INTERVAL s SECOND; "
            "WHILE NOW(6) < t_end DO INSERT INTO ledger VALUES (j, NOW(6), @@port * 1000000 + CONNECTION_ID()); "
            "COMMIT; DO SLEEP(0.2); END WHILE; END"
        )
    conn.close()


def _ledger_rows(store: JobStore, job: str) -> list[tuple[object, int]]:
    with store.read() as conn:
        return [
            (r[0], int(r[1]))
            for r in conn.execute(
                text("SELECT t, conn FROM ledger WHERE job = :j ORDER BY t"), {"j": job}
            )
        ]


def test_a_cluster_is_detected_and_no_named_lock_is_used(galera_db: GaleraDB) -> None:
    store = open_store(galera_db.urls[1])
    try:
        assert isinstance(store.backend, GaleraBackend)
        assert store.backend.cluster and not store.backend.named_locks
        with store.engine.connect() as conn:
            _cid, node = store.backend.connection_node(conn)
        port = galera_db.cluster.port(2)
        assert node is not None and node.split("/")[0].endswith(f":{port}"), node
    finally:
        store.close()


def test_workers_on_every_node_short_and_long_jobs(
    galera_db: GaleraDB,
    workers: list,
    tmp_path: Path,  # type: ignore[type-arg]
) -> None:
    """One worker per node: no slot twice, no overlap, every ok run executed once."""
    _ledger(galera_db)
    store = open_store(galera_db.urls[0])
    db = galera_db.name
    start = utcnow() + timedelta(seconds=5)
    duration = 12
    finish = start + timedelta(seconds=duration - 0.5)
    for i in range(12):
        store.submit(
            f"s{i:02d}",
            What("call", f"{db}.ledger_ins", (f"s{i:02d}",)),
            make_schedule("every", every=1, start=start, finish=finish),
        )
    for i in range(3):  # long: each run outlasts its interval
        store.submit(
            f"l{i}",
            What("call", f"{db}.slow_ins", (f"l{i}", "1.5")),
            make_schedule("every", every=1, start=start, finish=finish),
        )
    for n in range(3):
        spawn(workers, galera_db.urls[n], tmp_path, f"n{n + 1}", threads=3, poll=0.5)
    assert wait_for(lambda: all(w.started() for w in workers), 30)
    time.sleep(max(0.0, (finish - utcnow()).total_seconds()) + 4)
    for w in workers:
        assert w.terminate() == 0, w.log()
    by_job = check_exclusive(store)  # zero duplicate slots, zero overlaps
    ledger = ledger_counts(store)
    total_ok = 0
    for name, runs in by_job.items():
        ok = [r for r in runs if r.outcome is Outcome.OK]
        total_ok += len(ok)
        assert ledger[name] == len(ok), name  # every ok run executed exactly once
        assert not [r for r in runs if r.outcome is Outcome.FAILED], runs
    assert total_ok >= 0.8 * 12 * duration, total_ok  # 2 cores, 3 nodes, 3 workers
    runners = {r.runner for rs in by_job.values() for r in rs}
    assert len(runners) >= 2  # the work really was shared over the nodes
    for w in workers:
        assert "Traceback" not in w.log(), w.log()
    store.close()


def test_sigkill_of_a_worker_mid_run_kills_its_statement_before_the_job_runs_again(
    galera_db: GaleraDB,
    workers: list,
    tmp_path: Path,  # type: ignore[type-arg]
) -> None:
    _ledger(galera_db)
    store = open_store(galera_db.urls[0])
    db = galera_db.name
    start = utcnow() + timedelta(seconds=4)
    store.submit(
        "slow",
        What("call", f"{db}.tick_ins", ("slow", "12")),
        make_schedule("every", every=6, start=start),
    )
    timeout = 4.0
    victim = spawn(
        workers, galera_db.urls[2], tmp_path, "v3", threads=1, poll=0.5, heartbeat_timeout=timeout
    )
    assert wait_for(victim.started, 30)
    assert wait_for(lambda: store.get("slow").running, 20)
    heir = spawn(
        workers, galera_db.urls[1], tmp_path, "h2", threads=1, poll=0.5, heartbeat_timeout=timeout
    )
    assert wait_for(heir.started, 30)
    time.sleep(1.5)
    victim.kill9()
    heir_id = heir.runner_id()

    def rerun() -> bool:
        return any(r.runner == heir_id and r.started for r in store.runs("slow", limit=10))

    assert wait_for(rerun, timeout + 25, interval=0.2), store.runs("slow", limit=10)
    time.sleep(1.5)
    assert heir.terminate() == 0, heir.log()
    runs = store.runs("slow", limit=10)
    lost = [r for r in runs if r.outcome is Outcome.LOST]
    assert len(lost) == 1 and lost[0].finished is not None, runs
    check_exclusive(store)
    # What the runs really did: the orphan (killed on node 3) ticked its last before the
    # heir's run ticked its first. Two connections, never interleaved.
    rows = _ledger_rows(store, "slow")
    conns = list(dict.fromkeys(c for _t, c in rows))
    assert len(conns) == 2, rows
    orphan_last = max(t for t, c in rows if c == conns[0])
    heir_first = min(t for t, c in rows if c == conns[1])
    assert orphan_last < heir_first, rows  # type: ignore[operator]
    assert "killing it" in heir.log(), heir.log()
    store.close()


def test_sigkill_of_a_node_mid_run_nothing_twice_nothing_lost_and_it_rejoins(
    galera_db: GaleraDB,
    workers: list,
    tmp_path: Path,  # type: ignore[type-arg]
) -> None:
    """Node 3 dies with a run in flight on it: its job stays held while node 3 cannot
    be asked, nobody runs it meanwhile; node 3 rejoins, its worker carries on."""
    _ledger(galera_db)
    cluster = galera_db.cluster
    store = open_store(galera_db.urls[0])
    db = galera_db.name
    start = utcnow() + timedelta(seconds=4)
    store.submit(
        "long",
        What("call", f"{db}.tick_ins", ("long", "10")),
        make_schedule("every", every=5, start=start),
    )
    for i in range(4):
        store.submit(
            f"q{i}",
            What("call", f"{db}.ledger_ins", (f"q{i}",)),
            make_schedule("every", every=1, start=start),
        )
    timeout = 4.0
    v3 = spawn(
        workers, galera_db.urls[2], tmp_path, "v3", threads=2, poll=0.5, heartbeat_timeout=timeout
    )
    assert wait_for(v3.started, 30)
    assert wait_for(lambda: store.get("long").running, 20)
    w1 = spawn(
        workers, galera_db.urls[0], tmp_path, "w1", threads=2, poll=0.5, heartbeat_timeout=timeout
    )
    assert wait_for(w1.started, 30)
    time.sleep(1.0)
    v3_id = v3.runner_id()
    assert store.get("long").runner_id == v3_id
    cluster.kill_node(3)
    killed = utcnow()
    try:
        time.sleep(timeout + 6)  # node 3's worker silent well past the timeout
        # Its job stays held: node 3 cannot be asked whether the statement still runs.
        assert store.get("long").running
        assert store.get("long").runner_id == v3_id
    finally:
        cluster.start_node(3)
    rejoined = utcnow()

    def v3_works_again() -> bool:
        return any(
            r.runner == v3_id and r.started is not None and r.started > rejoined
            for r in store.runs(limit=500, all_owners=True)
        )

    assert wait_for(v3_works_again, 40, interval=0.5), v3.log()
    assert wait_for(
        lambda: not store.get("long").running or store.get("long").this_run > killed, 30
    )  # type: ignore[operator]
    for w in workers:
        assert w.terminate() == 0, w.log()
    runs = check_exclusive(store)
    long_runs = runs["long"]
    assert any(r.started and r.started > killed for r in long_runs), long_runs  # not lost
    rows = _ledger_rows(store, "long")
    by_conn: dict[int, list[object]] = {}
    for t, c in rows:
        by_conn.setdefault(c, []).append(t)
    spans = sorted((min(ts), max(ts)) for ts in by_conn.values())
    for (_a0, a1), (b0, _b1) in itertools.pairwise(spans):
        assert a1 < b0, spans  # the runs' real work never interleaved
    store.close()


def test_run_name_on_two_nodes_at_once_admits_one(galera_db: GaleraDB, tmp_path: Path) -> None:
    import subprocess

    from support.procs import jobtui_command

    _ledger(galera_db)
    store = open_store(galera_db.urls[0])
    db = galera_db.name
    store.submit(
        "once",
        What("call", f"{db}.slow_ins", ("once", "3")),
        make_schedule("once", start=utcnow() + timedelta(seconds=1)),
    )
    procs = [
        subprocess.Popen(
            [*jobtui_command(), "--db", galera_db.urls[n], "run", "once"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in (0, 1)
    ]
    results = [p.communicate(timeout=60) for p in procs]
    codes = [p.returncode for p in procs]
    assert sorted(codes) == [0, 2], (codes, results)  # 2: held by the other runner
    assert ledger_counts(store)["once"] == 1
    check_exclusive(store)
    store.close()


def test_call_run_on_two_nodes_at_once_admits_one(galera_db: GaleraDB) -> None:
    _ledger(galera_db)
    store = open_store(galera_db.urls[0])
    db = galera_db.name
    job = store.submit(
        "sqlrun",
        What("call", f"{db}.slow_ins", ("sqlrun", "3")),
        make_schedule("every", every=3600, start=utcnow() + timedelta(hours=1)),
    )
    outcomes: list[object] = [None, None]

    def call(i: int) -> None:
        conn = galera_db.cluster.admin(i + 1, db)
        try:
            with conn.cursor() as cur:
                cur.execute("CALL run(%s)", (job.id,))
            outcomes[i] = "ok"
        except pymysql.MySQLError as exc:
            outcomes[i] = exc
        finally:
            conn.close()

    threads = [threading.Thread(target=call, args=(i,)) for i in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert outcomes.count("ok") == 1, outcomes
    assert ledger_counts(store)["sqlrun"] == 1
    store.close()


def test_a_call_run_session_on_another_node_is_not_reaped_while_it_runs(
    galera_db: GaleraDB,
    workers: list,
    tmp_path: Path,  # type: ignore[type-arg]
) -> None:
    _ledger(galera_db)
    store = open_store(galera_db.urls[0])
    db = galera_db.name
    job = store.submit(
        "sess",
        What("call", f"{db}.slow_ins", ("sess", "8")),
        make_schedule("every", every=3, start=utcnow() + timedelta(seconds=2)),
        disabled=True,
    )
    w = spawn(
        workers, galera_db.urls[1], tmp_path, "r2", threads=1, poll=0.5, heartbeat_timeout=2.0
    )
    assert wait_for(w.started, 30)
    conn = galera_db.cluster.admin(1, db)
    with conn.cursor() as cur:
        cur.execute("CALL run(%s)", (job.id,))  # 8 s, while the worker on node 2 reaps
    conn.close()
    runs = store.runs("sess", limit=10)
    assert [r.outcome for r in runs] == [Outcome.OK], runs
    assert ledger_counts(store)["sess"] == 1
    assert w.terminate() == 0, w.log()
    store.close()


def test_an_event_made_on_another_node_can_be_enabled_here(galera_db: GaleraDB) -> None:
    db = galera_db.name
    conn = galera_db.cluster.admin(1, db)
    with conn.cursor() as cur:
        cur.execute("CREATE EVENT ev1 ON SCHEDULE EVERY 1 HOUR DISABLE DO DO 1")
        cur.execute("ALTER EVENT ev1 ENABLE")
    conn.close()
    store = open_store(galera_db.urls[1])
    try:
        full = f"{db}.ev1"
        assert wait_for(lambda: events.get_event(store, full).status == "SLAVESIDE_DISABLED", 5)
        assert events.set_enabled(store, full, True).status == "ENABLED"
    finally:
        store.close()
    conn = galera_db.cluster.admin(1, db)
    with conn.cursor() as cur:  # it moved: node 1 keeps a disabled copy
        cur.execute("SELECT status FROM information_schema.EVENTS WHERE EVENT_NAME = 'ev1'")
        assert cur.fetchone()[0] == "SLAVESIDE_DISABLED"
    conn.close()


@contextmanager
def _accounts(galera_db: GaleraDB) -> Iterator[dict[str, str]]:
    """An operator and a runner account made by `jobtui grant` on node 1; yields
    ``url(key, node index)``'s parts: {"op": user, "run": user, "op_pw": ..., ...}."""
    from support.accounts import _revoke_database_grants

    from jobtui.cli import main

    db = galera_db.name
    sfx = secrets.token_hex(3)
    names = {"op": f"jt_gop_{sfx}", "run": f"jt_grun_{sfx}"}
    pw = {k: f"pw-{secrets.token_hex(4)}" for k in names}
    conn = galera_db.cluster.admin(1, db)
    try:
        with conn.cursor() as cur:
            for k, name in names.items():
                cur.execute(f"CREATE USER '{name}'@'%%' IDENTIFIED BY %s", (pw[k],))
        root = galera_db.urls[0]
        assert main(["--db", root, "init"]) == 0
        assert main(["--db", root, "grant", names["op"], "--operator", "--apply"]) == 0
        assert main(["--db", root, "grant", names["run"], "--runner", "--apply"]) == 0
        yield {**names, **{f"{k}_pw": v for k, v in pw.items()}}
    finally:
        with conn.cursor() as cur:
            for name in names.values():
                cur.execute(f"DROP USER IF EXISTS '{name}'@'%'")
            _revoke_database_grants(cur, db)
            for kind in ("operator", "runner", "admin"):
                cur.execute(f"DROP ROLE IF EXISTS `{accounts.role_name(kind, db)}`")
        conn.close()


def _account_url(galera_db: GaleraDB, acc: dict[str, str], key: str, n: int) -> str:
    return galera_db.urls[n].replace("://root@", f"://{acc[key]}:{acc[key + '_pw']}@")


def test_an_operators_job_runs_as_its_owner_on_every_node(
    galera_db: GaleraDB,
    workers: list,
    tmp_path: Path,  # type: ignore[type-arg]
) -> None:
    """The wrapper made on node 1 runs on nodes 2 and 3 too: its definer's EXECUTE was
    granted explicitly (a GRANT replicates; the automatic grant does not)."""
    _ledger(galera_db)
    db = galera_db.name
    conn = galera_db.cluster.admin(1, db)
    try:
        with _accounts(galera_db) as acc:
            with conn.cursor() as cur:
                cur.execute(f"GRANT EXECUTE ON PROCEDURE `{db}`.`ledger_ins` TO '{acc['op']}'@'%'")
            op = open_store(_account_url(galera_db, acc, "op", 0))
            op.submit(
                "mine",
                What("call", f"{db}.ledger_ins", ("mine",)),
                make_schedule("every", every=3600, start=utcnow() + timedelta(hours=1)),
            )
            for n in range(3):
                url = _account_url(galera_db, acc, "run", n)
                w = spawn(workers, url, tmp_path, f"o{n + 1}", threads=1, poll=0.3)
                assert wait_for(w.started, 30), w.log()
                op.run_now("mine")
                wanted = n + 1

                def done(wanted: int = wanted) -> bool:
                    return len([r for r in op.runs("mine", limit=10) if r.finished]) >= wanted

                assert wait_for(done, 30), (op.runs("mine", limit=10), w.log())
                assert w.terminate() == 0, w.log()
            runs = op.runs("mine", limit=10)
            assert [r.outcome for r in runs] == [Outcome.OK] * 3, runs
            assert {r.owner for r in runs} == {f"{acc['op']}@%"}
            op.close()
            with conn.cursor() as cur:  # as root: the operator may not read the ledger
                cur.execute("SELECT COUNT(*) FROM ledger WHERE job = 'mine'")
                assert cur.fetchone()[0] == 3
    finally:
        conn.close()


def test_a_sealed_routine_is_not_retired_while_a_runner_on_another_node_holds_its_job(
    galera_db: GaleraDB,
) -> None:
    """Issues 23 and 25: ``jobtui_retire`` drops an owner's sealed routine only while no
    runner holds the job. GET_LOCK is node-local, so on a cluster the job row is the
    lock: a job claimed on node 2 (``running``, its lease) keeps its routine when its
    owner retires it on node 3, where no named lock is held; once the job is idle the
    routine goes on every node and the row's lease is cleared."""
    from jobtui.core.backends.mysql import routines

    db = galera_db.name
    root2 = galera_db.cluster.admin(2, db)
    with _accounts(galera_db) as acc:
        op = open_store(_account_url(galera_db, acc, "op", 0))
        job = op.submit("held", What("sql", "DO 1"), make_schedule("every", every=3600))
        op.close()
        sess = pymysql.connect(
            host="127.0.0.1",
            port=galera_db.cluster.port(3),
            user=acc["op"],
            password=acc["op_pw"],
            database=db,
            autocommit=True,
        )
        try:
            with root2.cursor() as cur:
                cur.execute(
                    "SELECT ROUTINE_NAME FROM information_schema.ROUTINES WHERE "
                    "ROUTINE_SCHEMA = %s AND ROUTINE_NAME LIKE %s",
                    (db, f"{routines.PROC_PREFIX}{job.id}\\_%"),
                )
                (name,) = cur.fetchone()
                # a runner's claim on node 2, as the Galera backend writes it
                cur.execute(
                    "UPDATE jobtui_job SET running = 1, runner_id = 'w2', locked_by = 'w2', "
                    "locked_until = UTC_TIMESTAMP(6) + INTERVAL 60 SECOND WHERE id = %s",
                    (job.id,),
                )
                cur.execute("COMMIT")
            with sess.cursor() as cur, pytest.raises(pymysql.err.OperationalError) as refused:
                cur.execute(f"CALL `{routines.RETIRE}`(%s, 'PROCEDURE', %s)", (job.id, name))
            assert "a runner holds the job now" in str(refused.value)

            def exists(n: int) -> bool:
                c = galera_db.cluster.admin(n, db)
                try:
                    with c.cursor() as cur:
                        cur.execute(
                            "SELECT COUNT(*) FROM information_schema.ROUTINES "
                            "WHERE ROUTINE_SCHEMA = %s AND ROUTINE_NAME = %s",
                            (db, name),
                        )
                        return bool(cur.fetchone()[0])
                finally:
                    c.close()

            assert all(exists(n) for n in (1, 2, 3))
            with root2.cursor() as cur:  # the run ended and was recorded
                cur.execute(
                    "UPDATE jobtui_job SET running = 0, runner_id = NULL, locked_by = NULL, "
                    "locked_until = NULL WHERE id = %s",
                    (job.id,),
                )
                cur.execute("COMMIT")
            assert wait_for(lambda: not _running_on(galera_db, 3, job.id), 10)
            with sess.cursor() as cur:
                cur.execute(f"CALL `{routines.RETIRE}`(%s, 'PROCEDURE', %s)", (job.id, name))
            assert wait_for(lambda: not any(exists(n) for n in (1, 2, 3)), 10)
            with root2.cursor() as cur:
                cur.execute(
                    "SELECT locked_by, locked_until FROM jobtui_job WHERE id = %s", (job.id,)
                )
                assert cur.fetchone() == (None, None)
        finally:
            sess.close()
            root2.close()


def _running_on(galera_db: GaleraDB, n: int, job_id: int) -> bool:
    c = galera_db.cluster.admin(n, galera_db.name)
    try:
        with c.cursor() as cur:
            cur.execute("SELECT running FROM jobtui_job WHERE id = %s", (job_id,))
            return bool(cur.fetchone()[0])
    finally:
        c.close()


def test_a_runner_granted_on_a_cluster_sees_every_accounts_connections(
    galera_db: GaleraDB,
) -> None:
    """The reaper releases a dead runner's job only once its connection is gone from the
    node that ran it; another account's connection is visible to the runner account only
    with PROCESS, which `jobtui grant --runner` gives on a cluster (not on one server)."""
    from jobtui.core.backends.mysql.grants import grant_statements

    process = "GRANT PROCESS ON *.* TO `jobtui_runner_d`"
    assert process in grant_statements("runner", "r@%", "d", cluster=True)
    assert process not in grant_statements("runner", "r@%", "d")
    assert process.replace("runner", "operator") not in grant_statements(
        "operator", "o@%", "d", cluster=True
    )
    with _accounts(galera_db) as acc:

        def session(key: str, n: int) -> pymysql.Connection:  # type: ignore[type-arg]
            return pymysql.connect(
                host="127.0.0.1",
                port=galera_db.cluster.port(n),
                user=acc[key],
                password=acc[key + "_pw"],
                database=galera_db.name,
                autocommit=True,
            )

        op, run = session("op", 2), session("run", 2)
        try:
            with op.cursor() as cur:
                cur.execute("SELECT CONNECTION_ID()")
                (op_id,) = cur.fetchone()
            with run.cursor() as cur:
                cur.execute(
                    "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = %s", (op_id,)
                )
                assert cur.fetchone()[0] == 1
        finally:
            op.close()
            run.close()


def test_pruning_on_two_nodes_at_once_deletes_each_old_run_once_and_fails_neither(
    galera_db: GaleraDB,
) -> None:
    """Pruning keeps the node-local named lock (docs/cluster.md): two pruners on two
    nodes may delete the same old rows at once; a batch that loses certification is
    tried again, neither pruner fails, and the run log ends as the retention says."""
    s1, s2 = open_store(galera_db.urls[0]), open_store(galera_db.urls[1])
    try:
        job = s1.submit("old", What("sql", "DO 1"), make_schedule("every", every=3600))
        with s1.write() as conn:
            conn.execute(
                text(
                    "INSERT INTO jobtui_run (job_id, job_name, owner, scheduled_for, started, "
                    "finished, outcome, runner, skipped, manual) "
                    "SELECT :j, 'old', 'root@localhost', "
                    "UTC_TIMESTAMP(6) - INTERVAL (seq + 10) MINUTE, "
                    "UTC_TIMESTAMP(6) - INTERVAL (seq + 10) MINUTE, "
                    "UTC_TIMESTAMP(6) - INTERVAL (seq + 10) MINUTE, 'ok', 'r', 0, 0 "
                    "FROM seq_1_to_3000"
                ),
                {"j": job.id},
            )

        def count(store: JobStore) -> int:
            with store.read() as conn:
                return int(conn.execute(text("SELECT COUNT(*) FROM jobtui_run")).scalar_one())

        assert wait_for(lambda: count(s2) == 3000, 20)
        deleted: list[int] = []
        errors: list[BaseException] = []

        def prune(store: JobStore) -> None:
            try:
                deleted.append(store.prune_runs(keep=10, batch=100))
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=prune, args=(s,)) for s in (s1, s2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert not errors, errors
        assert len(deleted) == 2 and sum(deleted) == 2990, deleted
        assert wait_for(lambda: count(s1) == count(s2) == 10, 20)
    finally:
        s1.close()
        s2.close()
