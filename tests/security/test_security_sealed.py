"""Issue 23, part A: check, then call. The owner cannot change what the runner checked.

Against a real MariaDB with real accounts (tests/support/accounts.py): each job routine is
sealed by the keeper (``jobtui_seal``) right after its owner's session creates it,
so the owner holds no ALTER ROUTINE on it; the runner refuses one its owner can
still alter; routines are looked up by exact name; a squatted name is refused
naming the squatter. docs/privileges.md, "Rule 1".
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pymysql
import pytest
from support.accounts import Server
from support.mariadb import admin_connection
from support.procs import wait_for

from jobtui.core.backends.mysql import routines
from jobtui.core.errors import InvalidInput
from jobtui.core.model import Outcome, What
from jobtui.core.runner.pool import RunnerPool
from jobtui.core.schedules import make_schedule

pytestmark = pytest.mark.mariadb

FLIP_SECONDS = 32


@contextmanager
def _runner(server: Server, threads: int = 2) -> Iterator[RunnerPool]:
    store = server.store("run")
    pool = RunnerPool(store, threads=threads, poll=0.1, name="sealed")
    pool.start()
    try:
        yield pool
    finally:
        pool.stop(grace=0)
        store.close()


def _probe(server: Server) -> None:
    """``probe()``: INVOKER, records CURRENT_USER() and whether it could read
    jobtui_secret (only the runner may). Run inside alice's DEFINER routine it is
    alice; run with the runner's rights it would record the runner and secret_read 1."""
    db = server.database
    conn = admin_connection(db)
    try:
        with conn.cursor() as cur:
            cur.execute(
                "CREATE TABLE probe_log (who VARCHAR(200), secret_read INT, via VARCHAR(20))"
            )
            cur.execute(
                "CREATE PROCEDURE probe(IN via VARCHAR(20)) SQL SECURITY INVOKER MODIFIES SQL DATA "
                "BEGIN DECLARE ok INT DEFAULT 1; DECLARE n INT; "
                "BEGIN DECLARE CONTINUE HANDLER FOR SQLEXCEPTION SET ok = 0; "
                "SELECT COUNT(*) INTO n FROM jobtui_secret; END; "
                "INSERT INTO probe_log VALUES (CURRENT_USER(), ok, via); END"
            )
            for key in ("alice", "run"):  # a breach is recorded, not refused
                who = f"'{server.names[key]}'@'%'"
                cur.execute(f"GRANT INSERT ON `{db}`.probe_log TO {who}")
                cur.execute(f"GRANT EXECUTE ON PROCEDURE `{db}`.probe TO {who}")
    finally:
        conn.close()


def _log(server: Server) -> list[tuple[str, int, str]]:
    conn = admin_connection(server.database)
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT who, secret_read, via FROM probe_log")
            return [tuple(r) for r in cur.fetchall()]  # type: ignore[misc]
    finally:
        conn.close()


def _attacks(server: Server, proc: routines.Routine, func: routines.Routine) -> list[str]:
    """What alice's plain client tries on her own job's routines, in a tight loop."""
    invoker_proc = (
        f"CREATE PROCEDURE `{proc.name}`({proc.params}) SQL SECURITY INVOKER "
        "BEGIN CALL probe('flipped-proc'); END"
    )
    invoker_func = (
        f"CREATE FUNCTION `{func.name}`() RETURNS DATETIME(6) SQL SECURITY INVOKER "
        "BEGIN INSERT INTO probe_log VALUES (CURRENT_USER(), 0, 'flipped-func'); "
        "RETURN NOW(6) + INTERVAL 1 SECOND; END"
    )
    return [
        f"ALTER PROCEDURE `{proc.name}` SQL SECURITY INVOKER",
        f"ALTER PROCEDURE `{proc.name}` SQL SECURITY DEFINER",
        f"DROP PROCEDURE `{proc.name}`",
        invoker_proc,
        f"CREATE OR REPLACE {invoker_proc[len('CREATE ') :]}",
        f"ALTER FUNCTION `{func.name}` SQL SECURITY INVOKER",
        f"ALTER FUNCTION `{func.name}` SQL SECURITY DEFINER",
        f"DROP FUNCTION `{func.name}`",
        invoker_func,
        f"CREATE OR REPLACE {invoker_func[len('CREATE ') :]}",
    ]


