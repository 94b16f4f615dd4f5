"""A job runs with exactly its owner's rights (issue #11, reproductions 1, 3, 4 and 8).

Real MariaDB accounts (``server`` from tests/support/accounts.py: alice and bob are
operators, adm an admin, run a runner, each made by `jobtui grant --apply`).
Every job runs as its owner's SQL SECURITY DEFINER routine, created by the
owner's own session at submit; the runner checks each routine on mysql.proc
before it runs (jobtui/core/backends/mysql/routines.py, docs/privileges.md).
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta

import pymysql
import pytest
from support.accounts import Server
from support.mariadb import admin_connection
from support.procs import wait_for

from jobtui.cli import main
from jobtui.core import accounts, owner_code
from jobtui.core.backends.mysql import routines
from jobtui.core.errors import InvalidInput, PermissionDenied
from jobtui.core.model import Outcome, Status, What
from jobtui.core.runner.pool import RunnerPool
from jobtui.core.schedules import make_schedule
from jobtui.core.store import JobStore, open_store
from jobtui.core.timeutil import utcnow

pytestmark = pytest.mark.mariadb

ONCE = make_schedule("once")


def _account(server: Server, key: str) -> str:
    return f"{server.names[key]}@%"


@contextmanager
def _runner(server: Server, threads: int = 1) -> Iterator[RunnerPool]:
    """A pool on the runner account (it holds only what `jobtui grant --runner` gives)."""
    store = server.store("run")
    pool = RunnerPool(store, threads=threads, poll=0.1, name="security")
    pool.start()
    try:
        yield pool
    finally:
        pool.stop(grace=0)
        store.close()


def _finished_runs(store: JobStore, name: str) -> list:  # type: ignore[type-arg]
    return [r for r in store.runs(name) if r.outcome is not Outcome.RUNNING]


def _wait_run(store: JobStore, name: str, timeout: float = 20) -> object:
    found = wait_for(lambda: _finished_runs(store, name), timeout)
    assert found, f"no finished run of {name!r} within {timeout} s"
    return found[0]


def _root(server: Server) -> pymysql.connections.Connection:
    return admin_connection(server.database)


def _description(server: Server, name: str) -> list[str]:
    conn = _root(server)
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT description FROM jobtui_job WHERE name = %s", (name,))
            return [r[0] for r in cur.fetchall()]
    finally:
        conn.close()


# ---------------------------------------------------------------------- reproduction 1


def test_a_call_runs_with_the_owners_rights_not_the_runners(server: Server) -> None:
    """Repro 1: alice's EXECUTE on an INVOKER exec_any(stmt) must not let her job change
    bob's row: the statement runs as alice (refused), never as the runner."""
    db = server.database
    root = _root(server)
    with root.cursor() as cur:
        cur.execute(
            "CREATE PROCEDURE exec_any(IN stmt TEXT) SQL SECURITY INVOKER "
            "BEGIN SET @s = stmt; PREPARE p FROM @s; EXECUTE p; DEALLOCATE PREPARE p; END"
        )
        cur.execute(
            f"GRANT EXECUTE ON PROCEDURE `{db}`.`exec_any` TO '{server.names['alice']}'@'%'"
        )
    alice, bob = server.store("alice"), server.store("bob")
    try:
        bob.submit("bobs-job", What("sql", "SELECT 1"), make_schedule("every", every=3600))
        tamper = f"UPDATE `{db}`.jobtui_job SET description = 'tampered' WHERE name = 'bobs-job'"
        alice.submit("x", What("call", f"{db}.exec_any", (tamper,)), ONCE)
        with _runner(server):
            run = _wait_run(alice, "x")
        assert run.outcome is Outcome.FAILED  # type: ignore[attr-defined]
        assert "1142" in run.error and "jobtui_job" in run.error  # type: ignore[attr-defined]
        assert _description(server, "bobs-job") == [""]
        # the same job of bob's own on his own row does what bob may: nothing more either
        assert alice.get("x").last_outcome is Outcome.FAILED
    finally:
        alice.close()
        bob.close()
        root.close()


