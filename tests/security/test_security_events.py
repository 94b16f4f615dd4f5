"""An adopted event runs with exactly the event's rights (issue 23).

Real MariaDB accounts (``server`` from tests/support/accounts.py). An Event Scheduler event runs
with its definer's own grants and no role; the adopting session of an operator has its
role active. The job made by ``jobtui events adopt`` must not run with that role
(jobtui/core/events.py ``adopt``, docs/events.md, docs/privileges.md).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

import pymysql
import pytest
from support.accounts import Server
from support.mariadb import admin_connection
from support.procs import wait_for

from jobtui.cli import main
from jobtui.core import accounts, events
from jobtui.core.model import Outcome, What
from jobtui.core.runner.pool import RunnerPool
from jobtui.core.schedules import make_schedule
from jobtui.core.store import JobStore

pytestmark = pytest.mark.mariadb

Seen = tuple[str, str | None, int]  # CURRENT_USER(), CURRENT_ROLE(), what it read of secret


def _root(server: Server) -> pymysql.connections.Connection:
    return admin_connection(server.database)


def _as(server: Server, key: str, *statements: str) -> None:
    conn = server.raw(key)
    try:
        with conn.cursor() as cur:
            for statement in statements:
                cur.execute(statement)
    finally:
        conn.close()


def _seen(server: Server) -> set[Seen]:
    conn = _root(server)
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT who, role, secret FROM seen")
            return {(str(w), None if r is None else str(r), int(s)) for w, r, s in cur.fetchall()}
    finally:
        conn.close()


def _clear_seen(server: Server) -> None:
    conn = _root(server)
    try:
        with conn.cursor() as cur:
            cur.execute("DELETE FROM seen")
    finally:
        conn.close()


@contextmanager
def _scheduler_on() -> Iterator[None]:
    """The server's event_scheduler ON for a moment (back as it was after)."""
    conn = admin_connection()
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT @@global.event_scheduler")
            (before,) = cur.fetchone()
            if before == "DISABLED":
                pytest.skip("the server's event_scheduler is DISABLED")
            cur.execute("SET GLOBAL event_scheduler = ON")
        try:
            yield
        finally:
            with conn.cursor() as cur:
                cur.execute(f"SET GLOBAL event_scheduler = {'ON' if before == 'ON' else 'OFF'}")
    finally:
        conn.close()


@contextmanager
def _runner(server: Server) -> Iterator[None]:
    store = server.store("run")
    pool = RunnerPool(store, threads=1, poll=0.1, name="adopted")
    pool.start()
    try:
        yield
    finally:
        pool.stop(grace=0)
        store.close()


def _ran(store: JobStore, name: str) -> bool:
    return any(r.outcome is Outcome.OK for r in store.runs(name))


def _wrapper_bodies(server: Server, job_id: int) -> list[str]:
    conn = _root(server)
    try:
        with conn.cursor() as cur:
            cur.execute(
                "SELECT body_utf8 FROM mysql.proc WHERE db = %s AND name LIKE %s",
                (server.database, f"jobtui\\_w\\_{job_id}\\_%"),
            )
            return [bytes(r[0]).decode() for r in cur.fetchall()]
    finally:
        conn.close()