def test_an_owner_flipping_dropping_and_recreating_its_routines_never_runs_as_the_runner(
    server: Server,
) -> None:
    """For 30+ s alice flips her wrapper and her expression function to INVOKER, drops
    and recreates them with INVOKER bodies, in a tight loop on her own connection,
    while her jobs fire every second on a runner pool: every run is alice's, none can
    read jobtui_secret, and none of her statements on the sealed routines succeeds."""
    _probe(server)
    db = server.database
    alice = server.store("alice")
    every = make_schedule("every", every=1)
    expr = make_schedule("expr", expr="NOW() + INTERVAL 1 SECOND")
    try:
        a = alice.submit("flip-call", What("call", f"{db}.probe", ("call",)), every)
        b = alice.submit("flip-expr", What("call", f"{db}.probe", ("expr",)), expr)
        role = None
        proc = routines.for_what(a.id, a.what, role)
        func = routines.for_expr(b.id, "NOW() + INTERVAL 1 SECOND", role)
        assert proc is not None
        attacks = _attacks(server, proc, func)
        succeeded: list[str] = []
        tried = [0]
        stop = threading.Event()

        def flip() -> None:
            conn = server.raw("alice")
            try:
                while not stop.is_set():
                    for sql in attacks:
                        tried[0] += 1
                        try:
                            with conn.cursor() as cur:
                                cur.execute(sql)
                            succeeded.append(sql)
                        except pymysql.err.MySQLError:
                            pass
            finally:
                conn.close()

        flipper = threading.Thread(target=flip, daemon=True)
        with _runner(server):
            flipper.start()
            time.sleep(FLIP_SECONDS)
            stop.set()
            flipper.join(10)
        rows = _log(server)
        alice_account = f"{server.names['alice']}@%"
        assert succeeded == []  # the owner can change nothing the runner checked
        assert tried[0] > 1000, tried[0]  # a tight loop, not a few tries
        assert {who for who, _s, _v in rows} == {alice_account}
        assert all(secret == 0 for _w, secret, _v in rows)
        assert not [r for r in rows if r[2].startswith("flipped")]
        calls = [r for r in rows if r[2] == "call"]
        exprs = [r for r in rows if r[2] == "expr"]
        # the machine is shared: most slots, not every one
        assert len(calls) >= FLIP_SECONDS // 2, len(calls)
        assert len(exprs) >= FLIP_SECONDS // 3, len(exprs)
    finally:
        alice.close()


def test_a_routine_its_owner_can_still_alter_is_refused(server: Server) -> None:
    """Before the keeper seals it (or if ALTER ROUTINE comes back), the owner could flip
    it between the check and the call: the runner refuses it, and nothing runs."""
    _probe(server)
    db = server.database
    alice = server.store("alice")
    try:
        job = alice.submit("unsealed", What("call", f"{db}.probe", ("x",)), make_schedule("once"))
        proc = routines.for_what(job.id, job.what, None)
        assert proc is not None
        conn = admin_connection(db)
        try:
            with conn.cursor() as cur:
                cur.execute(
                    f"GRANT ALTER ROUTINE ON PROCEDURE `{db}`.`{proc.name}` "
                    f"TO '{server.names['alice']}'@'%'"
                )
        finally:
            conn.close()
        with _runner(server, threads=1):
            assert wait_for(
                lambda: [r for r in alice.runs("unsealed") if r.outcome is not Outcome.RUNNING],
                20,
            )
        run = alice.runs("unsealed")[0]
        assert run.outcome is Outcome.FAILED
        assert "is not sealed" in (run.error or "")
        assert _log(server) == []
    finally:
        alice.close()