def test_execute_granted_through_a_role_works_inside_the_owners_routine(server: Server) -> None:
    """The routine sets the submitting session's role (MariaDB does not activate a
    definer's default role inside a DEFINER routine); a call without the privilege fails."""
    db = server.database
    role = f"jt_app_{secrets.token_hex(3)}"
    alice_name = server.names["alice"]
    root = _root(server)
    with root.cursor() as cur:
        cur.execute("CREATE TABLE hits (who VARCHAR(80))")
        cur.execute("CREATE PROCEDURE hit(IN w VARCHAR(80)) INSERT INTO hits VALUES (w)")
        cur.execute(f"CREATE ROLE `{role}`")
        cur.execute(f"GRANT EXECUTE ON PROCEDURE `{db}`.`hit` TO `{role}`")
        cur.execute(f"GRANT `{accounts.operator_role(db)}` TO `{role}`")  # still an operator
        cur.execute(f"GRANT `{role}` TO '{alice_name}'@'%'")
        cur.execute(f"SET DEFAULT ROLE `{role}` FOR '{alice_name}'@'%'")
    alice, bob = server.store("alice"), server.store("bob")
    try:
        job = alice.submit("hit", What("call", f"{db}.hit", ("alice",)), ONCE)
        with root.cursor() as cur:
            cur.execute(
                "SELECT body_utf8 FROM mysql.proc WHERE db = %s AND name LIKE %s",
                (db, f"jobtui\\_w\\_{job.id}\\_%"),
            )
            assert cur.fetchone()[0].decode().startswith(f"BEGIN SET ROLE `{role}`; CALL ")
            # bob may not see the procedure: his submit is refused; made for him by hand
            # (as a job that lost its privilege since would look), it fails at run time
            cur.execute(f"GRANT EXECUTE ON PROCEDURE `{db}`.`hit` TO '{server.names['bob']}'@'%'")
        bob.submit("hit", What("call", f"{db}.hit", ("bob",)), ONCE)
        with root.cursor() as cur:
            cur.execute(
                f"REVOKE EXECUTE ON PROCEDURE `{db}`.`hit` FROM '{server.names['bob']}'@'%'"
            )
        with _runner(server):
            alice_run = _wait_run(alice, "hit")
            bob_run = _wait_run(bob, "hit")
        assert alice_run.outcome is Outcome.OK, alice_run.error  # type: ignore[attr-defined]
        assert bob_run.outcome is Outcome.FAILED  # type: ignore[attr-defined]
        assert "1370" in bob_run.error  # type: ignore[attr-defined]  # execute command denied
        with root.cursor() as cur:
            cur.execute("SELECT who FROM hits")
            assert cur.fetchall() == (("alice",),)
    finally:
        alice.close()
        bob.close()
        with root.cursor() as cur:
            cur.execute(f"DROP ROLE IF EXISTS `{role}`")
        root.close()


def test_an_admins_own_jobs_are_refused_while_it_may_alter_every_routine(server: Server) -> None:
    """An admin's role holds ALTER ROUTINE on the database (init, remove), which the keeper
    cannot seal away: it could flip its routine between the runner's check and the call,
    so the runner refuses its call/sql/expr jobs (issue 23) and says what to do."""
    adm = server.store("adm")
    try:
        adm.submit("mine", What("sql", "SELECT 1"), ONCE)
        with _runner(server):
            run = _wait_run(adm, "mine")
        assert run.outcome is Outcome.FAILED  # type: ignore[attr-defined]
        assert "holds ALTER ROUTINE on the database" in run.error  # type: ignore[attr-defined]
        assert "--operator" in run.error  # type: ignore[attr-defined]
    finally:
        adm.close()


