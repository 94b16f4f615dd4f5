"""The model's own validation and shapes (no database): names, identifiers, SQL, times, URLs."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone

import pytest
from support.samples import sample_job

from jobtui.core.db import mask_text, mask_url, parse_url, resolve_url
from jobtui.core.errors import DatabaseUnavailable, InvalidInput, JobNotFound
from jobtui.core.jobdefs import check_description, check_max_failures, merge_schedule
from jobtui.core.model import (
    Outcome,
    Run,
    Schedule,
    What,
    check_identifier,
    check_job_name,
    check_sql,
    quote_identifier,
    split_procedure,
)
from jobtui.core.timeutil import aware, from_db, iso, parse_when, to_db


@pytest.mark.parametrize("name", ["a", "job_1", "nightly.export-v2", "_x", "9lives", "j" * 64])
def test_job_names_accepted(name: str) -> None:
    assert check_job_name(name) == name


@pytest.mark.parametrize(
    "name",
    ["", " ", "a b", "a;b", "a`b", "a'b", "a/b", "-x", ".x", "j" * 65, "caf\u00e9", "x\n", None, 5],
)
def test_job_names_refused(name: object) -> None:
    with pytest.raises(InvalidInput, match=r"invalid job name.*A-Z a-z 0-9 _ \. -"):
        check_job_name(name)  # type: ignore[arg-type]


@pytest.mark.parametrize("value", ["a", "A_b$1", "$", "x" * 64, "0"])
def test_identifiers_accepted(value: str) -> None:
    assert check_identifier(value, "schema name") == value
    assert quote_identifier(value) == f"`{value}`"


@pytest.mark.parametrize(
    "value",
    ["", "a`b", "a;b", "a b", "a.b", "a\x00b", "x" * 65, "\u0430dmin", "a-b", "a'b", "ä", None],
)
def test_identifiers_refused(value: object) -> None:
    with pytest.raises(
        InvalidInput, match=r"identifiers are 1-64 characters from A-Z a-z 0-9 _ \$"
    ):
        check_identifier(value, "schema name")  # type: ignore[arg-type]
    with pytest.raises(InvalidInput):
        quote_identifier(value)  # type: ignore[arg-type]


def test_split_procedure() -> None:
    assert split_procedure("ops.purge_logs") == ("ops", "purge_logs")
    for bad in ("purge", "a.b.c", "ops.", ".p", "ops.p;x", "o`s.p"):
        with pytest.raises(InvalidInput, match=r"SCHEMA\.PROC|identifiers"):
            split_procedure(bad)


@pytest.mark.parametrize(
    ("statement", "stored"),
    [
        ("SELECT 1", "SELECT 1"),
        ("  SELECT 1 ;  ", "SELECT 1"),
        ("SELECT 1;;", "SELECT 1"),
        ("SELECT ';' AS semi", "SELECT ';' AS semi"),
        ('SELECT "a;b"', 'SELECT "a;b"'),
        ("SELECT `we;ird` FROM t", "SELECT `we;ird` FROM t"),
        ("SELECT 'it\\'s;' ", "SELECT 'it\\'s;'"),
    ],
)
def test_check_sql_accepts_one_statement(statement: str, stored: str) -> None:
    assert check_sql(statement) == stored
    assert What("sql", statement).target == stored


@pytest.mark.parametrize(
    ("statement", "message"),
    [
        ("", "empty"),
        ("   ", "empty"),
        (";", "empty|one"),
        ("SELECT 1; SELECT 2", "exactly one"),
        ("DELETE FROM t; DROP TABLE t", "exactly one"),
        ("SELECT '\x00'", "NUL"),
        ("SELECT " + "1" * 16_001, "too long"),
    ],
)
def test_check_sql_refuses(statement: str, message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        What("sql", statement)


def test_what_kinds_and_args() -> None:
    call = What("call", "ops.purge", ("30", "it's"))
    assert call.describe() == "call ops.purge('30', \"it's\")"
    assert call.to_dict() == {"kind": "call", "target": "ops.purge", "args": ["30", "it's"]}
    assert json.loads(call.args_json()) == ["30", "it's"]
    assert What("action", "demo.sleep", ("2",)).describe() == "action demo.sleep '2'"
    assert What("action", "demo.noop").describe() == "action demo.noop"
    assert What("sql", "SELECT 1").describe() == "sql SELECT 1"
    with pytest.raises(InvalidInput, match="--arg"):
        What("sql", "SELECT 1", ("x",))
    with pytest.raises(InvalidInput, match="what kind"):
        What("shell", "rm -rf /")  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="too many arguments"):
        What("call", "a.b", tuple(str(i) for i in range(33)))
    with pytest.raises(InvalidInput, match="without NUL"):
        What("call", "a.b", ("a\x00",))
    with pytest.raises(InvalidInput, match="at most 4000"):
        What("call", "a.b", ("x" * 4001,))
    for bad in ("", "a b", "pkg.mod:fn()", "/bin/sh", "x" * 129):
        with pytest.raises(InvalidInput, match="invalid action name"):
            What("action", bad)


def test_job_json_shape() -> None:
    data = sample_job().to_dict()
    for key in (
        "id",
        "owner",
        "name",
        "status",
        "broken",
        "failures",
        "cycles",
        "next_run",
        "last_run",
        "last_outcome",
        "schedule",
        "what",
    ):
        assert key in data
    assert data["status"] == "SLEEPING"
    assert data["next_run"] == "2026-01-01T00:00:05+00:00"
    assert data["last_run"] is None
    assert data["last_outcome"] == "ok"
    assert data["schedule"]["text"] == "every 5 s"
    assert data["what"] == {"kind": "sql", "target": "SELECT 1", "args": []}
    json.dumps(data)


def test_run_json_shape_and_duration() -> None:
    start = datetime(2026, 1, 1, 0, 0, 5, tzinfo=UTC)
    run = Run(
        id=9,
        job_id=1,
        job="j",
        owner="o",
        scheduled_for=start,
        started=start,
        finished=start + timedelta(seconds=2.25),
        outcome=Outcome.FAILED,
        error="boom",
        runner="host:1",
    )
    data = run.to_dict()
    assert data["duration"] == 2.25
    for key in ("job", "scheduled_for", "started", "finished", "duration", "outcome", "error"):
        assert key in data
    assert data["runner"] == "host:1" and data["outcome"] == "failed"
    running = Run(1, 1, "j", "o", start, start, None, Outcome.RUNNING)
    assert running.duration is None and running.to_dict()["duration"] is None


def test_times() -> None:
    berlin = timezone(timedelta(hours=1))
    local = datetime(2026, 1, 1, 13, 0, tzinfo=berlin)
    assert aware(local) == datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
    assert aware(datetime(2026, 1, 1, 12, 0)).tzinfo is UTC  # naive means UTC
    assert to_db(local) == datetime(2026, 1, 1, 12, 0)
    assert from_db("2026-01-01 12:00:00.250000") == datetime(2026, 1, 1, 12, 0, 0, 250000, UTC)
    assert from_db(None) is None and to_db(None) is None and iso(None) is None
    assert iso(local) == "2026-01-01T12:00:00+00:00"
    assert parse_when("2026-12-24T18:00:00+01:00") == datetime(2026, 12, 24, 17, 0, tzinfo=UTC)
    assert parse_when("2026-12-24 18:00") == datetime(2026, 12, 24, 18, 0, tzinfo=UTC)
    for bad in ("tomorrow", "", "24/12/2026", "2026-13-01", "0001-01-01T00:00:00"):
        with pytest.raises(InvalidInput, match=r"(ISO 8601|year)"):
            parse_when(bad, "--start")


def test_description_and_max_failures() -> None:
    assert check_description(None) == ""
    assert check_description("x" * 2000) == "x" * 2000
    with pytest.raises(InvalidInput, match="too long"):
        check_description("x" * 2001)
    assert check_max_failures(1) == 1
    assert check_max_failures("16") == 16
    for bad in (0, -1, 1.5, "x", None, 1_000_001, True):
        with pytest.raises(InvalidInput, match="--max-failures"):
            check_max_failures(bad)


def test_merge_schedule_only_given_parts_change() -> None:
    start = datetime(2026, 1, 1, tzinfo=UTC)
    cron = Schedule("cron", cron="0 3 * * *", tz="Europe/Berlin", start=start)
    assert merge_schedule(cron) == cron
    assert merge_schedule(cron, tz="UTC").tz == "UTC"
    assert merge_schedule(cron, cron="0 4 * * *") == Schedule(
        "cron", cron="0 4 * * *", tz="Europe/Berlin", start=start
    )
    assert merge_schedule(cron, every=60) == Schedule("every", every=60.0, start=start)
    assert merge_schedule(cron, start=None).start is None
    assert merge_schedule(cron, kind="once") == Schedule("once", start=start)
    with pytest.raises(InvalidInput, match="one schedule"):
        merge_schedule(cron, every=5, expr="NOW()")
    with pytest.raises(InvalidInput, match="one schedule"):
        merge_schedule(cron, kind="expr", every=5)
    assert merge_schedule(cron, kind="every", every=5) == Schedule("every", every=5.0, start=start)
    with pytest.raises(InvalidInput, match="--every needs"):
        merge_schedule(cron, kind="every")  # a kind without its value is not ignored
    with pytest.raises(InvalidInput, match="schedule kind"):
        merge_schedule(cron, kind="weekly")


def test_urls_never_show_a_password() -> None:
    url = "mysql+pymysql://app:p%40ss:w0rd@db.internal:3306/jobs"
    assert "p%40ss" not in mask_url(url) and "w0rd" not in mask_url(url)
    assert "***" in mask_url(url)
    assert "hunter2" not in mask_text("error talking to mysql://u:hunter2@h/db: refused")
    parsed = parse_url("mysql://u@h/db")
    assert parsed.drivername == "mysql+pymysql"
    with pytest.raises(InvalidInput, match="unsupported database 'postgresql'"):
        parse_url("postgresql://u:secretpw@h/db")
    try:
        parse_url("postgresql://u:secretpw@h/db")
    except InvalidInput as exc:
        assert "secretpw" not in str(exc)
    with pytest.raises(InvalidInput, match="invalid database URL"):
        parse_url("::not a url::")
    # an unencoded @ in the password: never shown, not even in part
    raw = "mysql+pymysql://app:s3cr@tPart@db.internal:3306/jobs"
    assert "tPart" not in mask_url(raw) and "s3cr" not in mask_url(raw)
    assert "tPart" not in mask_text(f"failed: {raw}")
    with pytest.raises(InvalidInput, match="%40") as info:
        parse_url(raw)
    assert "tPart" not in str(info.value) and "s3cr" not in str(info.value)


def test_resolve_url(monkeypatch: pytest.MonkeyPatch, tmp_path: object) -> None:
    monkeypatch.delenv("JOBTUI_DB", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert resolve_url() == f"sqlite:///{tmp_path}/jobtui/jobtui.db"
    monkeypatch.setenv("JOBTUI_DB", "sqlite:////srv/jobs.db")
    assert resolve_url() == "sqlite:////srv/jobs.db"
    assert resolve_url("mysql+pymysql://u@h/db") == "mysql+pymysql://u@h/db"
    assert resolve_url("/tmp/x.db") == "sqlite:////tmp/x.db"


def test_error_exit_codes() -> None:
    assert InvalidInput("x").exit_code == 2
    assert JobNotFound("nightly").exit_code == 2
    assert "unknown job 'nightly'" in str(JobNotFound("nightly"))
    assert DatabaseUnavailable("x").exit_code == 1