def test_a_squatted_routine_name_is_refused_naming_the_squatter(server: Server) -> None:
    """Issue 23, 3a: bob creates the routine alice's next job will need; alice's submit
    is refused (exit 2 on the CLI), and the message names bob's account."""
    db = server.database
    alice = server.store("alice")
    bob = server.raw("bob")
    try:
        # the next job id: the table's AUTO_INCREMENT
        first = alice.submit("first", What("sql", "SELECT 1"), make_schedule("once"))
        what = What("sql", "SELECT 2")
        squat = routines.for_what(first.id + 1, what, None)
        assert squat is not None
        with bob.cursor() as cur:
            cur.execute(squat.create_sql())
        with pytest.raises(InvalidInput) as refused:
            alice.submit("second", what, make_schedule("once"))
        message = str(refused.value)
        assert f"{server.names['bob']}@%" in message
        assert squat.name in message
        assert "second" not in [j.name for j in alice.list_jobs()]
        del db
    finally:
        bob.close()
        alice.close()


def test_the_runners_check_reads_only_the_jobs_own_routines(server: Server) -> None:
    """Issue 23, 3b: bob creates hundreds of routines named after alice's job
    (``jobtui_w_<id>_*``); the runner's check looks the job's routine up by exact name,
    so the rows it reads do not grow with them, and alice's job still runs."""
    alice = server.store("alice")
    bob = server.raw("bob")
    runner = server.store("run")
    try:
        job = alice.submit("busy", What("sql", "SELECT 1"), make_schedule("once"))

        def reads() -> int:
            with runner.engine.connect() as conn:
                before = _handler_reads(conn)
                verdicts = routines.verify(conn, server.database, [job])
                after = _handler_reads(conn)
                assert verdicts[job.id].name is not None, verdicts[job.id].problem
                return after - before

        few = reads()
        with bob.cursor() as cur:
            for i in range(300):
                cur.execute(
                    f"CREATE PROCEDURE `{routines.PROC_PREFIX}{job.id}_{i:012x}`() "
                    "SQL SECURITY DEFINER BEGIN SELECT 1; END"
                )
        many = reads()
        assert many <= few + 5, (few, many)  # not 300 more
    finally:
        runner.close()
        bob.close()
        alice.close()


def _handler_reads(conn: object) -> int:
    rows = conn.exec_driver_sql(  # type: ignore[attr-defined]
        "SHOW SESSION STATUS WHERE Variable_name IN "
        "('Handler_read_next', 'Handler_read_rnd_next', 'Handler_read_key', 'Handler_read_prev')"
    ).all()
    return sum(int(v) for _n, v in rows)


def test_an_owner_that_may_alter_every_routine_through_a_role_is_refused(server: Server) -> None:
    """ALTER ROUTINE on the whole database, through a role granted to a role granted to
    alice (not even her default one: SET ROLE inside her routine could activate it):
    the keeper cannot seal that away, so the runner refuses her job; revoked, it runs."""
    _probe(server)
    db = server.database
    outer, inner = f"jt_outer_{server.names['alice']}", f"jt_inner_{server.names['alice']}"
    alice = server.store("alice")
    conn = admin_connection(db)
    try:
        with conn.cursor() as cur:
            cur.execute(f"CREATE ROLE `{inner}`")
            cur.execute(f"CREATE ROLE `{outer}`")
            cur.execute(f"GRANT ALTER ROUTINE ON `{db}`.* TO `{inner}`")
            cur.execute(f"GRANT `{inner}` TO `{outer}`")
            cur.execute(f"GRANT `{outer}` TO '{server.names['alice']}'@'%'")
        alice.submit("wide", What("call", f"{db}.probe", ("wide",)), make_schedule("once"))
        with _runner(server, threads=1):
            assert wait_for(
                lambda: [r for r in alice.runs("wide") if r.outcome is not Outcome.RUNNING], 20
            )
        run = alice.runs("wide")[0]
        assert run.outcome is Outcome.FAILED
        assert f"holds ALTER ROUTINE on the database {db}" in (run.error or "")
        assert _log(server) == []
        with conn.cursor() as cur:
            cur.execute(f"REVOKE `{outer}` FROM '{server.names['alice']}'@'%'")
        alice.run_now("wide")
        with _runner(server, threads=1):
            assert wait_for(lambda: _log(server), 20)
        assert _log(server) == [(f"{server.names['alice']}@%", 0, "wide")]
    finally:
        with conn.cursor() as cur:
            cur.execute(f"DROP ROLE IF EXISTS `{outer}`")
            cur.execute(f"DROP ROLE IF EXISTS `{inner}`")
        conn.close()
        alice.close()