def test_sql_jobs_of_every_owner_run_with_that_owners_rights(server: Server) -> None:
    """No more --allow-sql-owner: alice's statement runs as alice (her INSERT privilege
    decides), the runner's own rights never count."""
    db = server.database
    root = _root(server)
    with root.cursor() as cur:
        cur.execute("CREATE TABLE marks (who VARCHAR(80))")
        cur.execute(f"GRANT INSERT ON `{db}`.`marks` TO '{server.names['alice']}'@'%'")
        cur.execute(f"GRANT INSERT ON `{db}`.`marks` TO '{server.names['run']}'@'%'")
    alice, bob = server.store("alice"), server.store("bob")
    try:
        alice.submit("mark", What("sql", "INSERT INTO marks VALUES ('alice')"), ONCE)
        with pytest.raises(InvalidInput):  # bob may not: refused at submit already
            bob.submit("mark", What("sql", "INSERT INTO marks VALUES ('bob')"), ONCE)
        with _runner(server):
            run = _wait_run(alice, "mark")
        assert run.outcome is Outcome.OK, run.error  # type: ignore[attr-defined]
        with root.cursor() as cur:
            cur.execute("SELECT who FROM marks")
            assert cur.fetchall() == (("alice",),)
    finally:
        alice.close()
        bob.close()
        root.close()


# ---------------------------------------------------------------------- reproduction 3


def test_an_expression_is_evaluated_with_the_owners_rights(server: Server) -> None:
    """Repro 3: an INVOKER function that changes rows only when CURRENT_USER() is the
    runner, used in alice's --expr, changes nothing: it runs as alice."""
    db = server.database
    run_account = _account(server, "run")
    root = _root(server)
    with root.cursor() as cur:
        cur.execute(
            "CREATE FUNCTION evil() RETURNS INT SQL SECURITY INVOKER MODIFIES SQL DATA BEGIN "
            f"IF CURRENT_USER() = '{run_account}' THEN "
            f"UPDATE `{db}`.jobtui_job SET description = 'tampered'; END IF; RETURN 60; END"
        )
        cur.execute(f"GRANT EXECUTE ON FUNCTION `{db}`.`evil` TO '{server.names['alice']}'@'%'")
    alice, bob = server.store("alice"), server.store("bob")
    try:
        bob.submit("bobs-job", What("sql", "SELECT 1"), make_schedule("every", every=3600))
        alice.submit(
            "x",
            What("sql", "SELECT 1"),
            make_schedule("expr", expr="NOW() + INTERVAL evil() SECOND"),
        )
        with _runner(server):
            run = _wait_run(alice, "x")
        assert run.outcome is Outcome.OK, run.error  # type: ignore[attr-defined]
        job = alice.get("x")
        assert job.next_run is not None and job.phase != "ERROR"
        assert _description(server, "bobs-job") == [""]
        assert _description(server, "x") == [""]
    finally:
        alice.close()
        bob.close()
        root.close()


def _set_through_view(server: Server, key: str, job_id: int, **columns: str) -> None:
    conn = server.raw(key)
    try:
        with conn.cursor() as cur:
            sets = ", ".join(f"{c} = %s" for c in columns)
            assert cur.execute(
                f"UPDATE jobtui_user_job SET {sets} WHERE id = %s", (*columns.values(), job_id)
            )
    finally:
        conn.close()


def _create_as(server: Server, key: str, routine: routines.Routine) -> None:
    """``key``'s own session creates the routine by hand (bypassing jobtui's checks) and
    has the keeper seal it, as it may (an unsealed one is refused before anything else)."""
    conn = server.raw(key)
    try:
        with conn.cursor() as cur:
            cur.execute(routine.create_sql())
            cur.execute("CALL jobtui_seal(%s, %s)", (routine.type, routine.name))
    finally:
        conn.close()


def _function_as(server: Server, key: str, ddl: str) -> None:
    """``key``'s own session creates a helper function in the jobtui database."""
    conn = server.raw(key)
    try:
        with conn.cursor() as cur:
            cur.execute(ddl)
    finally:
        conn.close()


