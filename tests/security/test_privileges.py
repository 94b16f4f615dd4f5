"""Who may do what, enforced by MariaDB: real accounts, roles, views and grants.

Each test creates its own accounts (``jt_<role>_<random>``) and drops them
afterwards, with the roles of the test's database (``jobtui_operator_<db>``,
``jobtui_admin_<db>``, ``jobtui_runner_<db>``: each belongs to one database).
What jobs may do when they run (the owner's rights) is tested in
tests/security/test_security_routines.py.
"""

from __future__ import annotations

import json
import secrets
from pathlib import Path

import pymysql
import pytest
from support.accounts import Server, grant_kind
from support.mariadb import MYSQL_SERVER, admin_connection
from support.samples import HOURLY

from jobtui.cli import main
from jobtui.core import accounts
from jobtui.core.accounts import parse_account
from jobtui.core.backends.mysql import operator_views
from jobtui.core.backends.mysql.grants import grant_statements
from jobtui.core.errors import InvalidInput, JobNotFound, PermissionDenied
from jobtui.core.model import What
from jobtui.core.schedules import make_schedule
from jobtui.core.store import open_store

pytestmark = pytest.mark.mariadb

ONCE = make_schedule("once")


def _name(server: Server, key: str) -> str:
    return server.names[key]


def _cli(capsys: pytest.CaptureFixture[str], url: str, *args: str) -> tuple[int, str, str]:
    code = main(["--db", url, *args])
    out, err = capsys.readouterr()
    return code, out, err


# ---------------------------------------------------------------------- operators