def test_a_sealed_routine_is_retired_only_by_its_owner_while_no_runner_holds_the_job(
    server: Server,
) -> None:
    """``jobtui_retire``: bob may not drop alice's routine; while a runner holds the job's
    named lock (from its claim, before its check, to the end of the run) alice's routine
    stays, so no runner is ever between its check and its call when it goes."""
    from jobtui.core import schema
    from jobtui.core.lock_names import lock_name

    db = server.database
    alice = server.store("alice")
    a_raw, b_raw = server.raw("alice"), server.raw("bob")
    holder = admin_connection(db)
    try:
        job = alice.submit("old", What("sql", "SELECT 1"), make_schedule("once"))
        proc = routines.for_what(job.id, job.what, None)
        assert proc is not None
        retire = "CALL jobtui_retire(%s, %s, %s)"
        args = (job.id, proc.type, proc.name)
        with b_raw.cursor() as cur, pytest.raises(pymysql.err.OperationalError) as refused:
            cur.execute(retire, args)
        assert "not your routine" in str(refused.value)
        with holder.cursor() as cur:  # the key only runners and admins may read
            cur.execute("SELECT `value` FROM jobtui_secret WHERE `key` = %s", (schema.LOCK_KEY,))
            (key,) = cur.fetchone()
        name = lock_name(str(key), db, job.id)
        with holder.cursor() as cur:  # as a runner's claim holds it
            cur.execute("SELECT GET_LOCK(%s, 0)", (name,))
            assert cur.fetchone() == (1,)
        with a_raw.cursor() as cur, pytest.raises(pymysql.err.OperationalError) as held:
            cur.execute(retire, args)
        assert "a runner holds the job" in str(held.value)
        with holder.cursor() as cur:
            cur.execute(
                "SELECT COUNT(*) FROM mysql.proc WHERE db = %s AND name = %s", (db, proc.name)
            )
            assert cur.fetchone() == (1,)
            cur.execute("SELECT RELEASE_LOCK(%s)", (name,))
        with a_raw.cursor() as cur:
            cur.execute(retire, args)
        with holder.cursor() as cur:
            cur.execute(
                "SELECT COUNT(*) FROM mysql.proc WHERE db = %s AND name = %s", (db, proc.name)
            )
            assert cur.fetchone() == (0,)
    finally:
        holder.close()
        a_raw.close()
        b_raw.close()
        alice.close()


def test_an_owners_code_cannot_call_another_owners_routine(server: Server) -> None:
    """Owner code runs only in its owner's DEFINER context (an INVOKER body never runs
    as the runner: refused above), and an owner holds EXECUTE on its own routines only:
    alice's job that calls bob's wrapper with an argument of her choosing is refused
    (1370), and bob's procedure never sees the argument."""
    _probe(server)
    db = server.database
    alice, bob = server.store("alice"), server.store("bob")
    try:
        bobs = bob.submit("bobs", What("call", f"{db}.probe", ("bob",)), make_schedule("once"))
        bob.disable("bobs")
        target = routines.for_what(bobs.id, bobs.what, None)
        assert target is not None
        alice.submit(
            "borrow",
            What("sql", f"CALL `{db}`.`{target.name}`('chosen-by-alice')"),
            make_schedule("once"),
        )
        with _runner(server, threads=1):
            assert wait_for(
                lambda: [r for r in alice.runs("borrow") if r.outcome is not Outcome.RUNNING], 20
            )
        run = alice.runs("borrow")[0]
        assert run.outcome is Outcome.FAILED
        assert "1370" in (run.error or "") or "execute command denied" in (run.error or "")
        assert _log(server) == []
    finally:
        alice.close()
        bob.close()
