"""No owner's lock delays another owner's job (issue #23, item 2), on real MariaDB accounts.

An operator may take locking reads (``SELECT ... FOR UPDATE``, ``LOCK IN SHARE MODE``)
through every view and SQL-interface object it can read. The owner test of each uses the
stored, indexed user part of the owner (``FORCE INDEX``), so the locks reach only the
operator's own rows; the runner's claims skip a row another transaction holds (``SKIP
LOCKED``) and report the job so skipped.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Iterator

import pymysql
import pytest
from support.accounts import Server, grant_execute, grant_kind, root_sql
from support.pools import every, runs_of, start_pool
from support.procs import wait_for

from jobtui.core import accounts, schema
from jobtui.core.backends.mysql import operator_views, owner_index
from jobtui.core.model import Outcome, What
from jobtui.core.runner import session as session_module
from jobtui.core.runner.pool import RunnerPool
from jobtui.core.runner.session import Session
from jobtui.core.store import open_store
from jobtui.core.timeutil import utcnow

HOLD = 20.0  # seconds the operator holds its locks (the proof)

# Every object an operator may read that holds jobs or runs, with the locking reads it
# may take through each (FOR UPDATE on a view that cannot be updated is refused: skipped).
LOCKING_READS = [
    f"SELECT * FROM {operator_views.USER_JOB_VIEW} FOR UPDATE",
    f"SELECT * FROM {operator_views.USER_JOB_VIEW} LOCK IN SHARE MODE",
    f"SELECT * FROM {operator_views.USER_JOB_VIEW} ORDER BY name DESC FOR UPDATE",
    f"SELECT * FROM {operator_views.USER_RUN_VIEW} FOR UPDATE",
    f"SELECT * FROM {operator_views.USER_RUN_VIEW} LOCK IN SHARE MODE",
    "SELECT * FROM user_jobs LOCK IN SHARE MODE",
    "SELECT * FROM user_jobs FOR UPDATE",
    "SELECT * FROM user_jobs_running LOCK IN SHARE MODE",
    "SELECT * FROM user_jobs_running FOR UPDATE",
    f"SELECT * FROM {operator_views.USER_JOB_VIEW} WHERE id IN (SELECT id FROM {operator_views.USER_JOB_VIEW}) "
    "FOR UPDATE",
    f"SELECT * FROM {operator_views.RUNNERS_VIEW} LOCK IN SHARE MODE",
    f"SELECT * FROM {operator_views.RUNNERS_VIEW} FOR UPDATE",
    f"SELECT * FROM {schema.meta.name} LOCK IN SHARE MODE",
]


class _Warnings(logging.Handler):
    """The runner's warnings, whatever another test did to logging's configuration."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def _heartbeat(server: Server) -> object:
    conn = pymysql.connect(host="127.0.0.1", user="root", database=server.database)
    try:
        with conn.cursor() as cur:
            cur.execute(f"SELECT MAX(heartbeat) FROM {schema.runner.name}")
            return cur.fetchone()[0]
    finally:
        conn.close()


@pytest.fixture
def pools() -> Iterator[list[RunnerPool]]:
    started: list[RunnerPool] = []
    yield started
    for pool in started:
        pool.stop(grace=0)


