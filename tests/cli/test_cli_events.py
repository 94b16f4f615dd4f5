"""``jobtui events`` through real ``python -m jobtui`` processes on real MariaDB events."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from support.cli import Cli
from support.fuzzing import dump, one_line_error
from support.mariadb import admin_connection

from jobtui.core.store import open_store

ROW_FIELDS = [
    "schema",
    "name",
    "definer",
    "status",
    "schedule",
    "next_run",
    "last_executed",
    "body",
    "overlap_guard",
]


def _sql(database: str, *statements: str) -> None:
    conn = admin_connection(database)
    try:
        with conn.cursor() as cur:
            for statement in statements:
                cur.execute(statement)
    finally:
        conn.close()


def _statuses(database: str) -> dict[str, tuple[str, str]]:
    conn = admin_connection(database)
    try:
        with conn.cursor() as cur:
            cur.execute(
                "SELECT EVENT_NAME, STATUS, DEFINER FROM information_schema.EVENTS "
                "WHERE EVENT_SCHEMA = %s",
                (database,),
            )
            return {name: (status, definer) for name, status, definer in cur.fetchall()}
    finally:
        conn.close()


@pytest.fixture
def evdb(mariadb_url: str, tmp_path: Path) -> tuple[Cli, str, str]:
    """A jobtui database holding three events; the CLI on it, its URL and name."""
    name = mariadb_url.rsplit("/", 1)[1]
    open_store(mariadb_url).close()  # the jobtui tables
    _sql(
        name,
        "SET time_zone = '+02:00'",
        "CREATE EVENT loose ON SCHEDULE EVERY 10 MINUTE STARTS '2026-01-01 02:00:00' "
        "DISABLE DO DO 1",
        "CREATE EVENT guarded ON SCHEDULE EVERY 1 HOUR DISABLE DO DO GET_LOCK('guarded', 0)",
        "CREATE EVENT block ON SCHEDULE EVERY 1 HOUR DISABLE DO BEGIN DO 1; DO 2; END",
    )
    return Cli(mariadb_url, tmp_path), mariadb_url, name


@pytest.mark.mariadb
def test_list_says_whether_the_scheduler_runs_and_warns_of_overlap(
    evdb: tuple[Cli, str, str],
) -> None:
    cli, _, name = evdb
    assert f"{name}.loose" in cli("events").stdout  # every schema this account sees
    out = cli("events", "--schema", name).stdout
    assert out.splitlines()[0].startswith("event_scheduler is ")
    assert f"{name}.loose" in out and "every 10 MINUTE starts 2026-01-01 00:00:00 UTC" in out
    warnings = [line for line in out.splitlines() if line.startswith("warning:")]
    assert any(f"{name}.loose takes no named lock" in w for w in warnings)
    assert any(f"{name}.block" in w for w in warnings)
    assert not any(f"{name}.guarded" in w for w in warnings)
    assert cli("events", "list", "--schema", name).stdout == out

    data = cli.json("events", "list", "--schema", name)
    assert data["event_scheduler"] in ("ON", "OFF", "DISABLED")
    rows = {row["name"]: row for row in data["events"]}
    assert set(rows) == {"loose", "guarded", "block"}
    assert list(rows["loose"])[: len(ROW_FIELDS)] == ROW_FIELDS
    assert rows["guarded"]["overlap_guard"] is True and rows["loose"]["overlap_guard"] is False
    assert rows["loose"]["status"] == "DISABLED" and rows["loose"]["next_run"] is None

    empty = cli("events", "--schema", "no_such_schema_here").stdout
    assert "no events in schema no_such_schema_here" in empty


@pytest.mark.mariadb
def test_enable_disable_and_adopt(evdb: tuple[Cli, str, str]) -> None:
    cli, _, name = evdb
    out = cli("events", "enable", f"{name}.loose").stdout
    assert out.startswith(f"enabled event {name}.loose (status ENABLED, definer root@")
    row = cli.json("events", "disable", f"{name}.loose")
    assert row["status"] == "DISABLED" and row["next_run"] is None
    cli("events", "enable", f"{name}.loose")

    data = cli.json("events", "adopt", f"{name}.loose")
    assert set(data) == {"job", "event", "notes"}
    job = data["job"]
    assert job["name"] == "loose" and job["status"] == "ENABLED"
    assert job["schedule"]["kind"] == "every" and job["schedule"]["every"] == 600.0
    assert job["schedule"]["start"] == "2026-01-01T00:00:00+00:00"
    assert job["what"] == {"kind": "sql", "target": "DO 1", "args": []}
    assert data["event"]["status"] == "DISABLED"
    assert _statuses(name)["loose"][0] == "DISABLED"

    out = cli("events", "adopt", f"{name}.guarded", "--keep-event").stdout
    assert out.startswith(f"adopted event {name}.guarded as job guarded (")
    assert "note: the event was DISABLED, so job guarded was created DISABLED" in out


def _refused(cli: Cli, url: str, name: str, args: list[str], phrase: str) -> None:
    before, events_before = dump(url), _statuses(name)
    proc = cli(*args, ok=False)
    line = one_line_error(proc.returncode, proc.stdout, proc.stderr)
    assert phrase in line, line
    assert dump(url) == before and _statuses(name) == events_before


@pytest.mark.mariadb
@pytest.mark.parametrize(
    ("args", "phrase"),
    [
        (["events", "enable", "nodot"], "expected SCHEMA.NAME"),
        (["events", "disable", "a.b.c"], "expected SCHEMA.NAME"),
        (["events", "adopt", ""], "expected SCHEMA.NAME"),
        (["events", "enable", "{db}.nope"], "no event {db}.nope"),
        (["events", "--schema", "{db}", "enable", "{db}.loose"], "--schema is only accepted"),
        (["events", "--schema", "x" * 65], "invalid schema"),
        (["events", "frobnicate"], "invalid choice: 'frobnicate'"),
        (["events", "adopt", "{db}.block"], "compound statement"),
        (["events", "adopt", "{db}.loose", "--drop"], "unrecognized arguments: --drop"),
    ],
)
def test_bad_input_exits_2_and_changes_nothing(
    evdb: tuple[Cli, str, str], args: list[str], phrase: str
) -> None:
    cli, url, name = evdb
    fill: dict[str, Any] = {"db": name}
    _refused(cli, url, name, [a.format(**fill) for a in args], phrase.format(**fill))


def test_sqlite_has_no_events_and_no_file_is_made(tmp_path: Path) -> None:
    path = tmp_path / "none.db"
    cli = Cli(f"sqlite:///{path}", tmp_path)
    for args in (["events"], ["events", "enable", "a.b"], ["events", "adopt", "a.b"]):
        proc = cli(*args, ok=False)
        line = one_line_error(proc.returncode, proc.stdout, proc.stderr)
        assert "SQLite has no events" in line
    assert not path.exists()


def test_an_unreachable_server_exits_1_without_the_password(tmp_path: Path) -> None:
    cli = Cli("mysql+pymysql://u:sekret@127.0.0.1:1/x", tmp_path)
    proc = cli("events", ok=False)
    line = one_line_error(proc.returncode, proc.stdout, proc.stderr, expected=1)
    assert "database unavailable" in line and "sekret" not in proc.stderr


@pytest.mark.mariadb
def test_an_event_calling_a_procedure_that_takes_a_named_lock_is_not_warned(
    mariadb_url: str, tmp_path: Path
) -> None:
    """docs/events.md's shape: the event CALLs a procedure whose body takes GET_LOCK."""
    import secrets

    name = mariadb_url.rsplit("/", 1)[1]
    open_store(mariadb_url).close()
    _sql(
        name,
        "CREATE PROCEDURE purge_guarded() BEGIN IF GET_LOCK('purge', 0) THEN DO 1; "
        "DO RELEASE_LOCK('purge'); END IF; END",
        "CREATE PROCEDURE purge_loose() DO 1",
        "CREATE EVENT calls_guarded ON SCHEDULE EVERY 1 HOUR DISABLE DO CALL purge_guarded()",
        f"CREATE EVENT calls_qualified ON SCHEDULE EVERY 1 HOUR DISABLE DO CALL `{name}`.Purge_Guarded",
        "CREATE EVENT calls_loose ON SCHEDULE EVERY 1 HOUR DISABLE DO CALL purge_loose()",
        "CREATE EVENT calls_missing ON SCHEDULE EVERY 1 HOUR DISABLE DO CALL no_such_proc()",
    )
    out = Cli(mariadb_url, tmp_path)("events", "--schema", name).stdout
    warned = {w.split()[1] for w in out.splitlines() if w.startswith("warning:")}
    assert warned == {f"{name}.calls_loose", f"{name}.calls_missing"}, out
    assert f"warning: {name}.calls_loose takes no named lock (GET_LOCK)" in out

    # an account that may run the procedure but not read its text: it is told so
    user, password = f"jt_ev_{secrets.token_hex(3)}", f"pw-{secrets.token_hex(4)}"
    root = admin_connection()
    try:
        with root.cursor() as cur:
            cur.execute(f"CREATE USER '{user}'@'%%' IDENTIFIED BY %s", (password,))
            cur.execute(f"GRANT EVENT, SELECT ON `{name}`.* TO '{user}'@'%'")
            cur.execute(f"GRANT EXECUTE ON PROCEDURE `{name}`.purge_guarded TO '{user}'@'%'")
        url = mariadb_url.replace("://root@", f"://{user}:{password}@")
        out = Cli(url, tmp_path)("events", "--schema", name).stdout
        assert (
            f"warning: {name}.calls_guarded calls {name}.purge_guarded, whose text this "
            "account may not read: unless it takes a named lock (GET_LOCK)"
        ) in out, out
    finally:
        with root.cursor() as cur:
            cur.execute(f"DROP USER IF EXISTS '{user}'@'%'")
        root.close()