def test_an_expression_reading_other_owners_jobs_leaks_nothing(server: Server) -> None:
    """Repro 3: an expression that reads bob's what_target through an INVOKER function
    (it passes the syntactic check), set through the view with a matching function made
    by hand so that the runner does evaluate it, runs as alice: refused, the job goes to
    ERROR with the reason, next_run stays empty. The same subquery written into the
    expression itself is not even evaluated: the row check marks the job BROKEN."""
    db = server.database
    role = accounts.operator_role(db)
    alice, bob = server.store("alice"), server.store("bob")
    try:
        bob.submit("bobs-job", What("sql", "SELECT 'bob secret'"), ONCE)
        daily = make_schedule("expr", expr="NOW() + INTERVAL 1 DAY")
        job = alice.submit("x", What("sql", "SELECT 1"), daily)
        inline = alice.submit("inline", What("sql", "SELECT 1"), daily)
        _function_as(
            server,
            "alice",
            "CREATE FUNCTION leak_len() RETURNS INT SQL SECURITY INVOKER READS SQL DATA "
            f"RETURN (SELECT LENGTH(what_target) FROM `{db}`.jobtui_job WHERE name = 'bobs-job')",
        )
        leak = f"NOW() + INTERVAL `{db}`.leak_len() SECOND"
        with pytest.raises(InvalidInput):  # jobtui itself refuses it at change (as alice)
            alice.change("x", expr=leak)
        _set_through_view(server, "alice", job.id, schedule_expr=leak)
        _create_as(server, "alice", routines.for_expr(job.id, leak, role))
        subquery = (
            f"NOW() + INTERVAL (SELECT LENGTH(what_target) FROM `{db}`.jobtui_job "
            "WHERE name = 'bobs-job') SECOND"
        )
        _set_through_view(server, "alice", inline.id, schedule_expr=subquery)
        with _runner(server):
            run = _wait_run(alice, "x")
            assert wait_for(lambda: alice.get("inline").broken, 10)
        assert run.outcome is Outcome.FAILED  # type: ignore[attr-defined]
        assert "SELECT command denied" in run.error  # type: ignore[attr-defined]
        assert "jobtui_job" in run.error  # type: ignore[attr-defined]
        job = alice.get("x")
        assert job.phase == "ERROR" and job.next_run is None
        assert "expression failed" in (job.last_error or "")
        inline_job = alice.get("inline")
        assert "'SELECT' is not allowed" in (inline_job.broken_reason or "")
        assert _finished_runs(alice, "inline") == []  # never evaluated, never run
        assert "bob secret" not in repr(alice.runs("x")) + repr(alice.list_jobs())
    finally:
        alice.close()
        bob.close()


# ---------------------------------------------------------------------- reproduction 4


