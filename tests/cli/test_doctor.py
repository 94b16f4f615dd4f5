"""``jobtui doctor``: a healthy set-up passes (exit 0), a broken one names each problem
with what to do (exit 1), bad input is exit 2; on SQLite and MariaDB, through --json."""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from support.accounts import Server, grant_kind, root_sql
from support.mariadb import admin_connection
from support.procs import Worker, wait_for

from jobtui.cli import main
from jobtui.core import accounts, migrations, schema
from jobtui.core import doctor as doctor_core
from jobtui.core.model import What
from jobtui.core.schedules import make_schedule
from jobtui.core.store import JobStore, open_store
from jobtui.core.timeutil import to_db, utcnow

NAMES = [
    "connect",
    "schema",
    "account",
    "runner account",
    "event scheduler",
    "runners",
    "overdue",
    "broken",
    "clock",
]


@pytest.fixture(params=["sqlite", pytest.param("mariadb", marks=pytest.mark.mariadb)])
def url(request: pytest.FixtureRequest) -> str:
    return str(request.getfixturevalue(f"{request.param}_url"))


@pytest.fixture
def store(url: str) -> Iterator[JobStore]:
    s = open_store(url)  # initialised
    try:
        yield s
    finally:
        s.close()


def doctor(url: str, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, dict[str, Any]]:
    capsys.readouterr()
    code = main(["--db", url, "doctor", "--json", *extra])
    out, err = capsys.readouterr()
    assert "Traceback" not in err, err
    checks = json.loads(out)
    for c in checks:
        assert set(c) == {"check", "status", "detail", "hint"}
        assert c["status"] in ("ok", "warn", "fail"), c
    return code, {c["check"]: c for c in checks}


def register_runner(store: JobStore, *, name: str = "pool", age: float = 0) -> None:
    now = store.now() - timedelta(seconds=age)
    with store.write() as conn:
        conn.execute(
            schema.runner.insert().values(
                id=f"{name}-{secrets.token_hex(3)}",
                name=name,
                host="here",
                pid=1,
                threads=2,
                started=to_db(now),
                heartbeat=to_db(now),
                stopping=False,
            )
        )


def submit(store: JobStore, name: str) -> None:
    store.submit(name, What("sql", "SELECT 1"), make_schedule("every", every="3600"))


def test_healthy(url: str, store: JobStore, capsys: pytest.CaptureFixture[str]) -> None:
    submit(store, "hourly")
    register_runner(store)
    code, checks = doctor(url, capsys)
    assert list(checks) == NAMES
    assert code == 0, checks
    assert all(c["status"] == "ok" for n, c in checks.items() if n != "event scheduler"), checks
    assert checks["schema"]["detail"] == f"version {migrations.LATEST} (this jobtui's)"
    assert checks["runners"]["detail"].startswith("1 live: pool-")
    assert "1 job(s)" in checks["overdue"]["detail"]
    if store.backend.has_accounts:
        assert "superuser" in checks["account"]["detail"]  # root
        assert checks["event scheduler"]["status"] in ("ok", "warn")
        assert checks["clock"]["detail"].startswith("the server's clock is")
    else:
        for name in ("account", "runner account", "event scheduler", "clock"):
            assert checks[name]["detail"].startswith(
                ("skipped:", "root: skipped", f"{store.owner}: skipped")
            ), name
    # the human form: one line per check, its status first
    capsys.readouterr()
    assert main(["--db", url, "doctor"]) == 0
    lines = [ln for ln in capsys.readouterr().out.splitlines() if not ln.startswith(" ")]
    assert [ln.split()[0] for ln in lines] == [checks[n]["status"] for n in NAMES]


def test_broken_set_up(url: str, store: JobStore, capsys: pytest.CaptureFixture[str]) -> None:
    submit(store, "late")
    submit(store, "cracked")
    late = store.get("late")
    with store.write() as conn:
        conn.execute(
            schema.job.update()
            .where(schema.job.c.id == late.id)
            .values(next_run=to_db(store.now() - timedelta(hours=1)))
        )
    store.broken("cracked", True)
    register_runner(store, name="gone", age=3600)  # a dead heartbeat
    code, checks = doctor(url, capsys)
    assert code == 1
    assert checks["runners"]["status"] == "fail"
    assert "no live runner" in checks["runners"]["detail"]
    assert "jobtui worker" in checks["runners"]["hint"]
    assert checks["overdue"]["status"] == "fail" and "late" in checks["overdue"]["detail"]
    assert checks["broken"]["status"] == "warn" and "cracked" in checks["broken"]["detail"]
    assert "jobtui broken NAME --off" in checks["broken"]["hint"]
    # --overdue: a later threshold forgives it
    code, checks = doctor(url, capsys, "--overdue", "7200")
    assert checks["overdue"]["status"] == "ok"