def test_an_adopted_event_runs_with_exactly_the_events_rights(server: Server) -> None:
    """alice's session has the operator role, which alone may read ``secret``. Her event
    records CURRENT_USER(), CURRENT_ROLE() and what it reads of ``secret`` (-1: refused);
    adopted by her, the job records exactly the same; her ordinary job of the same call
    records the role and the secret, which the adopted one must not."""
    db, alice = server.database, server.names["alice"]
    role = accounts.operator_role(db)
    root = _root(server)
    try:
        with root.cursor() as cur:
            cur.execute("CREATE TABLE secret (x INT)")
            cur.execute("INSERT INTO secret VALUES (42)")
            cur.execute("CREATE TABLE seen (who VARCHAR(200), role VARCHAR(200), secret INT)")
            # INVOKER: it runs with the rights of whatever calls it (the event, the job)
            cur.execute(
                "CREATE PROCEDURE probe() SQL SECURITY INVOKER BEGIN "
                "DECLARE n INT DEFAULT -1; "
                "DECLARE CONTINUE HANDLER FOR 1142 SET n = -1; "
                "SELECT x INTO n FROM secret LIMIT 1; "
                "INSERT INTO seen VALUES (CURRENT_USER(), CURRENT_ROLE(), n); END"
            )
            cur.execute(f"GRANT SELECT ON `{db}`.`secret` TO `{role}`")  # the role only
            for grant in (f"EVENT ON `{db}`.*", f"INSERT ON `{db}`.`seen`"):
                cur.execute(f"GRANT {grant} TO '{alice}'@'%'")
            cur.execute(f"GRANT EXECUTE ON PROCEDURE `{db}`.`probe` TO '{alice}'@'%'")
    finally:
        root.close()
    conn = server.raw("alice")  # her session, as a client makes it: the role is active
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT CURRENT_ROLE(), (SELECT x FROM secret)")
            assert cur.fetchone() == (role, 42)
            cur.execute("CREATE EVENT probe_e ON SCHEDULE EVERY 1 SECOND DO CALL probe()")
    finally:
        conn.close()
    store = server.store("alice")
    try:
        with _scheduler_on():
            assert wait_for(lambda: _seen(server), 15), "the event never ran"
            adoption = events.adopt(store, f"{db}.probe_e")
        time.sleep(1.5)  # a run of the event in flight ends (DISABLE stops no run)
        as_the_event = _seen(server)
        assert as_the_event == {(f"{alice}@%", None, -1)}  # its definer's grants, no role
        job = adoption.job
        assert job.owner == f"{alice}@%"
        assert (job.what.kind, job.what.target) == ("call", f"{db}.probe")
        # the control: her ordinary job of the same call runs with her session's role
        store.submit("plain", What("call", f"{db}.probe"), make_schedule("once"))
        _clear_seen(server)
        with _runner(server):
            both = wait_for(lambda: _ran(store, job.name) and _ran(store, "plain"), 20)
            time.sleep(1.5)  # a few more runs of the adopted job
        assert both, "the jobs did not both run"
        # without the fix both rows are (alice, role, 42): the adopted job had the role
        assert _seen(server) == {(f"{alice}@%", None, -1), (f"{alice}@%", role, 42)}
        failed = [r.error for r in store.runs(job.name) if r.outcome is Outcome.FAILED]
        assert failed == []
        # the adopted job's own rows: exactly what the event recorded
        store.remove("plain")
        _clear_seen(server)
        with _runner(server):
            assert wait_for(lambda: _seen(server), 20), "the adopted job did not run"
            assert _ran(store, job.name)
        assert _seen(server) == as_the_event
        # and its routine sets no role (the runner accepts a routine with or without one)
        assert [b for b in _wrapper_bodies(server, job.id) if "SET ROLE" in b] == []
        # a change that keeps the definition keeps that routine (docs/events.md)...
        store.change(job.name, what=job.what, every=7200.0, description="kept")
        (body,) = _wrapper_bodies(server, job.id)
        assert "SET ROLE" not in body
        # ...a new definition is the owner's new one, made like any job's
        store.change(job.name, what=What("sql", "DO 1"))
        (body,) = _wrapper_bodies(server, job.id)
        assert body.startswith(f"BEGIN SET ROLE `{role}`; ")
    finally:
        store.close()


def test_only_the_definers_own_account_adopts_its_event(
    server: Server, capsys: pytest.CaptureFixture[str]
) -> None:
    """An admin does not adopt alice's event on her behalf (the job would be the admin's,
    with the admin's rights); an event whose definer is a role has rights no account's job
    has. Both: exit 2, the reason and what is accepted, nothing changed."""
    db, alice = server.database, server.names["alice"]
    role = f"jt_evrole_{db[-6:]}"
    root = _root(server)
    try:
        with root.cursor() as cur:
            cur.execute(f"GRANT EVENT ON `{db}`.* TO '{alice}'@'%'")
            cur.execute(f"GRANT EVENT ON `{db}`.* TO '{server.names['adm']}'@'%'")
            cur.execute(f"CREATE ROLE `{role}`")
            cur.execute(f"GRANT EVENT ON `{db}`.* TO `{role}`")
            cur.execute(f"CREATE DEFINER = `{role}` EVENT by_role ON SCHEDULE EVERY 1 HOUR DO DO 1")
        _as(server, "alice", "CREATE EVENT hers ON SCHEDULE EVERY 1 HOUR DO DO 1")
        cases = (
            ("adm", "hers", f"its definer {alice}@%", f"connect as {alice}@%"),
            ("alice", "by_role", f"the role {role}", "give it an account as definer"),
        )
        for key, event, why, accepted in cases:
            code = main(["--db", server.url_for(key), "events", "adopt", f"{db}.{event}"])
            err = " ".join(capsys.readouterr().err.split())
            assert code == 2, err
            assert why in err and accepted in err, err
        with root.cursor() as cur:
            cur.execute(
                "SELECT EVENT_NAME, STATUS, DEFINER FROM information_schema.EVENTS "
                "WHERE EVENT_SCHEMA = %s ORDER BY EVENT_NAME",
                (db,),
            )
            assert cur.fetchall() == (
                ("by_role", "ENABLED", f"{role}@"),
                ("hers", "ENABLED", f"{alice}@%"),
            )
            cur.execute("SELECT COUNT(*) FROM jobtui_job")
            assert cur.fetchone() == (0,)
            cur.execute("DROP EVENT by_role")
    finally:
        with root.cursor() as cur:
            cur.execute(f"DROP ROLE IF EXISTS `{role}`")
        root.close()