def test_a_slow_expression_is_cut_off_and_others_stay_on_time(server: Server) -> None:
    """Repro 4: a slow expression set through the view. ``SLEEP`` written into it is
    never evaluated (the row check marks the job BROKEN); a slow function that passes the
    check is cut off after EXPR_TIMEOUT when alice made a matching routine by hand, and
    refused at once without one. Either way the job is in ERROR with the reason within
    seconds, and bob's job keeps running on a one-thread pool."""
    db = server.database
    role = accounts.operator_role(db)
    _function_as(
        server,
        "alice",
        "CREATE FUNCTION slow15() RETURNS INT SQL SECURITY INVOKER NO SQL RETURN SLEEP(15)",
    )
    slow = f"NOW() + INTERVAL `{db}`.slow15() SECOND"
    alice, bob = server.store("alice"), server.store("bob")
    try:
        bob.submit("tick", What("sql", "SELECT 1"), make_schedule("every", every=1))
        daily = make_schedule("expr", expr="NOW() + INTERVAL 1 DAY")
        cut = alice.submit("cut", What("sql", "SELECT 1"), daily)
        refused = alice.submit("refused", What("sql", "SELECT 1"), daily)
        literal = alice.submit("literal", What("sql", "SELECT 1"), daily)
        for job in (cut, refused):
            _set_through_view(server, "alice", job.id, schedule_expr=slow)
        _set_through_view(
            server, "alice", literal.id, schedule_expr="NOW() + INTERVAL SLEEP(15) SECOND"
        )
        _create_as(server, "alice", routines.for_expr(cut.id, slow, role))
        t0 = time.monotonic()
        with _runner(server, threads=1):
            assert wait_for(lambda: all(_finished_runs(alice, n) for n in ("cut", "refused")), 12)
            elapsed = time.monotonic() - t0
            ticks_before = len(_finished_runs(bob, "tick"))
            time.sleep(3)
            ticks_after = len(_finished_runs(bob, "tick"))
        assert elapsed < 8
        for name, reason in (("cut", "took longer than 2 s"), ("refused", "does not exist")):
            job = alice.get(name)
            assert job.phase == "ERROR" and job.next_run is None, name
            assert reason in (job.last_error or ""), job.last_error
            [run] = _finished_runs(alice, name)
            assert run.outcome is Outcome.FAILED and reason in (run.error or "")
        literal_job = alice.get("literal")
        assert literal_job.broken and "'SLEEP' is not allowed" in (literal_job.broken_reason or "")
        assert _finished_runs(alice, "literal") == []
        assert ticks_after - ticks_before >= 2  # bob's job kept its slots
        ok = [r for r in _finished_runs(bob, "tick") if r.outcome is Outcome.OK]
        assert len(ok) >= 3
    finally:
        alice.close()
        bob.close()


def test_sqlite_expressions_are_bounded_in_time(sqlite_url: str) -> None:
    store = open_store(sqlite_url)
    try:
        endless = (
            "(WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT max(x) FROM c)"
        )
        t0 = time.monotonic()
        with pytest.raises(InvalidInput, match="took longer than 2 s"):
            store.evaluate_expr(endless, utcnow())
        assert time.monotonic() - t0 < owner_code.EXPR_TIMEOUT + 2
    finally:
        store.close()


# ---------------------------------------------------------------------- reproduction 8


def test_abort_stops_a_definer_routine_of_another_account_within_2s(server: Server) -> None:
    """Repro 8: the runner's KILL QUERY reaches a run in alice's DEFINER context (its
    grant carries CONNECTION ADMIN)."""
    db = server.database
    conn = server.raw("alice")
    try:
        with conn.cursor() as cur:  # alice's own DEFINER procedure in the jobtui database
            cur.execute("CREATE PROCEDURE slow30() SQL SECURITY DEFINER BEGIN DO SLEEP(30); END")
    finally:
        conn.close()
    alice = server.store("alice")
    try:
        alice.submit("slow", What("call", f"{db}.slow30"), ONCE)
        with _runner(server):
            assert wait_for(lambda: alice.get("slow").running, 15)
            time.sleep(0.5)
            t0 = time.monotonic()
            alice.abort("slow")
            run = _wait_run(alice, "slow", timeout=5)
            took = time.monotonic() - t0
        assert run.outcome is Outcome.ABORTED, run.error  # type: ignore[attr-defined]
        assert took < 2.0, took
    finally:
        alice.close()


# ---------------------------------------------------------------------- verification


