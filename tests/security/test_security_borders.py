"""Security borders against real MariaDB accounts (issue #11, reproductions 7 and 11).

- Named locks: an operator can neither find a job's lock (``IS_USED_LOCK``)
  nor take it (``GET_LOCK``) to stop the job, because the names are a keyed
  digest whose key (``jobtui_secret``) operators may not read.
- Owners: an owner is one account, user and host. Through the operators' view
  nobody can write an owner that is not its own account (another host, a
  trailing space, another case), and jobtui never takes the owner from input.

docs/privileges.md tells the rules these tests hold.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterator
from datetime import timedelta

import pymysql
import pytest
from support.accounts import Server, grant_kind
from support.mariadb import admin_connection

from jobtui.core import lock_names
from jobtui.core.backends.mysql import operator_views
from jobtui.core.errors import JobtuiError, PermissionDenied
from jobtui.core.model import Outcome, What
from jobtui.core.retention import prune_lock_name
from jobtui.core.runner.pool import RunnerPool
from jobtui.core.schedules import make_schedule
from jobtui.core.store import open_store

pytestmark = pytest.mark.mariadb

HOURLY = make_schedule("every", every=3600)
CHECK_OPTION_FAILED = 1369
DENIED = 1142


def _scalar(conn: pymysql.connections.Connection, sql: str, *args: object) -> object:
    with conn.cursor() as cur:
        cur.execute(sql, args)
        row = cur.fetchone()
        return None if row is None else row[0]


# ---------------------------------------------------------------------- named locks (7)


def test_operators_cannot_read_the_lock_key_runners_and_admins_can(server: Server) -> None:
    alice = server.raw("alice")
    try:
        with pytest.raises(pymysql.err.OperationalError) as denied:
            _scalar(alice, "SELECT value FROM jobtui_secret")
        assert denied.value.args[0] == DENIED
    finally:
        alice.close()
    alice_store = server.store("alice")
    try:
        with pytest.raises(PermissionDenied, match="jobtui_secret"):
            alice_store.lock_key()
    finally:
        alice_store.close()
    keys = set()
    for key in ("run", "adm"):
        store = server.store(key)
        try:
            keys.add(store.lock_key())
        finally:
            store.close()
    assert len(keys) == 1
    (key,) = keys
    assert len(key) == 64 and int(key, 16) >= 0  # 256 random bits, hex


def test_each_database_gets_its_own_random_key_once(server: Server) -> None:
    root = admin_connection(server.database)
    try:
        first = _scalar(root, "SELECT value FROM jobtui_secret WHERE `key` = 'lock_key'")
        # init again (any admin start does): the key stays
        store = open_store(server.url)
        try:
            store.init()
            assert store.lock_key() == first
        finally:
            store.close()
        assert _scalar(root, "SELECT COUNT(*) FROM jobtui_secret") == 1
    finally:
        root.close()
    other = f"jobtui_t_{secrets.token_hex(6)}"
    root = admin_connection()
    with root.cursor() as cur:
        cur.execute(f"CREATE DATABASE `{other}`")
    store = open_store(server.url.rsplit("/", 1)[0] + f"/{other}")
    try:
        assert store.lock_key() != first  # names differ from database to database
    finally:
        store.close()
        with root.cursor() as cur:
            cur.execute(f"DROP DATABASE IF EXISTS `{other}`")
        root.close()


@pytest.fixture
def runner_pool(server: Server) -> Iterator[RunnerPool]:
    store = server.store("run")
    pool = RunnerPool(store, threads=2, poll=0.2, name="borders")
    yield pool
    pool.stop(grace=0)
    store.close()


def test_an_operator_cannot_find_or_take_a_running_jobs_lock(
    server: Server, runner_pool: RunnerPool
) -> None:
    db = server.database
    adm = server.store("adm")
    bob = server.store("bob")  # an operator: an admin's own jobs are refused (issue 23)
    job = bob.submit("tick", What("sql", "DO SLEEP(0.3)"), make_schedule("every", every=1))
    # alice takes every name the lock of that job (and the pruners') had before
    holder = server.raw("alice")
    prober = server.raw("alice")
    root = admin_connection(db)
    try:
        old_names = [f"jobtui:{db}:{job.id}", f"jobtui:{db}:prune"]
        for name in old_names:
            assert _scalar(holder, "SELECT GET_LOCK(%s, 0)", name) == 1
        holder_id = _scalar(holder, "SELECT CONNECTION_ID()")
        key = adm.lock_key()
        real = lock_names.lock_name(key, db, job.id)
        assert db not in real and str(job.id) not in real.split(":", 1)[0]

        runner_pool.start()
        seen_by_alice: set[object] = set()
        seen_by_root: set[object] = set()
        deadline = time.monotonic() + 4.5
        while time.monotonic() < deadline:
            for name in old_names:
                seen_by_alice.add(_scalar(prober, "SELECT IS_USED_LOCK(%s)", name))
            seen_by_root.add(_scalar(root, "SELECT IS_USED_LOCK(%s)", real))
            time.sleep(0.02)
        # the job ran on time, every slot, while alice held the old names
        runs = [r for r in bob.runs("tick", limit=100) if r.outcome is not Outcome.RUNNING]
        assert len(runs) >= 3, runs
        assert all(r.outcome is Outcome.OK for r in runs), [(r.outcome, r.error) for r in runs]
        assert all(r.skipped == 0 for r in runs)
        for r in runs:
            assert r.started is not None
            assert r.started - r.scheduled_for < timedelta(seconds=0.9), r
        # alice saw only her own connection on the old names: nothing about the job
        assert seen_by_alice == {holder_id}
        # the real lock was in use (by the runner), under a name alice cannot compute
        assert seen_by_root - {None}, "the runner never held the job's keyed lock"
        assert holder_id not in seen_by_root
        # the pruners' lock is keyed too: alice's old name does not stop a prune
        run_store = runner_pool.store
        assert isinstance(run_store.prune_runs(keep=None, keep_days=30, wait=0.3), int)
        assert _scalar(root, "SELECT IS_FREE_LOCK(%s)", prune_lock_name(key, db)) == 1
    finally:
        holder.close()
        prober.close()
        root.close()
        adm.close()
        bob.close()


def test_a_runner_without_the_key_says_what_to_do(server: Server) -> None:
    root = admin_connection(server.database)
    try:
        with root.cursor() as cur:
            cur.execute("DELETE FROM jobtui_secret")
        store = server.store("run")  # a runner may not create it
        try:
            with pytest.raises(JobtuiError, match="jobtui init"):
                RunnerPool(store, threads=1).start()
        finally:
            store.close()
        assert _scalar(root, "SELECT COUNT(*) FROM jobtui_secret") == 0
        store = server.store("adm")  # an admin's start creates it
        try:
            assert len(store.lock_key()) == 64
        finally:
            store.close()
    finally:
        root.close()


# ---------------------------------------------------------------------- owners (11)


def _forgeries(server: Server) -> list[str]:
    user = server.names["alice"]
    return [
        f"{user}@otherhost",  # the same user name on another host: another account
        f"{user} @%",  # a trailing space (utf8mb4_bin pads: 'alice ' = 'alice')
        f"{user}@10.9.9.9",
        f"{user.upper()}@%",  # user names are case-sensitive
        f" {user}@%",
        user,  # no host at all
        f"{user}@",
    ]


def test_an_operator_cannot_write_a_forged_owner_through_the_view(server: Server) -> None:
    alice_store = server.store("alice")
    try:
        a = alice_store.submit("a_job", What("sql", "SELECT 1"), HOURLY)
    finally:
        alice_store.close()
    root = admin_connection(server.database)
    cols = operator_views.operator_columns()  # what an operator may write (not the bookkeeping)
    with root.cursor() as cur:
        # another account of the same user name exists (the one alice would borrow from)
        cur.execute(f"CREATE USER '{server.names['alice']}'@'otherhost'")
    conn = server.raw("alice")
    try:
        with conn.cursor() as cur:
            cur.execute(f"SELECT {', '.join(cols)} FROM jobtui_user_job WHERE id = %s", (a.id,))
            row = list(cur.fetchone())
            for forged in _forgeries(server):
                with pytest.raises(pymysql.err.MySQLError) as check:
                    cur.execute(
                        "UPDATE jobtui_user_job SET owner = %s WHERE id = %s", (forged, a.id)
                    )
                assert check.value.args[0] == CHECK_OPTION_FAILED, forged
                planted = dict(zip(cols, row, strict=True))
                planted.update(owner=forged, name=f"planted{secrets.token_hex(2)}")
                with pytest.raises(pymysql.err.MySQLError) as check:
                    cur.execute(
                        f"INSERT INTO jobtui_user_job ({', '.join(cols)}) "
                        f"VALUES ({', '.join(['%s'] * len(cols))})",
                        [planted[c] for c in cols],
                    )
                assert check.value.args[0] == CHECK_OPTION_FAILED, forged
            # her own owner, as jobtui wrote it, still passes the check option
            assert (
                cur.execute(
                    "UPDATE jobtui_user_job SET description = 'mine' WHERE id = %s", (a.id,)
                )
                == 1
            )
        # nothing changed: one job, alice's, with her real owner
        with root.cursor() as cur:
            cur.execute("SELECT id, owner, description FROM jobtui_job")
            assert cur.fetchall() == ((a.id, a.owner, "mine"),)
    finally:
        conn.close()
        with root.cursor() as cur:
            cur.execute(f"DROP USER IF EXISTS '{server.names['alice']}'@'otherhost'")
        root.close()


def test_rows_of_a_forged_owner_are_not_in_the_view(server: Server) -> None:
    """A row an admin (or an old version) wrote with such an owner: alice does not see it."""
    alice_store = server.store("alice")
    try:
        a = alice_store.submit("a_job", What("sql", "SELECT 1"), HOURLY)
        root = admin_connection(server.database)
        try:
            for i, forged in enumerate(_forgeries(server)):
                with root.cursor() as cur:
                    cur.execute(
                        "INSERT INTO jobtui_job (owner, name, description, what_kind, what_target, "
                        "what_args, schedule_kind, schedule_interval, schedule_anchor, status, "
                        "intent, phase, running, broken, failures, max_failures, cycles, run_now, "
                        "abort_requested, total_time, created, updated) SELECT %s, %s, "
                        "description, what_kind, what_target, what_args, schedule_kind, "
                        "schedule_interval, schedule_anchor, status, intent, phase, running, "
                        "broken, failures, max_failures, cycles, run_now, abort_requested, "
                        "total_time, created, updated FROM jobtui_job WHERE id = %s",
                        (forged, f"f{i}", a.id),
                    )
        finally:
            root.close()
        assert [j.name for j in alice_store.list_jobs()] == ["a_job"]
    finally:
        alice_store.close()
    conn = server.raw("alice")  # the view itself, not only jobtui's own owner filter
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT name FROM jobtui_user_job")
            assert cur.fetchall() == (("a_job",),)
    finally:
        conn.close()


def test_an_owner_with_a_host_pattern_or_netmask_sees_its_own_jobs(server: Server) -> None:
    root = admin_connection(server.database)
    sfx = secrets.token_hex(3)
    accounts = {f"jt_pat_{sfx}": "127.0.0.%", f"jt_nm_{sfx}": "127.0.0.0/255.0.0.0"}
    try:
        with root.cursor() as cur:
            for user, host in accounts.items():
                cur.execute(f"CREATE USER '{user}'@'{host}' IDENTIFIED BY 'pw-{sfx}'")
        for user, host in accounts.items():
            grant_kind(server, "operator", f"{user}@{host}")
            url = server.url.replace("://root@", f"://{user}:pw-{sfx}@")
            store = open_store(url)
            try:
                assert store.owner == f"{user}@{host}"
                store.submit("mine", What("sql", "SELECT 1"), HOURLY)
                assert [(j.name, j.owner) for j in store.list_jobs()] == [("mine", store.owner)]
            finally:
                store.close()
    finally:
        with root.cursor() as cur:
            for user, host in accounts.items():
                cur.execute(f"DROP USER IF EXISTS '{user}'@'{host}'")
        root.close()


def test_the_owner_is_never_taken_from_input(server: Server) -> None:
    alice, bob = server.store("alice"), server.store("bob")
    try:
        item = {
            "name": "imported",
            "owner": bob.owner,
            "what": {"kind": "sql", "target": "SELECT 1"},
            "schedule": {"kind": "every", "every": 3600},
        }
        assert alice.import_jobs([item]) == (1, 0)
        assert [(j.name, j.owner) for j in alice.list_jobs()] == [("imported", alice.owner)]
        assert bob.list_jobs() == []
    finally:
        alice.close()
        bob.close()