def test_operators_see_and_change_only_their_own_jobs_through_jobtui(
    server: Server, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    alice, bob = server.url_for("alice"), server.url_for("bob")
    for url, name in ((alice, "a_job"), (bob, "b_job"), (alice, "same"), (bob, "same")):
        code, _out, err = _cli(capsys, url, "submit", name, "--sql", "SELECT 1", "--every", "60")
        assert code == 0, err
    code, out, _ = _cli(capsys, alice, "list", "--json")
    mine = json.loads(out)
    assert sorted(j["name"] for j in mine) == ["a_job", "same"]
    assert {j["owner"] for j in mine} == {f"{_name(server, 'alice')}@%"}

    # steering: alice's pause of "same" pauses hers, not bob's; bob's job is unknown to her
    assert _cli(capsys, alice, "pause", "same")[0] == 0
    code, _out, err = _cli(capsys, alice, "pause", "b_job")
    assert code == 2 and "unknown job 'b_job'" in err
    assert _cli(capsys, alice, "remove", "b_job")[0] == 2
    code, out, _ = _cli(capsys, bob, "show", "same", "--json")
    assert json.loads(out)["status"] == "ENABLED"
    code, out, _ = _cli(capsys, alice, "show", "same", "--json")
    assert json.loads(out)["status"] == "PAUSED"
    assert _cli(capsys, alice, "resume", "same")[0] == 0
    assert _cli(capsys, alice, "change", "a_job", "--every", "120")[0] == 0
    assert _cli(capsys, alice, "broken", "a_job", "--on")[0] == 0

    # --all is DBA_JOBS: refused for an operator, with what to do
    for verb in (["list", "--all"], ["log", "--all"], ["export", "--all"]):
        code, out, err = _cli(capsys, alice, *verb)
        assert code == 2 and out == ""
        assert "needs an admin account" in err and "jobtui_admin" in err and err.count("\n") == 1
    code, _out, err = _cli(capsys, alice, "prune")
    assert code == 2 and "operator" in err
    assert _cli(capsys, alice, "runners")[0] == 0
    code, out, _ = _cli(capsys, alice, "export")
    assert sorted(j["name"] for j in json.loads(out)) == ["a_job", "same"]
    export = tmp_path / "alice.json"
    export.write_text(out)
    code, out, _ = _cli(capsys, alice, "import", str(export))
    assert code == 0 and "0 created, 2 changed" in out

    # the admin sees and steers everything
    adm = server.url_for("adm")
    code, out, _ = _cli(capsys, adm, "list", "--all", "--json")
    assert sorted((j["owner"].split("@")[0], j["name"]) for j in json.loads(out)) == sorted(
        [
            (_name(server, "alice"), "a_job"),
            (_name(server, "alice"), "same"),
            (_name(server, "bob"), "b_job"),
            (_name(server, "bob"), "same"),
        ]
    )
    store = server.store("adm")
    try:
        assert store.sees_all
        bob_owner = f"{_name(server, 'bob')}@%"
        store.pause("b_job", owner=bob_owner)
        assert store.get("b_job", owner=bob_owner).status.value == "PAUSED"
        store.broken("a_job", False, owner=f"{_name(server, 'alice')}@%")
    finally:
        store.close()
    code, out, _ = _cli(capsys, bob, "show", "b_job", "--json")
    assert json.loads(out)["status"] == "PAUSED"
    code, out, _ = _cli(capsys, alice, "show", "a_job", "--json")
    assert json.loads(out)["status"] == "ENABLED"
    assert _cli(capsys, alice, "remove", "a_job")[0] == 0
    code, out, _ = _cli(capsys, adm, "list", "--all", "--json")
    assert sorted(j["name"] for j in json.loads(out)) == ["b_job", "same", "same"]


def test_an_admin_names_another_owners_job_with_owner(
    server: Server, capsys: pytest.CaptureFixture[str]
) -> None:
    alice, bob, adm = (server.url_for(k) for k in ("alice", "bob", "adm"))
    bob_owner = f"{_name(server, 'bob')}@%"
    for url in (alice, bob):
        assert _cli(capsys, url, "submit", "same", "--sql", "SELECT 1", "--every", "60")[0] == 0

    # the admin steers bob's job by naming its owner; alice's job of that name is untouched
    for args in (["pause"], ["broken", "--on"], ["broken", "--off"], ["change", "--every", "90"]):
        code, _out, err = _cli(capsys, adm, *args, "same", "--owner", bob_owner)
        assert code == 0, (args, err)
    code, out, _ = _cli(capsys, adm, "show", "same", "--owner", bob_owner, "--json")
    shown = json.loads(out)
    assert (shown["owner"], shown["status"]) == (bob_owner, "PAUSED")
    assert shown["schedule"]["every"] == 90.0 and shown["upcoming"] == []
    code, out, _ = _cli(capsys, alice, "show", "same", "--json")
    assert json.loads(out)["status"] == "ENABLED"
    code, out, _ = _cli(capsys, adm, "log", "same", "--owner", bob_owner, "--json")
    assert code == 0 and json.loads(out) == []

    # an operator naming another owner finds nothing: the database hides bob's rows from alice
    for args in (["show"], ["pause"], ["resume"], ["remove"]):
        code, out, err = _cli(capsys, alice, *args, "same", "--owner", bob_owner)
        assert code == 2 and out == "" and f"unknown job 'same' for owner '{bob_owner}'" in err
    code, out, _ = _cli(capsys, bob, "show", "same", "--json")
    assert json.loads(out)["status"] == "PAUSED"
    assert _cli(capsys, adm, "remove", "same", "--owner", bob_owner)[0] == 0
    code, out, _ = _cli(capsys, adm, "list", "--all", "--json")
    assert [j["owner"].split("@")[0] for j in json.loads(out)] == [_name(server, "alice")]


def test_a_plain_client_cannot_get_around_the_views(server: Server) -> None:
    alice_store, bob_store = server.store("alice"), server.store("bob")
    try:
        assert not alice_store.sees_all
        a = alice_store.submit("a_job", What("sql", "SELECT 1"), HOURLY)
        b = bob_store.submit("b_job", What("sql", "SELECT 1"), HOURLY)
        # the store's own API cannot reach the other's rows either
        with pytest.raises(JobNotFound):
            alice_store.get("b_job", owner=b.owner)
        assert alice_store.get_by_id(b.id) is None
        assert [j.name for j in alice_store.list_jobs(all_owners=True)] == ["a_job"]
    finally:
        alice_store.close()
        bob_store.close()
    conn = server.raw("alice")
    try:
        with conn.cursor() as cur:
            for table in ("jobtui_job", "jobtui_run"):
                with pytest.raises(pymysql.err.OperationalError) as denied:
                    cur.execute(f"SELECT * FROM {table}")
                assert denied.value.args[0] == 1142
            with pytest.raises(pymysql.err.OperationalError):
                cur.execute("UPDATE jobtui_job SET intent = 'PAUSED'")
            cur.execute("SELECT id, name FROM jobtui_user_job")
            assert cur.fetchall() == ((a.id, "a_job"),)
            # another owner's row through the view: not there
            assert (
                cur.execute("UPDATE jobtui_user_job SET intent = 'PAUSED' WHERE id = %s", (b.id,))
                == 0
            )
            assert cur.execute("DELETE FROM jobtui_user_job WHERE id = %s", (b.id,)) == 0
            # writing a row for someone else: refused by the check option
            with pytest.raises(pymysql.err.MySQLError) as check:
                cur.execute("UPDATE jobtui_user_job SET owner = %s WHERE id = %s", (b.owner, a.id))
            assert check.value.args[0] == 1369
            cur.execute(
                "SELECT "
                + ", ".join(operator_views.operator_columns())
                + " FROM jobtui_user_job WHERE id = %s",
                (a.id,),
            )
            row = list(cur.fetchone())
            cols = operator_views.operator_columns()  # what an operator may write
            row[cols.index("owner")] = b.owner
            row[cols.index("name")] = "planted"
            with pytest.raises(pymysql.err.MySQLError) as check:
                cur.execute(
                    f"INSERT INTO jobtui_user_job ({', '.join(cols)}) "
                    f"VALUES ({', '.join(['%s'] * len(cols))})",
                    row,
                )
            assert check.value.args[0] == 1369
            # locking through the view works (the store's steering relies on it)
            conn.begin()
            cur.execute("SELECT id FROM jobtui_user_job WHERE id = %s FOR UPDATE", (a.id,))
            assert cur.fetchall() == ((a.id,),)
            conn.rollback()
    finally:
        conn.close()
    admin = admin_connection(server.database)
    with admin.cursor() as cur:
        cur.execute("SELECT name, intent FROM jobtui_job ORDER BY name")
        assert cur.fetchall() == (("a_job", "ENABLED"), ("b_job", "ENABLED"))
    admin.close()


def test_an_account_without_grants_is_told_what_to_do(
    server: Server, capsys: pytest.CaptureFixture[str]
) -> None:
    name = f"jt_none_{secrets.token_hex(3)}"
    conn = admin_connection()
    with conn.cursor() as cur:
        cur.execute(f"CREATE USER '{name}'@'%'")
    try:
        url = server.url.replace("://root@", f"://{name}@")
        code, out, err = _cli(capsys, url, "list")  # no privilege at all on the database
        assert code == 1 and out == "" and "Access denied" in err and err.count("\n") == 1
        with conn.cursor() as cur:
            cur.execute(f"GRANT SELECT ON `{server.database}`.`jobtui_meta` TO '{name}'@'%'")
        code, out, err = _cli(capsys, url, "list")
        assert code == 2 and out == ""
        assert "may read neither" in err and "jobtui grant" in err and err.count("\n") == 1
    finally:
        with conn.cursor() as cur:
            cur.execute(f"DROP USER IF EXISTS '{name}'@'%'")
        conn.close()


def test_an_admin_account_recreates_the_views_with_its_role_as_definer(
    server: Server, capsys: pytest.CaptureFixture[str]
) -> None:
    alice = server.store("alice")
    try:
        alice.submit("mine", What("sql", "SELECT 1"), HOURLY)
    finally:
        alice.close()
    admin = admin_connection(server.database)
    with admin.cursor() as cur:
        cur.execute(f"DROP VIEW {operator_views.USER_JOB_VIEW}, {operator_views.USER_RUN_VIEW}")
        # the operator role's grants on the views went with them: grant again below
        cur.execute("DELETE FROM jobtui_meta WHERE `key` = 'views'")
    code, out, err = _cli(capsys, server.url_for("adm"), "init")
    assert code == 0, err
    with admin.cursor() as cur:
        cur.execute(
            "SELECT DEFINER FROM information_schema.VIEWS WHERE TABLE_SCHEMA = %s",
            (server.database,),
        )
        assert {r[0] for r in cur.fetchall()} == {f"{accounts.admin_role(server.database)}@"}
    admin.close()
    grant_kind(server, "operator", _name(server, "alice"))
    capsys.readouterr()
    code, out, err = _cli(capsys, server.url_for("alice"), "list", "--json")
    assert code == 0, err
    assert [j["name"] for j in json.loads(out)] == ["mine"]


# ---------------------------------------------------------------------- grant verb


def test_grant_prints_validated_quoted_statements(
    server: Server, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _cli(capsys, server.url, "grant", "'carol'@'10.0.%'", "--runner")
    assert code == 0
    lines = out.splitlines()
    role = f"jobtui_runner_{server.database}"  # the role belongs to this database
    assert lines[0] == f"CREATE ROLE IF NOT EXISTS `{role}`;"
    assert lines[-2] == f"GRANT `{role}` TO 'carol'@'10.0.%';"
    assert lines[-1] == f"SET DEFAULT ROLE `{role}` FOR 'carol'@'10.0.%';"
    escaped_db = server.database.replace("_", "\\_")
    assert f"GRANT EXECUTE ON `{escaped_db}`.* TO `{role}`;" in lines
    assert f"GRANT SELECT ON `mysql`.`proc` TO `{role}`;" in lines
    assert f"GRANT CONNECTION ADMIN ON *.* TO `{role}`;" in lines
    assert f"GRANT SELECT ON `{server.database}`.`jobtui_secret` TO `{role}`;" in lines
    assert f"GRANT SELECT ON `{server.database}`.`jobtui_action_grant` TO `{role}`;" in lines
    # procs_priv: only to refuse a routine its owner can still alter (issue 23), by name
    assert f"GRANT SELECT ON `mysql`.`procs_priv` TO `{role}`;" in lines
    # mysql.user and mysql.db: only the columns that say who may alter every routine
    # (issue 23), never the password hashes
    assert [line for line in lines if "mysql`.`user" in line or "mysql`.`db" in line] == [
        f"GRANT SELECT (`User`, `Host`, `Alter_routine_priv`) ON `mysql`.`user` TO `{role}`;",
        f"GRANT SELECT (`User`, `Host`, `Db`, `Alter_routine_priv`) ON `mysql`.`db` TO `{role}`;",
    ]
    code, out, _ = _cli(capsys, server.url, "grant", "dave", "--json")
    data = json.loads(out)
    assert data["account"] == "'dave'@'%'" and data["kind"] == "operator"
    assert data["applied"] is False and data["database"] == server.database
    assert f"ON `{server.database}`.`jobtui_user_job`" in data["statements"][1]
    for bad in ("x'; DROP USER root; --", "a`b", "", "@h", "a@b@c", "é", "a" * 81, "u@'h'x"):
        code, out, err = _cli(capsys, server.url, "grant", bad)
        assert code == 2 and out == "" and "invalid account" in err, bad
    code, _out, err = _cli(capsys, server.url, "grant", "dave", "--admin", "--operator")
    assert code == 2
    with pytest.raises(InvalidInput):
        grant_statements("boss", "dave", "db")
    assert parse_account('"eve"@"localhost"') == ("eve", "localhost")
    escaped = grant_statements("admin", "eve", "my_db")[1]
    assert "CREATE ROUTINE, ALTER ROUTINE ON `my\\_db`.* TO `jobtui_admin_my_db`" in escaped
    assert "EXECUTE" not in escaped  # see grants.grant_statements
    operator = grant_statements("operator", "eve", "my_db")
    assert "GRANT CREATE ROUTINE ON `my\\_db`.* TO `jobtui_operator_my_db`" in operator


def test_grant_on_sqlite_says_there_are_no_accounts(
    sqlite_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _cli(capsys, sqlite_url, "grant", "alice")
    assert code == 2 and out == "" and "SQLite has no accounts" in err


def test_operator_store_refuses_all_and_init_leaves_the_schema_alone(
    server: Server, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _cli(capsys, server.url_for("alice"), "init")
    assert code == 0 and "operator account" in out
    for verb in (["worker"], ["run", "x"], ["console", "--runners", "1"]):
        code, out, err = _cli(capsys, server.url_for("alice"), *verb)
        assert code == 2 and "needs a runner or admin account" in err, verb
    store = server.store("alice")
    try:
        with pytest.raises(PermissionDenied):
            store.require_all()
        with pytest.raises(PermissionDenied):
            store.prune_runs()
    finally:
        store.close()


# ---------------------------------------------------------------------- credentials


def test_credentials_from_an_option_file_are_never_shown(
    server: Server, capsys: pytest.CaptureFixture[str], tmp_path
) -> None:  # type: ignore[no-untyped-def]
    name, pw = _name(server, "alice"), server.accounts["alice"]
    cnf = tmp_path / "my.cnf"
    cnf.write_text(f"[client]\nuser={name}\npassword={pw}\n")
    cnf.chmod(0o600)
    host = MYSQL_SERVER.split("@", 1)[1]
    url = f"mysql+pymysql://{host}/{server.database}?read_default_file={cnf}"
    outputs = []
    for args in (
        ("submit", "j", "--sql", "SELECT 1", "--every", "60"),
        ("list", "--json"),
        ("show", "nope"),
        ("list", "--all"),
        ("init",),
    ):
        code, out, err = _cli(capsys, url, *args)
        outputs.append(out + err)
    assert pw not in "".join(outputs)
    code, out, _ = _cli(capsys, url, "show", "j", "--json")
    assert json.loads(out)["owner"] == f"{name}@%"
    # a password as a query parameter (PyMySQL takes it): masked too
    query_url = f"mysql+pymysql://{name}@{host}/{server.database}?password={pw}"
    code, out, err = _cli(capsys, query_url, "init")
    assert code == 0 and pw not in out + err and "password=***" in out
    code, out, err = _cli(capsys, query_url.replace(pw, pw + "x"), "list")
    assert code == 1 and pw not in out + err and "Access denied" in err
    # the password in the URL: masked in messages and the console header's URL
    url_pw = server.url_for("alice")
    code, out, err = _cli(capsys, url_pw, "list", "--all")
    assert pw not in out + err and code == 2
    store = open_store(url_pw)
    try:
        assert pw not in store.masked_url and "***" in store.masked_url
    finally:
        store.close()


def test_privilege_check_bench_smoke() -> None:
    """bench/privilege_check.py runs: the routine check's cost (figures in docs/privileges.md)."""
    import subprocess
    import sys

    bench = Path(__file__).resolve().parents[2] / "bench" / "privilege_check.py"
    proc = subprocess.run(
        [sys.executable, str(bench), "--n", "5", "--batch", "4", "--server", MYSQL_SERVER],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("verify one job's routine ") and "(n=5)" in proc.stdout


def test_roles_belong_to_one_jobtui_database(
    server: Server, capsys: pytest.CaptureFixture[str]
) -> None:
    """An operator of one jobtui database is not thereby an operator of another one on
    the same server: bob is made an operator of a second database, alice (an operator
    of the first) reaches nothing there, and bob's role there is not alice's."""
    other = f"{server.database}_two"
    other_url = server.url.rsplit("/", 1)[0] + "/" + other
    root = admin_connection()
    try:
        with root.cursor() as cur:
            cur.execute(f"CREATE DATABASE `{other}`")
        assert main(["--db", other_url, "init"]) == 0
        assert main(["--db", other_url, "grant", server.names["bob"], "--operator", "--apply"]) == 0
        capsys.readouterr()
        with root.cursor() as cur:
            cur.execute(f"SHOW GRANTS FOR `{accounts.role_name('operator', other)}`")
            other_grants = " ".join(r[0] for r in cur.fetchall())
            cur.execute(f"SHOW GRANTS FOR `{accounts.role_name('operator', server.database)}`")
            first_grants = " ".join(r[0] for r in cur.fetchall())
        assert f"`{other}`" in other_grants and f"`{other}`" not in first_grants
        # bob works on the second database; alice is refused there by the server
        bob_url = other_url.replace(
            "://root@", f"://{server.names['bob']}:{server.accounts['bob']}@"
        )
        code, _, err = _cli(capsys, bob_url, "submit", "b2", "--sql", "DO 1", "--every", "60")
        assert code == 0, err
        alice = server.raw("alice")
        try:
            with alice.cursor() as cur:
                for statement in (
                    f"SELECT COUNT(*) FROM `{other}`.`jobtui_user_job`",
                    f"INSERT INTO `{other}`.`jobtui_user_job` (name) VALUES ('x')",
                    f"SELECT COUNT(*) FROM `{other}`.`jobtui_runner`",
                ):
                    with pytest.raises(pymysql.err.OperationalError) as refused:
                        cur.execute(statement)
                    assert refused.value.args[0] in (1142, 1044), statement
        finally:
            alice.close()
        alice_url = other_url.replace(
            "://root@", f"://{server.names['alice']}:{server.accounts['alice']}@"
        )
        code, out, err = _cli(capsys, alice_url, "list")
        assert code in (1, 2) and "b2" not in out
    finally:
        with root.cursor() as cur:
            cur.execute(f"DROP DATABASE IF EXISTS `{other}`")
            for kind in ("operator", "admin", "runner"):
                cur.execute(f"DROP ROLE IF EXISTS `{accounts.role_name(kind, other)}`")
        root.close()