def test_a_definition_changed_through_the_view_is_refused_until_changed_by_the_owner(
    server: Server, capsys: pytest.CaptureFixture[str]
) -> None:
    db = server.database
    root = _root(server)
    with root.cursor() as cur:
        cur.execute("CREATE TABLE marks (who VARCHAR(80))")
        cur.execute(f"GRANT INSERT ON `{db}`.`marks` TO '{server.names['alice']}'@'%'")
    alice = server.store("alice")
    try:
        job = alice.submit("mark", What("sql", "INSERT INTO marks VALUES ('one')"), ONCE)
        _set_through_view(server, "alice", job.id, what_target="INSERT INTO marks VALUES ('two')")
        with _runner(server):
            run = _wait_run(alice, "mark")
            assert run.outcome is Outcome.FAILED  # type: ignore[attr-defined]
            assert "changed outside jobtui" in run.error  # type: ignore[attr-defined]
            assert "jobtui change mark --sql" in run.error  # type: ignore[attr-defined]
            with root.cursor() as cur:
                cur.execute("SELECT COUNT(*) FROM marks")
                assert cur.fetchone() == (0,)
            # the owner's change makes the routine again: the next run goes through
            code = main(
                [
                    "--db",
                    server.url_for("alice"),
                    "change",
                    "mark",
                    "--sql",
                    "INSERT INTO marks VALUES ('two')",
                ]
            )
            assert code == 0, capsys.readouterr().err
            alice.run_now("mark")
            assert wait_for(
                lambda: any(r.outcome is Outcome.OK for r in _finished_runs(alice, "mark")), 15
            )
        with root.cursor() as cur:
            cur.execute("SELECT who FROM marks")
            assert cur.fetchall() == (("two",),)
            # only the new definition's routine is left (retired through the keeper)
            cur.execute(
                "SELECT COUNT(*) FROM mysql.proc WHERE db = %s AND name LIKE %s",
                (db, f"jobtui\\_w\\_{job.id}\\_%"),
            )
            assert cur.fetchone() == (1,)
    finally:
        alice.close()
        root.close()


def test_a_routine_made_by_another_account_is_refused(server: Server) -> None:
    """bob creates the routine alice's (tampered) row names, with the very body jobtui
    would make: its definer is bob, not the owner, so the run is refused."""
    db = server.database
    role = accounts.operator_role(db)
    alice = server.store("alice")
    try:
        job = alice.submit("mine", What("sql", "SELECT 1"), ONCE)
        target = "SELECT 2"
        _set_through_view(server, "alice", job.id, what_target=target)
        routine = routines.for_what(job.id, What("sql", target), role)
        assert routine is not None
        _create_as(server, "bob", routine)
        with _runner(server):
            run = _wait_run(alice, "mine")
        assert run.outcome is Outcome.FAILED  # type: ignore[attr-defined]
        assert f"was created by {_account(server, 'bob')}" in run.error  # type: ignore[attr-defined]
        assert "not by the job's owner" in run.error  # type: ignore[attr-defined]
    finally:
        alice.close()


def test_an_invoker_routine_of_the_owner_is_refused(server: Server) -> None:
    db = server.database
    role = accounts.operator_role(db)
    alice = server.store("alice")
    try:
        job = alice.submit("mine", What("sql", "SELECT 1"), ONCE)
        routine = routines.for_what(job.id, job.what, role)
        assert routine is not None
        conn = server.raw("alice")
        try:
            with conn.cursor() as cur, pytest.raises(pymysql.err.OperationalError) as denied:
                cur.execute(routine.drop_sql())  # sealed: the owner cannot drop it
            assert denied.value.args[0] == 1370
        finally:
            conn.close()
        # only an account that may set another definer can make one in alice's name
        root = _root(server)
        try:
            with root.cursor() as cur:
                cur.execute(routine.drop_sql())
                cur.execute(
                    routine.create_sql()
                    .replace("SQL SECURITY DEFINER", "SQL SECURITY INVOKER")
                    .replace("CREATE ", f"CREATE DEFINER = '{server.names['alice']}'@'%' ", 1)
                )
        finally:
            root.close()
        with _runner(server):
            run = _wait_run(alice, "mine")
        assert run.outcome is Outcome.FAILED  # type: ignore[attr-defined]
        assert "is not SQL SECURITY DEFINER" in run.error  # type: ignore[attr-defined]
    finally:
        alice.close()


# ---------------------------------------------------------------------- submit, change, remove