def test_an_uninitialised_database(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    if url.startswith("sqlite:///"):
        Path(url.removeprefix("sqlite:///")).touch()  # an empty file (none: "no such file")
    code, checks = doctor(url, capsys)
    assert code == 1
    assert checks["schema"]["status"] == "fail" and "jobtui init" in checks["schema"]["hint"]
    assert checks["runners"]["detail"] == "skipped: no jobtui tables here"


def test_an_older_and_a_newer_schema(
    url: str, store: JobStore, capsys: pytest.CaptureFixture[str]
) -> None:
    register_runner(store)
    with store.write() as conn:
        schema.put_meta(conn, schema.VERSION_KEY, "1")
    code, checks = doctor(url, capsys)
    assert code == 0
    assert checks["schema"]["status"] == "warn" and "jobtui upgrade" in checks["schema"]["hint"]
    newer = migrations.LATEST + 1
    with store.write() as conn:
        schema.put_meta(conn, schema.VERSION_KEY, str(newer))
    code, checks = doctor(url, capsys)  # a line, not the other commands' refusal
    assert code == 1
    assert checks["schema"]["status"] == "fail"
    assert (
        f"version {newer}, newer than this jobtui's ({migrations.LATEST})"
        in checks["schema"]["detail"]
    )
    assert "upgrade jobtui" in checks["schema"]["hint"]


@pytest.mark.parametrize(
    "where",
    ["mysql+pymysql://nobody@127.0.0.1:1/jobtui", "sqlite:////nonexistent-dir/jobtui.db"],
)
def test_an_unreachable_database(where: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, checks = doctor(where, capsys)
    assert code == 1
    assert list(checks) == ["connect"]
    assert checks["connect"]["status"] == "fail" and checks["connect"]["hint"]


@pytest.mark.parametrize(
    "extra",
    [["--overdue", "soon"], ["--overdue", "-1"], ["--runner-account", "bob'; DROP"], ["--bogus"]],
)
def test_bad_input(sqlite_url: str, extra: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--db", sqlite_url, "doctor", *extra]) == 2
    err = capsys.readouterr().err
    assert err.startswith("jobtui: error: ") and len(err.splitlines()) == 1


# ---------------------------------------------------------------------- accounts (MariaDB)


@pytest.mark.mariadb
def test_accounts(server: Server, capsys: pytest.CaptureFixture[str]) -> None:
    # an operator: its own kind, and no runner account named
    code, checks = doctor(server.url_for("alice"), capsys)
    assert checks["account"]["status"] == "ok"
    assert "operator: submit and steer its own jobs" in checks["account"]["detail"]
    assert checks["runner account"]["detail"].startswith("skipped:")
    assert "--runner-account" in checks["runner account"]["hint"]
    # the runner account itself
    code, checks = doctor(server.url_for("run"), capsys)
    assert "runner: run every owner's jobs" in checks["account"]["detail"]
    assert "may run jobs itself" in checks["runner account"]["detail"]
    # jobtui's admin may not read another account's grants: a warning that says who may
    code, checks = doctor(server.url_for("adm"), capsys, "--runner-account", server.names["run"])
    assert checks["runner account"]["status"] == "warn", checks["runner account"]
    assert "may not read its grants" in checks["runner account"]["detail"]
    assert "admin" in checks["account"]["detail"]
    # root may: the runner account, an operator that is none, an unknown account
    code, checks = doctor(server.url, capsys, "--runner-account", server.names["run"])
    assert checks["runner account"]["status"] == "ok", checks["runner account"]
    assert "the runner role, active" in checks["runner account"]["detail"]
    # a runner account without the executor role (granted by an older version): a warning,
    # from root and from the runner itself, until `jobtui grant --runner` is run again
    executor = accounts.executor_role(server.database)
    root_sql(server, f"REVOKE `{executor}` FROM '{server.names['run']}'@'%'")
    code, checks = doctor(server.url, capsys, "--runner-account", server.names["run"])
    assert checks["runner account"]["status"] == "warn", checks["runner account"]
    assert "not the executor role" in checks["runner account"]["detail"]
    assert "--runner --apply" in checks["runner account"]["hint"]
    code, checks = doctor(server.url_for("run"), capsys)
    assert checks["runner account"]["status"] == "warn", checks["runner account"]
    assert "not the executor role" in checks["runner account"]["detail"]
    grant_kind(server, "runner", server.names["run"])
    code, checks = doctor(server.url, capsys, "--runner-account", server.names["run"])
    assert checks["runner account"]["status"] == "ok", checks["runner account"]
    code, checks = doctor(server.url_for("run"), capsys)
    assert "may run jobs itself" in checks["runner account"]["detail"]
    code, checks = doctor(server.url, capsys, "--runner-account", server.names["alice"])
    assert checks["runner account"]["status"] == "fail"
    assert "--runner --apply" in checks["runner account"]["hint"]
    code, checks = doctor(server.url, capsys, "--runner-account", "nobody_here_x")
    assert "no such account" in checks["runner account"]["detail"]
    # an account without grants: a fail line (and no traceback)
    name, pw = f"jt_none_{secrets.token_hex(3)}", secrets.token_hex(6)
    conn = admin_connection()
    try:
        with conn.cursor() as cur:
            cur.execute(f"CREATE USER '{name}'@'%%' IDENTIFIED BY %s", (pw,))
        bare = server.url.replace("://root@", f"://{name}:{pw}@")
        code, checks = doctor(bare, capsys)
        assert code == 1
        assert list(checks) == ["connect", "account"]
        assert "holds no privilege on this database" in checks["connect"]["detail"]
        assert checks["account"]["status"] == "fail"
        assert "holds no jobtui role" in checks["account"]["detail"]
        assert f"jobtui grant {name}@" in checks["account"]["hint"]
        # granted USAGE on the database only (it may connect): the account line still fails
        with conn.cursor() as cur:
            cur.execute(f"GRANT SELECT ON `{server.database}`.`jobtui_meta` TO '{name}'@'%'")
        code, checks = doctor(bare, capsys)
        assert code == 1
        assert checks["connect"]["status"] == "ok"
        assert checks["account"]["status"] == "fail"
        assert "holds no jobtui role" in checks["account"]["detail"]
        assert checks["runners"]["status"] == "fail"  # may not read them: said, no traceback
        # privileges on the tables granted directly, without a role: a warning
        with conn.cursor() as cur:
            cur.execute(f"GRANT SELECT ON `{server.database}`.* TO '{name}'@'%'")
        code, checks = doctor(bare, capsys)
        assert checks["account"]["status"] == "warn", checks["account"]
        assert "reads the job table (privileges granted directly?)" in checks["account"]["detail"]
    finally:
        with conn.cursor() as cur:
            cur.execute(f"DROP USER IF EXISTS '{name}'@'%'")
        conn.close()


def test_a_live_worker_serves(
    sqlite_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A real `jobtui worker` (not a hand-made registry row) passes the runners line."""
    assert main(["--db", sqlite_url, "init"]) == 0
    w = Worker(sqlite_url, tmp_path, name="dr", threads=1)
    try:
        assert wait_for(w.started, 30)
        code, checks = doctor(sqlite_url, capsys)
        assert code == 0, checks
        assert checks["runners"]["detail"].startswith("1 live: ")
    finally:
        assert w.terminate() == 0


@pytest.mark.mariadb
def test_clock_skew(mariadb_url: str) -> None:
    """The server's clock against this machine's (an injected clock stands for a skewed
    machine): within 2 s ok, then warn, from 60 s fail."""
    s = open_store(mariadb_url)
    try:
        for ahead, status in ((0, "ok"), (5, "warn"), (-120, "fail")):
            checks = doctor_core.run(
                s, doctor_core.Options(), clock=lambda a=ahead: utcnow() + timedelta(seconds=a)
            )
            clock = next(c for c in checks if c.check == "clock")
            assert clock.status == status, (ahead, clock)
            if ahead:
                assert "NTP" in clock.hint
                assert ("behind" if ahead > 0 else "ahead of") in clock.detail
    finally:
        s.close()