def _hold_locks(server: Server, stop: threading.Event, taken: list[str]) -> None:
    """alice's plain client: every locking read in one open transaction until ``stop``."""
    conn = server.raw("alice")
    try:
        with conn.cursor() as cur:
            cur.execute("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            cur.execute("START TRANSACTION")
            for statement in LOCKING_READS:
                try:
                    cur.execute(statement)
                    cur.fetchall()
                    taken.append(statement)
                except pymysql.MySQLError as exc:
                    taken.append(f"refused {exc.args[0]}: {statement}")
            stop.wait(HOLD + 10)
            cur.execute("ROLLBACK")
    finally:
        conn.close()


@pytest.mark.mariadb
def test_an_operators_locks_never_delay_another_owners_job(
    server: Server, pools: list[RunnerPool]
) -> None:
    db = server.database
    root_sql(server, "CREATE PROCEDURE noop() BEGIN END")
    grant_execute(server, "noop", "alice", "bob")
    alice, bob, root = server.store("alice"), server.store("bob"), open_store(server.url)
    stop = threading.Event()
    taken: list[str] = []
    holder = threading.Thread(target=_hold_locks, args=(server, stop, taken), daemon=True)
    warnings = _Warnings()
    logging.getLogger("jobtui.runner").addHandler(warnings)
    try:
        bob.submit("tick", What("call", f"{db}.noop"), every(1))
        alice.submit("atick", What("call", f"{db}.noop"), every(1))
        # alice's own running job holds locks too: a locking read through her view, then
        # 15 s of sleep, in her own run (on the runner's connection)
        alice.submit(
            "holder",
            What(
                "sql",
                f"SELECT COUNT(*) + SLEEP(15) FROM {db}.{operator_views.USER_JOB_VIEW} FOR UPDATE",
            ),
            every(3600),
        )
        pool = start_pool(pools, root, threads=4)
        assert wait_for(lambda: alice.get("holder").running, 10)
        assert wait_for(lambda: len(runs_of(bob, "tick")) >= 2, 10)
        holder.start()
        assert wait_for(lambda: len(taken) == len(LOCKING_READS), 10), taken
        refused = [t for t in taken if t.startswith("refused")]
        assert len(refused) <= 4, taken  # FOR UPDATE of a view that cannot be updated
        t0, held_from = time.monotonic(), utcnow()
        beat = _heartbeat(server)
        time.sleep(HOLD)
        # the runner's heartbeats went on (alice locked nothing of jobtui_runner)
        assert _heartbeat(server) > beat
        # bob's pause returns at once, and his every-second job ran each slot on time
        started = time.monotonic()
        bob.pause("tick")
        paused_in = time.monotonic() - started
        assert paused_in < 1.0, paused_in
        bob.resume("tick")
        stop.set()
        holder.join(15)
        # (the slots while alice held her locks; a busy machine may be late at the start)
        runs = [r for r in runs_of(bob, "tick") if r.scheduled_for >= held_from]
        assert not [r for r in runs if r.outcome is Outcome.SKIPPED], runs
        ok = [r for r in runs if r.outcome is Outcome.OK]
        assert len(ok) >= HOLD - 2, [(r.scheduled_for, r.started) for r in ok]
        for r in ok:
            assert (r.started - r.scheduled_for).total_seconds() < 0.8, r
        assert time.monotonic() - t0 >= HOLD
        # alice's own jobs waited for her locks, and the worker said so (its claims skip
        # her rows, its recordings of her runs wait at most 1 s a try, then retry)
        assert any("is locked and another transaction" in m for m in warnings.messages), (
            warnings.messages,
            [(r.outcome.value, str(r.scheduled_for.time())) for r in runs_of(alice, "atick")],
        )
        # and runs again once the locks are gone
        last = max(r.scheduled_for for r in runs_of(alice, "atick"))
        assert wait_for(
            lambda: [
                r
                for r in runs_of(alice, "atick")
                if r.outcome is Outcome.OK and r.scheduled_for > last
            ],
            10,
        )
        assert pool.runs_done > 0
    finally:
        logging.getLogger("jobtui.runner").removeHandler(warnings)
        stop.set()
        for p in pools:
            p.stop(grace=0)
        for s in (alice, bob, root):
            s.close()


@pytest.mark.mariadb
def test_a_locking_read_through_the_views_uses_the_owner_index(server: Server) -> None:
    """EXPLAIN of each locking read: the job table and the run log are read through their
    owner index only (a range of the invoker's user name), never scanned. (As root: an
    operator may not EXPLAIN a view; the plan does not depend on who asks.)"""
    conn = pymysql.connect(host="127.0.0.1", user="root", database=server.database)
    try:
        with conn.cursor() as cur:
            for statement in LOCKING_READS:
                try:
                    cur.execute(f"EXPLAIN {statement}")
                except pymysql.MySQLError:
                    continue
                for row in cur.fetchall():
                    table, access, key = row[2], row[3], row[5]
                    if table in ("jobtui_job", "jobtui_run"):
                        assert access == "ref", (statement, row)
                        assert key == owner_index.OWNER_INDEX[table], (statement, row)
    finally:
        conn.close()


@pytest.mark.mariadb
def test_operators_write_no_bookkeeping_through_their_view(server: Server) -> None:
    """Reproduction 3c: ``last_duration = 0.001`` written through the view made alice's long
    jobs pass for short ones. Every bookkeeping column is refused to an operator (1143), in
    an UPDATE and in an INSERT, and the row is unchanged; the definition and steering
    columns stay writable, and jobtui's own submit, steering and SQL submit still work."""
    # a role granted by an older version (the whole view, the runner table), granted again
    role = accounts.operator_role(server.database)
    root_sql(
        server,
        f"GRANT INSERT, UPDATE ON {operator_views.USER_JOB_VIEW} TO `{role}`",
        f"GRANT SELECT ON {schema.runner.name} TO `{role}`",
    )
    grant_kind(server, "operator", server.names["alice"])
    alice = server.store("alice")
    try:
        assert alice.runners() == []  # through jobtui_runners
        job = alice.submit("mine", What("sql", "SELECT 1"), every(3600))
        alice.pause("mine")
        alice.resume("mine")
    finally:
        alice.close()
    root = pymysql.connect(host="127.0.0.1", user="root", database=server.database)
    conn = server.raw("alice")
    samples = {
        "running": 1,
        "cycles": 99,
        "total_time": 0.0,
        "last_run": "2030-01-01",
        "this_run": "2030-01-01",
        "last_outcome": "ok",
        "last_error": "x",
        "last_duration": 0.001,
        "last_cycle_start": "2030-01-01",
        "last_cycle_finish": "2030-01-01",
        "runner_id": "r",
        "runner_connection_id": 1,
        "runner_start": "2030-01-01",
        "runner_finish": "2030-01-01",
        "locked_by": "r",
        "locked_until": "2030-01-01",
    }
    assert set(samples) == set(schema.BOOKKEEPING_COLUMNS)
    try:
        with root.cursor() as rc:
            rc.execute("SELECT * FROM jobtui_job WHERE id = %s", (job.id,))
            before = rc.fetchone()
        with conn.cursor() as cur:
            for column, value in samples.items():
                with pytest.raises(pymysql.MySQLError) as refused:
                    cur.execute(
                        f"UPDATE {operator_views.USER_JOB_VIEW} SET {column} = %s WHERE id = %s",
                        (value, job.id),
                    )
                assert refused.value.args[0] == 1143, (column, refused.value.args)
                with pytest.raises(pymysql.MySQLError) as refused:
                    cur.execute(
                        f"INSERT INTO {operator_views.USER_JOB_VIEW} (name, {column}) VALUES ('x', %s)",
                        (value,),
                    )
                assert refused.value.args[0] == 1143, (column, refused.value.args)
            with pytest.raises(pymysql.MySQLError) as refused:
                cur.execute(f"SELECT * FROM {schema.runner.name} LOCK IN SHARE MODE")
            assert refused.value.args[0] == 1142
            cur.execute(
                f"UPDATE {operator_views.USER_JOB_VIEW} SET description = 'ok', run_now = 0 WHERE id = %s",
                (job.id,),
            )
            assert cur.rowcount == 1
            cur.execute(f"CALL `{server.database}`.submit(@j, 'SELECT 2', NULL, NULL)")
            cur.execute("SELECT @j")
            assert cur.fetchone()[0] is not None
        with root.cursor() as rc:
            rc.execute("SELECT * FROM jobtui_job WHERE id = %s", (job.id,))
            after = rc.fetchone()
            names = [d[0] for d in rc.description]
        changed = {n for n, a, b in zip(names, before, after, strict=True) if a != b}
        assert changed <= {"description", "updated"}, changed
    finally:
        conn.close()
        root.close()


@pytest.mark.mariadb
def test_an_owner_that_kills_the_connection_running_its_job_fails_only_its_run(
    server: Server, pools: list[RunnerPool]
) -> None:
    """Issue #23 item 4, kept: alice may KILL the runner's connection while it runs her
    routine (the process list shows her as its user). Her run fails, the worker goes on:
    bob's every-second job keeps running and alice's job runs again."""
    db = server.database
    root_sql(
        server,
        "CREATE PROCEDURE nap() SQL SECURITY INVOKER BEGIN DO SLEEP(30); END",
        "CREATE PROCEDURE noop() BEGIN END",
    )
    grant_execute(server, "nap", "alice")
    grant_execute(server, "noop", "bob")
    alice, bob, root = server.store("alice"), server.store("bob"), open_store(server.url)
    conn = server.raw("alice")
    try:
        alice.submit("nap", What("call", f"{db}.nap"), every(5))
        bob.submit("tick", What("call", f"{db}.noop"), every(1))
        pool = start_pool(pools, root, threads=4)
        with conn.cursor() as cur:

            def sid() -> int | None:
                cur.execute("SELECT sid FROM user_jobs_running WHERE name = 'nap'")
                row = cur.fetchone()
                return None if row is None or row[0] is None else int(row[0])

            victim = wait_for(sid, 15)
            assert victim

            def kill() -> bool:  # the thread is alice's only while it runs her routine
                try:
                    cur.execute(f"KILL {int(victim)}")
                    return True
                except pymysql.MySQLError as exc:
                    assert exc.args[0] == 1095, exc.args  # not yet inside the routine
                    return False

            assert wait_for(kill, 10, interval=0.1)
        assert wait_for(
            lambda: [r for r in runs_of(alice, "nap") if r.outcome is Outcome.FAILED], 15
        ), runs_of(alice, "nap")
        failed = next(r for r in runs_of(alice, "nap") if r.outcome is Outcome.FAILED)
        assert failed.error
        # the worker goes on: bob's job keeps running, alice's runs again
        ticks = len([r for r in runs_of(bob, "tick") if r.outcome is Outcome.OK])
        assert wait_for(
            lambda: len([r for r in runs_of(bob, "tick") if r.outcome is Outcome.OK]) >= ticks + 3,
            10,
        )
        assert wait_for(lambda: len(runs_of(alice, "nap")) >= 2, 15), runs_of(alice, "nap")
        assert not pool._stopped.is_set()
    finally:
        conn.close()
        for p in pools:
            p.stop(grace=0)
        for s in (alice, bob, root):
            s.close()


@pytest.mark.mariadb
def test_what_an_operator_sees_of_other_owners_routines(server: Server) -> None:
    """Issue #23 item 4: information_schema shows an operator no body and no parameter of
    another owner's routines. (While its role holds CREATE ROUTINE on the jobtui database,
    the server shows it their names and definers: docs/privileges.md says so.)"""
    bob = server.store("bob")
    try:
        bob.submit("bj", What("sql", "SELECT 1"), every(60))
    finally:
        bob.close()
    conn = server.raw("alice")
    mine = f"{server.names['alice']}@%"
    try:
        with conn.cursor() as cur:
            cur.execute(
                "SELECT ROUTINE_NAME, DEFINER, ROUTINE_DEFINITION FROM information_schema.ROUTINES "
                "WHERE ROUTINE_SCHEMA = DATABASE()"
            )
            for name, definer, body in cur.fetchall():
                if definer != mine:
                    assert body is None, (name, definer)
            cur.execute(
                "SELECT SPECIFIC_NAME FROM information_schema.PARAMETERS "
                "WHERE SPECIFIC_SCHEMA = DATABASE() AND SPECIFIC_NAME LIKE 'jobtui\\_w\\_%%'"
            )
            assert cur.fetchall() == ()
            with pytest.raises(pymysql.MySQLError):
                cur.execute("SELECT body FROM mysql.proc")
    finally:
        conn.close()


@pytest.mark.mariadb
def test_a_job_its_owner_holds_locked_is_reported_in_the_run_log(
    server: Server, pools: list[RunnerPool]
) -> None:
    """alice holds her job's row ``FOR UPDATE``: the claims skip it (never wait), and after
    2 s the run log says so, with a row alice reads through her view; once she lets go
    it runs again."""
    db = server.database
    root_sql(server, "CREATE PROCEDURE noop() BEGIN END")
    grant_execute(server, "noop", "alice")
    alice, root = server.store("alice"), open_store(server.url)
    conn = server.raw("alice")
    try:
        alice.submit("atick", What("call", f"{db}.noop"), every(1))
        start_pool(pools, root, threads=2)
        assert wait_for(lambda: runs_of(alice, "atick"), 10)
        with conn.cursor() as cur:
            cur.execute("START TRANSACTION")
            cur.execute(
                f"SELECT id FROM {operator_views.USER_JOB_VIEW} WHERE name = 'atick' FOR UPDATE"
            )
            reported = wait_for(
                lambda: [
                    r
                    for r in runs_of(alice, "atick")
                    if r.outcome is Outcome.SKIPPED and "is locked" in (r.error or "")
                ],
                10,
            )
            cur.execute("ROLLBACK")
        assert reported, runs_of(alice, "atick")
        assert "its owner's" in (reported[0].error or "")
        last = max(r.scheduled_for for r in runs_of(alice, "atick"))
        assert wait_for(
            lambda: [
                r
                for r in runs_of(alice, "atick")
                if r.outcome is Outcome.OK and r.scheduled_for > last
            ],
            10,
        )
    finally:
        conn.close()
        for p in pools:
            p.stop(grace=0)
        for s in (alice, root):
            s.close()


@pytest.mark.mariadb
def test_owner_code_runs_on_a_connection_holding_no_lock_and_never_twice_at_once(
    server: Server, pools: list[RunnerPool]
) -> None:
    """Owner code runs on the runner's executor connection, apart from the connection
    that holds the jobs' named locks and writes the bookkeeping (docs/privileges.md,
    "Rule 6"): alice's routine asks to release every named lock its connection holds,
    and there is none (a routine on the locks' connection released its job's own).
    Two runners for 12 s: her every-second job never runs twice at once."""
    db = server.database
    alice_account = f"'{server.names['alice']}'@'%'"
    root_sql(
        server,
        "CREATE TABLE freed (n INT, began DATETIME(6), ended DATETIME(6))",
        "CREATE PROCEDURE unlock_nap() SQL SECURITY INVOKER BEGIN "
        "DECLARE b DATETIME(6) DEFAULT NOW(6); DECLARE n INT DEFAULT RELEASE_ALL_LOCKS(); "
        "DO SLEEP(1.5); INSERT INTO freed VALUES (n, b, NOW(6)); END",
        f"GRANT INSERT ON `{db}`.`freed` TO {alice_account}",
    )
    grant_execute(server, "unlock_nap", "alice")
    alice, runner = server.store("alice"), server.store("run")
    try:
        alice.submit("unlock", What("call", f"{db}.unlock_nap"), every(1))
        start_pool(pools, runner, threads=2)
        start_pool(pools, runner, threads=2)
        time.sleep(12)
        for p in pools:
            p.stop(grace=5)
        conn = pymysql.connect(host="127.0.0.1", user="root", database=db)
        try:
            with conn.cursor() as cur:
                cur.execute("SELECT n, began, ended FROM freed ORDER BY began")
                rows = cur.fetchall()
        finally:
            conn.close()
        assert len(rows) >= 4, rows
        assert all(n == 0 for n, _, _ in rows), rows  # its connection held no lock at all
        for (_, _, ended), (_, began, _) in itertools.pairwise(rows):
            assert began >= ended, rows  # no two runs at once
    finally:
        for p in pools:
            p.stop(grace=0)
        alice.close()
        runner.close()


@pytest.mark.mariadb
def test_the_executor_connection_can_do_nothing_but_call_routines(server: Server) -> None:
    """The runner's executor connection (where owner code runs) sets the executor role
    that `jobtui grant --runner` gives: EXECUTE on the jobtui database and nothing else.
    It cannot read the job table or the lock key, nor KILL, and its session reset after
    a batch sets the role again."""
    runner = server.store("run")
    other = server.raw("alice")
    try:
        session = Session(
            runner.engine, runner.backend, role=accounts.executor_role(server.database)
        )
        for _round in range(2):
            conn = session.executor()
            raw = conn.connection.dbapi_connection
            with raw.cursor() as cur:
                cur.execute("SELECT CURRENT_ROLE()")
                assert cur.fetchone()[0] == accounts.executor_role(server.database)
                for statement in (
                    f"SELECT * FROM {schema.job.name}",
                    f"SELECT * FROM {schema.secret.name}",
                    f"SELECT * FROM {schema.run.name}",
                    f"KILL QUERY {other.thread_id()}",
                ):
                    with pytest.raises(pymysql.MySQLError) as refused:
                        cur.execute(statement)
                    assert refused.value.args[0] in (1142, 1095), (statement, refused.value)
            raw.rollback()
            assert session.exec_cid != session.get().connection.dbapi_connection.thread_id()
            session.dirty = True
            session.reset()  # back to a new session: the role is set again
            assert session.exec_conn is not None
        # the bookkeeping connection keeps the runner's role
        with session.get().connection.dbapi_connection.cursor() as cur:
            cur.execute(f"SELECT COUNT(*) FROM {schema.job.name}")
            assert cur.fetchone()[0] == 0
    finally:
        session.discard()
        other.close()
        runner.close()


@pytest.mark.mariadb
def test_an_executor_without_its_role_asks_again_only_after_a_while(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A runner account that lacks the executor role (granted by an older version) keeps
    its default role on the executor connection. A batch's session reset does not ask
    for the role again (a refused round trip a batch) until ROLE_RETRY has passed; a
    role granted meanwhile is then taken up, without a reconnect."""
    role = accounts.executor_role(server.database)
    account = f"'{server.names['run']}'@'%'"
    root_sql(server, f"REVOKE `{role}` FROM {account}")
    monkeypatch.setattr(session_module, "ROLE_RETRY", 1.5)
    runner = server.store("run")
    session = Session(runner.engine, runner.backend, role=role)

    def current_role() -> object:
        with session.executor().connection.dbapi_connection.cursor() as cur:
            cur.execute("SELECT CURRENT_ROLE()")
            return cur.fetchone()[0]

    try:
        assert current_role() == accounts.role_name("runner", server.database)
        cid = session.exec_cid
        root_sql(server, f"GRANT `{role}` TO {account}")
        session.dirty = True
        session.reset()  # within ROLE_RETRY: not asked again
        assert current_role() == accounts.role_name("runner", server.database)
        time.sleep(max(0.0, session.role_retry - time.monotonic()) + 0.1)
        session.dirty = True
        session.reset()  # asked again: the role granted meanwhile is set
        assert current_role() == role
        assert session.exec_cid == cid  # the same connection, reset, not a new one
    finally:
        session.discard()
        runner.close()