def test_routines_follow_submit_change_and_remove(server: Server) -> None:
    db = server.database
    alice = server.store("alice")
    root = _root(server)

    def names(job_id: int) -> list[str]:
        with root.cursor() as cur:
            cur.execute(
                "SELECT name, definer, security_type FROM mysql.proc WHERE db = %s AND "
                "(name LIKE %s OR name LIKE %s) ORDER BY name",
                (db, f"jobtui\\_w\\_{job_id}\\_%", f"jobtui\\_x\\_{job_id}\\_%"),
            )
            rows = cur.fetchall()
        assert all(d == _account(server, "alice") and s == "DEFINER" for _n, d, s in rows)
        return [n for n, _d, _s in rows]

    try:
        job = alice.submit(
            "j", What("sql", "SELECT 1"), make_schedule("expr", expr="NOW() + INTERVAL 1 DAY")
        )
        first = names(job.id)
        assert [n[:9] for n in first] == ["jobtui_w_", "jobtui_x_"]
        # sealed (issue 23): the owner cannot drop them itself; the keeper
        # (jobtui_retire) does, while no runner holds the job
        alice.change("j", every=60)  # no expression any more: its function goes
        assert names(job.id) == first[:1]
        alice.change("j", what=What("sql", "SELECT 2"))
        second = names(job.id)
        assert len(second) == 1 and second != first[:1]
        alice.remove("j")
        assert names(job.id) == []
    finally:
        alice.close()
        root.close()


def test_refusals_at_submit_leave_nothing_behind(
    server: Server, capsys: pytest.CaptureFixture[str]
) -> None:
    db = server.database
    alice_url = server.url_for("alice")
    # an expression that is NULL now: the job would never run again
    code = main(["--db", alice_url, "submit", "n", "--sql", "SELECT 1", "--expr", "NULL"])
    _out, err = capsys.readouterr()
    assert code == 2 and "gives NULL now" in err and err.count("\n") == 1
    # an account that may not create routines: the server's reason, exit 2, no row
    root = _root(server)
    with root.cursor() as cur:
        cur.execute(
            f"REVOKE CREATE ROUTINE ON `{db.replace('_', chr(92) + '_')}`.* "
            f"FROM `{accounts.operator_role(db)}`"
        )
    code = main(["--db", alice_url, "submit", "c", "--sql", "SELECT 1", "--once"])
    _out, err = capsys.readouterr()
    assert code == 2 and "refused to create" in err and "Access denied" in err, err
    alice = server.store("alice")
    try:
        assert alice.list_jobs() == []
    finally:
        alice.close()
        root.close()


def test_an_admin_may_not_change_what_another_owners_job_runs(
    server: Server, capsys: pytest.CaptureFixture[str]
) -> None:
    alice = server.store("alice")
    try:
        alice.submit("j", What("sql", "SELECT 1"), make_schedule("every", every=60))
    finally:
        alice.close()
    owner = _account(server, "alice")
    adm = server.url_for("adm")
    for args in (["--sql", "SELECT 2"], ["--expr", "NOW() + INTERVAL 1 DAY"]):
        code = main(["--db", adm, "change", "j", "--owner", owner, *args])
        _out, err = capsys.readouterr()
        assert code == 2 and "only the owner's own session" in err, err
    # everything else it still may do
    assert main(["--db", adm, "change", "j", "--owner", owner, "--every", "90"]) == 0
    assert main(["--db", adm, "pause", "j", "--owner", owner]) == 0
    store = server.store("adm")
    try:
        with pytest.raises(PermissionDenied):
            store.change("j", owner=owner, what=What("sql", "SELECT 3"))
        assert store.get("j", owner=owner).status is Status.PAUSED
        assert store.remove("j", owner=owner).name == "j"
    finally:
        store.close()
    assert main(["--db", server.url_for("alice"), "show", "j"]) == 2


def test_import_creates_the_routines_and_undoes_a_refusal(server: Server, tmp_path: object) -> None:
    db = server.database
    alice = server.store("alice")
    try:
        alice.submit("kept", What("sql", "SELECT 1"), make_schedule("every", every=60))
        data = [
            {
                "name": "kept",
                "what": {"kind": "sql", "target": "SELECT 2"},
                "schedule": {"kind": "every", "every": 60},
            },
            {
                "name": "new",
                "what": {"kind": "sql", "target": "SELECT 3"},
                "schedule": {"kind": "expr", "expr": "NOW() + INTERVAL 1 DAY"},
            },
        ]
        assert alice.import_jobs(data) == (1, 1)
        new = alice.get("new")
        assert new.next_run is not None and new.next_run <= utcnow() + timedelta(seconds=1)
        with _runner(server):
            assert wait_for(lambda: _finished_runs(alice, "new"), 15)
        [run] = _finished_runs(alice, "new")
        assert run.outcome is Outcome.OK, run.error
        # a refusal (no CREATE ROUTINE any more) changes nothing
        root = _root(server)
        with root.cursor() as cur:
            cur.execute(
                f"REVOKE CREATE ROUTINE ON `{db.replace('_', chr(92) + '_')}`.* "
                f"FROM `{accounts.operator_role(db)}`"
            )
        root.close()
        fresh = server.store("alice")
        try:
            # the jobs that exist are unchanged (their routines are there); the new one
            # is written, its routine refused, and the row taken back
            other = {
                "name": "other",
                "what": {"kind": "sql", "target": "SELECT 4"},
                "schedule": {"kind": "every", "every": 60},
            }
            with pytest.raises(InvalidInput, match="refused to create"):
                fresh.import_jobs([*data, other])
            assert sorted(j.name for j in fresh.list_jobs()) == ["kept", "new"]
            changed = {**data[0], "what": {"kind": "sql", "target": "SELECT 5"}}
            with pytest.raises(InvalidInput, match="refused to create"):
                fresh.import_jobs([changed])
            assert fresh.get("kept").what.target == "SELECT 2"
        finally:
            fresh.close()
    finally:
        alice.close()


def test_a_runner_that_cannot_check_runs_nothing_and_blames_itself(server: Server) -> None:
    """Without SELECT on mysql.proc the runner runs no routine: a failed run that says what
    the runner lacks, and an expr job is retried later (not put out of service)."""
    root = _root(server)
    with root.cursor() as cur:
        cur.execute(
            f"REVOKE SELECT ON `mysql`.`proc` FROM `{accounts.runner_role(server.database)}`"
        )
    root.close()
    alice = server.store("alice")
    try:
        alice.submit("call", What("sql", "SELECT 1"), ONCE)
        alice.submit(
            "expr", What("sql", "SELECT 1"), make_schedule("expr", expr="NOW() + INTERVAL 1 DAY")
        )
        with _runner(server):
            runs = {n: _wait_run(alice, n) for n in ("call", "expr")}
        for name, run in runs.items():
            assert run.outcome is Outcome.FAILED, name  # type: ignore[attr-defined]
            assert "needs SELECT on mysql.proc" in run.error, run.error  # type: ignore[attr-defined]
        job = alice.get("expr")
        assert job.next_run is not None and "tried again later" in (job.last_error or "")
    finally:
        alice.close()


def test_a_schedule_change_never_adopts_a_definition_written_by_someone_else(
    server: Server,
) -> None:
    """An admin writes another statement into alice's row (on the table); alice then
    changes only the schedule: her session makes no routine for a statement she never
    gave, so the run stays refused until she gives the definition herself."""
    alice = server.store("alice")
    root = _root(server)
    try:
        job = alice.submit("j", What("sql", "SELECT 1"), ONCE)
        with root.cursor() as cur:
            cur.execute("UPDATE jobtui_job SET what_target = 'SELECT 2' WHERE id = %s", (job.id,))
        alice.change("j", start=utcnow())
        with _runner(server):
            run = _wait_run(alice, "j")
        assert run.outcome is Outcome.FAILED  # type: ignore[attr-defined]
        assert "changed outside jobtui" in run.error  # type: ignore[attr-defined]
    finally:
        alice.close()
        root.close()
