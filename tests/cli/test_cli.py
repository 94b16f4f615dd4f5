"""The command line, through real ``python -m jobtui`` processes on real databases.

Each test reuses one database for all its commands. Run rows and runner rows
are what runners write; tests insert them with SQLAlchemy into the real
tables (no mock stands in for the database).
"""

from __future__ import annotations

import itertools
import json
import re
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import insert, text, update
from support.cli import Cli
from support.cli import cli_env as _env
from support.demo_db import make_demo

from jobtui.cli.parser import normalize_argv, parse_args
from jobtui.core import schema
from jobtui.core.backends.registry import make_engine
from jobtui.core.model import Job, Schedule, What
from jobtui.core.store import open_store

ISO_WITH_OFFSET = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,6})?[+-]\d\d:\d\d$")
JOB_FIELDS = {
    "id",
    "owner",
    "name",
    "description",
    "status",
    "intent",
    "phase",
    "running",
    "broken",
    "broken_reason",
    "failures",
    "max_failures",
    "cycles",
    "created",
    "last_run",
    "this_run",
    "next_run",
    "total_time",
    "last_outcome",
    "last_error",
    "last_duration",
    "runner",
    "runner_connection_id",
    "run_now",
    "abort_requested",
    "schedule",
    "what",
    "last_cycle_start",
    "last_cycle_finish",
}
RUN_FIELDS = {
    "id",
    "job_id",
    "job",
    "owner",
    "scheduled_for",
    "started",
    "finished",
    "duration",
    "outcome",
    "error",
    "runner",
    "skipped",
    "manual",
}
SCHEDULE_FIELDS = {"kind", "every", "cron", "tz", "expr", "start", "finish", "text"}
WHAT_FIELDS = {"kind", "target", "args"}


@pytest.fixture
def cli_for(tmp_path: Path):  # type: ignore[no-untyped-def]
    return lambda url: Cli(url, tmp_path)


def _setup(url: str, *jobs: tuple[str, What, Schedule]) -> None:
    """Define jobs in-process (the store is the real database; the verb under test is not submit)."""
    store = open_store(url)
    try:
        for name, what, sched in jobs:
            store.submit(name, what, sched)
    finally:
        store.close()


def _job(url: str, name: str) -> Job:
    store = open_store(url, init=False)
    try:
        return store.get(name)
    finally:
        store.close()


SQL = What("sql", "SELECT 1")
HOURLY = Schedule("every", every=3600.0)
ONCE = Schedule("once")


def _assert_iso(value: Any) -> None:
    assert isinstance(value, str) and ISO_WITH_OFFSET.match(value), value


# ---------------------------------------------------------------------- parsing (in-process)


def test_console_is_the_default_verb_and_db_goes_before_or_after_the_verb() -> None:
    assert normalize_argv([]) == ["console"]
    assert normalize_argv(["--db", "x.db"]) == ["--db", "x.db", "console"]
    assert normalize_argv(["--db=x.db", "--read-only"]) == ["--db=x.db", "console", "--read-only"]
    assert normalize_argv(["list", "--db", "y"]) == ["list", "--db", "y"]
    args = parse_args(["--db", "x.db", "--runners", "3", "--read-only"])
    assert (args.command, args.db, args.runners, args.read_only) == ("console", "x.db", 3, True)
    assert parse_args(["--db", "x.db", "list"]).db == "x.db"
    assert parse_args(["list", "--db", "y.db"]).db == "y.db"
    assert parse_args(["--db", "x.db", "list", "--db", "y.db"]).db == "y.db"
    assert parse_args(["list"]).db is None
    demo = parse_args(["demo"])
    assert (demo.command, demo.runners, demo.path) == ("demo", 4, None)


# ---------------------------------------------------------------------- verbs


def test_version_help_and_init(sqlite_url: str, cli_for) -> None:  # type: ignore[no-untyped-def]
    cli = cli_for(sqlite_url)
    assert cli("--version", db=False).stdout.strip().startswith("jobtui 0.")
    helptext = cli("--help", db=False).stdout
    for verb in ("submit", "change", "run-now", "broken", "export", "import", "worker", "demo"):
        assert verb in helptext
    out = cli("init").stdout
    assert out.startswith("initialised sqlite:///") and "schema version" in out
    engine = make_engine(sqlite_url)
    with engine.connect() as conn:
        tables = {r[0] for r in conn.execute(text("SELECT name FROM sqlite_master"))}
    engine.dispose()
    assert {"jobtui_job", "jobtui_run", "jobtui_runner", "jobtui_meta"} <= tables


def test_submit_list_show_json_and_tables(sqlite_url: str, cli_for) -> None:  # type: ignore[no-untyped-def]
    cli = cli_for(make_demo(sqlite_url))
    out = cli("submit", "nightly", "--sql", "SELECT 1", "--every", "60", "--description", "d")
    # its first run is now: submit says so, with the time and its zone's label
    assert re.fullmatch(
        r"submitted job nightly \(status ENABLED, first run now, [\d: -]+ UTC\)\n", out.stdout
    )
    out = cli(
        "submit", "paris", "--action", "demo.sleep", "--arg", "0.1",
        "--cron", "0 3 * * *", "--tz", "Europe/Paris", "--max-failures", "3",
    )  # fmt: skip
    # a later first run in the job's own zone (03:00 Paris time), labelled
    assert re.fullmatch(
        r"submitted job paris \(status ENABLED, first run \d{4}-\d\d-\d\d 03:00:00 "
        r"(CET|CEST)\)\n",
        out.stdout,
    )
    cli(
        "submit", "window", "--sql", "SELECT 2", "--once",
        "--start", "2030-01-01T10:00:00+02:00", "--disabled",
    )  # fmt: skip
    cli("submit", "daily", "--sql", "SELECT 3", "--expr", "datetime(NOW(), '+1 day')")

    jobs = cli.json("list")
    assert [j["name"] for j in jobs] == ["daily", "nightly", "paris", "window"]
    for job in jobs:
        assert set(job) >= JOB_FIELDS
        assert set(job["schedule"]) >= SCHEDULE_FIELDS
        assert set(job["what"]) >= WHAT_FIELDS
        _assert_iso(job["created"])
        _assert_iso(job["next_run"])
        assert job["last_run"] is None and job["last_outcome"] is None
        assert job["cycles"] == 0 and job["failures"] == 0 and job["broken"] is False
    by_name = {j["name"]: j for j in jobs}
    assert by_name["nightly"]["schedule"]["every"] == 60.0
    assert by_name["nightly"]["description"] == "d"
    assert by_name["paris"]["what"] == {"kind": "action", "target": "demo.sleep", "args": ["0.1"]}
    assert by_name["paris"]["schedule"]["tz"] == "Europe/Paris"
    assert by_name["paris"]["max_failures"] == 3
    assert by_name["window"]["status"] == "DISABLED"
    assert by_name["window"]["schedule"]["start"] == "2030-01-01T08:00:00+00:00"
    assert by_name["window"]["next_run"] == "2030-01-01T08:00:00+00:00"

    lines = cli("list").stdout.splitlines()
    header = lines[0].split()
    assert header[:2] == ["NAME", "STATUS"] and "FAILURES" in header and "CYCLES" in header
    assert "OWNER" not in header
    row = next(line for line in lines if line.startswith("paris "))
    assert "cron 0 3 * * * Europe/Paris" in row and "0/3" in row
    assert re.search(r" 03:00:00 (CET|CEST) ", row)  # NEXT RUN in the job's zone
    row = next(line for line in lines if line.startswith("nightly "))
    assert re.search(r" \d\d:\d\d:\d\d UTC ", row)
    # columns are aligned: every row's STATUS starts where the header's does
    col = lines[0].index("STATUS")
    assert all(line[col - 2 : col] == "  " and line[col] != " " for line in lines[1:])

    shown = cli.json("show", "paris")
    assert set(shown) >= JOB_FIELDS | {"upcoming"}
    assert len(shown["upcoming"]) == 5
    for t in shown["upcoming"]:
        _assert_iso(t)
    times = [datetime.fromisoformat(t) for t in shown["upcoming"]]
    assert times == sorted(set(times))
    # 03:00 in Paris is 02:00 UTC in December (01:00 UTC in summer)
    assert all(t.astimezone(UTC).hour in (1, 2) for t in times)
    assert len(cli.json("show", "daily")["upcoming"]) == 5  # evaluated by the database

    human = cli("show", "nightly").stdout
    for key in ("name", "status", "schedule", "what", "next_run", "failures", "upcoming"):
        assert re.search(rf"^{key}\b", human, re.MULTILINE), key
    assert "every 1 min" in human and "sql SELECT 1" in human
    assert "upcoming (UTC):" in human
    assert len(re.findall(r"^  \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$", human, re.MULTILINE)) == 5
    # a --tz job's upcoming runs are previewed in its zone, labelled
    human = cli("show", "paris").stdout
    assert "upcoming (Europe/Paris):" in human
    paris = re.findall(r"^  \d{4}-\d\d-\d\d 03:00:00 (CET|CEST)$", human, re.MULTILINE)
    assert len(paris) == 5


def test_show_lists_no_next_runs_while_the_schedule_is_halted(sqlite_url: str, cli_for) -> None:  # type: ignore[no-untyped-def]
    cli = cli_for(sqlite_url)
    cli("submit", "job", "--sql", "SELECT 1", "--every", "60")
    assert len(cli.json("show", "job")["upcoming"]) == 5
    for halt, undo, reason in [
        ("pause", "resume", "PAUSED: no run starts until resume"),
        ("disable", "enable", "DISABLED: no run starts until enable"),
        ("abort", "resume", "ABORTED: no run starts until resume, enable or run-now"),
        (("broken", "--on"), ("broken", "--off"), "BROKEN: no run starts until broken --off"),
    ]:
        cli(*([halt] if isinstance(halt, str) else halt), "job")
        assert cli.json("show", "job")["upcoming"] == [], halt
        assert f"upcoming: none ({reason}" in cli("show", "job").stdout, halt
        cli(*([undo] if isinstance(undo, str) else undo), "job")
        assert len(cli.json("show", "job")["upcoming"]) == 5, undo


def test_change_only_changes_what_is_given(sqlite_url: str, cli_for) -> None:  # type: ignore[no-untyped-def]
    cli = cli_for(make_demo(sqlite_url))
    cli(
        "submit", "job", "--action", "demo.sleep", "--arg", "1", "--every", "60",
        "--start", "2030-01-01T00:00:00Z", "--finish", "2031-01-01T00:00:00Z",
        "--description", "first", "--max-failures", "5",
    )  # fmt: skip
    before = cli.json("show", "job")

    def changed(*args: str) -> dict[str, Any]:
        nonlocal before
        after = cli.json("change", "job", *args)
        diff = {k: after[k] for k in after if after[k] != before[k]}
        before = after
        return diff

    assert changed("--description", "second") == {"description": "second"}
    assert changed("--max-failures", "7") == {"max_failures": 7}
    diff = changed("--every", "30")
    assert set(diff) == {"schedule"}  # next_run stays: the window start is still the first slot
    assert diff["schedule"]["every"] == 30.0
    assert diff["schedule"]["start"] == "2030-01-01T00:00:00+00:00"
    assert diff["schedule"]["finish"] == "2031-01-01T00:00:00+00:00"
    diff = changed("--no-finish")
    assert diff["schedule"]["finish"] is None and diff["schedule"]["every"] == 30.0
    diff = changed("--arg", "2", "--disabled")
    assert diff["what"] == {"kind": "action", "target": "demo.sleep", "args": ["2"]}
    assert diff["status"] == "DISABLED" and diff["intent"] == "DISABLED"
    diff = changed("--enable", "--cron", "*/5 * * * *", "--tz", "Asia/Tokyo", "--no-start")
    assert diff["status"] == "ENABLED" and diff["intent"] == "ENABLED"
    assert diff["schedule"]["kind"] == "cron" and diff["schedule"]["tz"] == "Asia/Tokyo"
    assert diff["schedule"]["start"] is None
    assert before["description"] == "second" and before["max_failures"] == 7
    out = cli("change", "job", "--sql", "SELECT 42").stdout
    assert out.startswith("changed job job (status ENABLED, next run ")
    assert _job(sqlite_url, "job").what == What("sql", "SELECT 42")


def test_steering_verbs_print_one_line_and_change_status(sqlite_url: str, cli_for) -> None:  # type: ignore[no-untyped-def]
    cli = cli_for(sqlite_url)
    _setup(sqlite_url, ("nightly", SQL, HOURLY))
    expected = [
        ("pause", "paused job nightly (status PAUSED)"),
        ("resume", "resumed job nightly (status RESUMED)"),
        ("disable", "disabled job nightly (status DISABLED)"),
        ("enable", "enabled job nightly (status ENABLED)"),
        ("abort", "aborted job nightly (status ABORTED)"),
        (
            "run-now",
            "asked a runner to run job nightly now (status ABORTED); no runner is alive: "
            "start `jobtui worker` or `jobtui console --runners N`",
        ),
    ]
    for verb, line in expected:
        assert cli(verb, "nightly").stdout == line + "\n"
    job = _job(sqlite_url, "nightly")
    assert job.run_now is True and job.phase == "ABORTED"
    assert cli("broken", "nightly", "--on").stdout == "marked job nightly broken (status BROKEN)\n"
    job_json = cli.json("enable", "nightly")
    assert job_json["status"] == "BROKEN" and job_json["broken"] is True
    out = cli("broken", "nightly", "--off", "--next", "2030-06-01T12:00:00+02:00").stdout
    assert out == (
        "cleared broken on job nightly (status ENABLED, next run 2030-06-01 10:00:00 UTC)\n"
    )
    job = _job(sqlite_url, "nightly")
    assert job.broken is False and job.next_run == datetime(2030, 6, 1, 10, tzinfo=UTC)


def test_remove_keeps_the_log_and_forgets_the_job(sqlite_url: str, cli_for) -> None:  # type: ignore[no-untyped-def]
    cli = cli_for(sqlite_url)
    _setup(sqlite_url, ("gone", SQL, ONCE), ("kept", SQL, ONCE))
    _insert_runs(sqlite_url, _job(sqlite_url, "gone"), 1)
    assert cli("remove", "gone").stdout == "removed job gone (its run log is kept)\n"
    assert [j["name"] for j in cli.json("list")] == ["kept"]
    proc = cli("show", "gone", ok=False)
    assert proc.returncode == 2 and "unknown job 'gone'" in proc.stderr
    assert [r["job"] for r in cli.json("log")] == ["gone"]


@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_export_import_round_trip(fmt: str, tmp_path: Path, cli_for) -> None:  # type: ignore[no-untyped-def]
    source = cli_for(make_demo(f"sqlite:///{tmp_path / 'a.db'}"))
    target = cli_for(make_demo(f"sqlite:///{tmp_path / 'b.db'}"))
    store = open_store(source.url)
    store.submit(
        "one",
        What("action", "demo.sleep", ("2",)),
        Schedule("cron", cron="30 4 * * 1-5", tz="Europe/Berlin"),
        description="weekday mornings",
        max_failures=4,
    )
    window = (datetime(2030, 1, 1, tzinfo=UTC), datetime(2030, 2, 1, tzinfo=UTC))
    store.submit(
        "two", SQL, Schedule("every", every=0.5, start=window[0], finish=window[1]), disabled=True
    )
    store.submit(
        "three", What("sql", "SELECT 2"), Schedule("expr", expr="datetime(NOW(), '+1 hour')")
    )
    store.close()
    exported = source("export", "--format", fmt).stdout
    if fmt == "json":
        assert isinstance(json.loads(exported), list)
    else:
        assert exported.startswith("- name: ")
    path = tmp_path / f"jobs.{fmt}"
    path.write_text(exported)
    out = target("import", str(path)).stdout
    assert out == "imported 3 job(s): 3 created, 0 changed\n"
    assert target("export", "--format", fmt).stdout == exported
    # again from stdin: the same names are changed, not duplicated
    out = target("import", "-", stdin=exported).stdout
    assert out == "imported 3 job(s): 0 created, 3 changed\n"
    a = {j["name"]: j for j in json.loads(source("list", "--json").stdout)}
    b = {j["name"]: j for j in target.json("list")}
    for name in a:
        for key in ("schedule", "what", "description", "max_failures", "status", "intent"):
            assert a[name][key] == b[name][key], (name, key)


def _insert_runs(url: str, job: Job, n: int, start: datetime | None = None) -> None:
    """Write run-log rows as a runner would (outcomes cycle ok, failed, aborted ...)."""
    outcomes = ["ok", "failed", "aborted", "skipped", "lost"]
    base = (start or datetime(2026, 1, 1, 12, 0, 0)).replace(tzinfo=None)
    engine = make_engine(url)
    with engine.begin() as conn:
        for i in range(n):
            slot = base + timedelta(minutes=i)
            outcome = outcomes[i % len(outcomes)]
            conn.execute(
                insert(schema.run).values(
                    job_id=job.id,
                    job_name=job.name,
                    owner=job.owner,
                    scheduled_for=slot,
                    started=slot + timedelta(seconds=1),
                    finished=slot + timedelta(seconds=3.5),
                    duration=2.5,
                    outcome=outcome,
                    error="boom\nsecond line" if outcome == "failed" else None,
                    runner="host:123:abc",
                    skipped=2 if outcome == "skipped" else 0,
                    manual=False,
                )
            )
    engine.dispose()


def test_log_reads_the_run_table(db_url: str, cli_for) -> None:  # type: ignore[no-untyped-def]
    cli = cli_for(db_url)
    _setup(db_url, ("a", SQL, HOURLY), ("b", SQL, HOURLY))
    _insert_runs(db_url, _job(db_url, "a"), 7)
    _insert_runs(db_url, _job(db_url, "b"), 2, start=datetime(2026, 2, 1))

    runs = cli.json("log")
    assert len(runs) == 9
    for run in runs:
        assert set(run) >= RUN_FIELDS
        for key in ("scheduled_for", "started", "finished"):
            _assert_iso(run[key])
    assert [r["job"] for r in runs[:2]] == ["b", "b"]  # latest first
    first_a = runs[2]
    assert first_a["scheduled_for"] == "2026-01-01T12:06:00+00:00"
    assert first_a["started"] == "2026-01-01T12:06:01+00:00"
    assert first_a["duration"] == 2.5
    assert first_a["outcome"] == "failed" and first_a["error"] == "boom\nsecond line"
    assert first_a["runner"] == "host:123:abc"
    assert [r["job"] for r in cli.json("log", "a", "--limit", "3")] == ["a"] * 3
    failed = cli.json("log", "--outcome", "failed")
    assert [r["outcome"] for r in failed] == ["failed"] * 3
    assert len(cli.json("log", "--all")) == 9

    human = cli("log", "a", "--limit", "5").stdout.splitlines()
    assert human[0].split()[:3] == ["SCHEDULED", "(UTC)", "JOB"]
    assert len(human) == 6
    assert any("failed" in line and "boom second line" in line for line in human)
    assert any("skipped (2 slots)" in line for line in human)
    assert cli("log", "--outcome", "running").stdout == "no runs\n"


def test_list_all_shows_every_owner(sqlite_url: str, cli_for) -> None:  # type: ignore[no-untyped-def]
    cli = cli_for(sqlite_url)
    _setup(sqlite_url, ("mine", SQL, ONCE), ("theirs", SQL, ONCE))
    engine = make_engine(sqlite_url)
    with engine.begin() as conn:
        conn.execute(update(schema.job).where(schema.job.c.name == "theirs").values(owner="alice"))
    engine.dispose()
    assert [j["name"] for j in cli.json("list")] == ["mine"]
    everyone = cli.json("list", "--all")
    assert {(j["owner"], j["name"]) for j in everyone} >= {("alice", "theirs")}
    lines = cli("list", "--all").stdout.splitlines()
    assert lines[0].split()[:2] == ["OWNER", "NAME"]
    assert any(line.split()[:2] == ["alice", "theirs"] for line in lines)


def test_runners_table_with_heartbeat_age(sqlite_url: str, cli_for) -> None:  # type: ignore[no-untyped-def]
    cli = cli_for(sqlite_url)
    assert cli.json("runners") == []
    assert cli("runners").stdout.startswith("no runners")
    now = datetime.now(UTC).replace(tzinfo=None)
    engine = make_engine(sqlite_url)
    with engine.begin() as conn:
        for rid, age in (("h1:1:a", 2), ("h2:2:b", 600)):
            conn.execute(
                insert(schema.runner).values(
                    id=rid,
                    name=rid.split(":")[0],
                    host=rid.split(":")[0],
                    pid=int(rid.split(":")[1]),
                    threads=4,
                    connection_id=None,
                    started=now - timedelta(hours=1),
                    heartbeat=now - timedelta(seconds=age),
                    stopping=False,
                )
            )
    engine.dispose()
    runners = cli.json("runners")
    assert [r["id"] for r in runners] == ["h1:1:a", "h2:2:b"]
    for r in runners:
        assert set(r) >= {"id", "name", "host", "pid", "threads", "heartbeat", "heartbeat_age"}
        assert set(r) >= {"started", "alive", "stopping", "connection_id"}
        _assert_iso(r["heartbeat"])
    assert runners[0]["alive"] is True and 1 < runners[0]["heartbeat_age"] < 60
    assert runners[1]["alive"] is False and runners[1]["heartbeat_age"] >= 600
    lines = cli("runners").stdout.splitlines()
    assert "HEARTBEAT AGE" in lines[0]
    assert " alive " in lines[1] and " dead " in lines[2]


# ---------------------------------------------------------------------- where the database is


def test_db_after_the_verb_and_from_the_environment(tmp_path: Path, cli_for) -> None:  # type: ignore[no-untyped-def]
    env_db = f"sqlite:///{tmp_path / 'env.db'}"
    flag_db = f"sqlite:///{tmp_path / 'flag.db'}"
    cli = cli_for(None)
    cli("submit", "from_env", "--sql", "SELECT 1", "--once", env={"JOBTUI_DB": env_db})
    cli("submit", "after_verb", "--sql", "SELECT 1", "--once", "--db", str(tmp_path / "flag.db"))
    # --db wins over the environment, wherever it is given
    names_flag = json.loads(
        cli("list", "--json", "--db", flag_db, env={"JOBTUI_DB": env_db}).stdout
    )
    names_env = json.loads(cli("list", "--json", env={"JOBTUI_DB": env_db}).stdout)
    assert [j["name"] for j in names_flag] == ["after_verb"]
    assert [j["name"] for j in names_env] == ["from_env"]
    # a bare path is a SQLite file (above); without anything, the data directory's file
    cli("list")
    assert (tmp_path / "xdg" / "jobtui" / "jobtui.db").exists()


def test_password_never_printed_for_an_unreachable_server(tmp_path: Path, cli_for) -> None:  # type: ignore[no-untyped-def]
    cli = cli_for("mysql+pymysql://u:sekret@127.0.0.1:1/x")
    for args in (("list", "--json"), ("submit", "j", "--sql", "SELECT 1", "--once")):
        proc = cli(*args, ok=False)
        assert proc.returncode == 1
        assert "sekret" not in proc.stdout + proc.stderr
        assert proc.stderr.startswith("jobtui: error: database unavailable")
        assert proc.stderr.count("\n") == 1 and "***" in proc.stderr


@pytest.mark.mariadb
def test_mariadb_wrong_password_and_stored_procedure(mariadb_url: str, cli_for) -> None:  # type: ignore[no-untyped-def]
    from support.mariadb import admin_connection

    database = mariadb_url.rsplit("/", 1)[1]
    wrong = mariadb_url.replace("://root@", "://root:sekret@")
    proc = cli_for(wrong)("list", ok=False)
    assert proc.returncode == 1 and "sekret" not in proc.stdout + proc.stderr
    assert "Access denied" in proc.stderr and proc.stderr.count("\n") == 1

    conn = admin_connection(database)
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE t (x INT)")
        cur.execute("CREATE PROCEDURE add_row(IN v INT) INSERT INTO t VALUES (v)")
    conn.close()
    cli = cli_for(mariadb_url)
    cli("submit", "proc", "--call", f"{database}.add_row", "--arg", "7", "--every", "60")
    job = cli.json("show", "proc")
    assert job["what"] == {"kind": "call", "target": f"{database}.add_row", "args": ["7"]}
    assert job["owner"] and "@" in job["owner"]  # CURRENT_USER() on MariaDB
    cli("submit", "daily", "--sql", "SELECT 3", "--expr", "NOW() + INTERVAL 1 DAY")
    daily = cli.json("show", "daily")
    times = [datetime.fromisoformat(t) for t in daily["upcoming"]]
    assert len(times) == 5
    for a, b in itertools.pairwise(times):  # MariaDB's NOW() has whole seconds
        assert timedelta(days=1, seconds=-1) < b - a <= timedelta(days=1)
    _assert_iso(daily["upcoming"][0])
    lines = cli("list", "--all").stdout.splitlines()
    assert lines[0].startswith("OWNER") and job["owner"] in lines[1]
    assert "expr NOW() + INTERVAL 1 DAY" in lines[1]


@pytest.mark.mariadb
def test_init_on_a_database_that_does_not_exist_says_to_create_it(
    mariadb_url: str, cli_for
) -> None:  # type: ignore[no-untyped-def]
    from support.mariadb import admin_connection

    missing = f"{mariadb_url}_missing"  # the fixture's name with a suffix: never created
    name = missing.rsplit("/", 1)[1]
    proc = cli_for(missing)("init", ok=False)
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "database unavailable" not in proc.stderr
    hint = f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"
    assert f"database '{name}' does not exist on this server: create it first" in proc.stderr
    assert hint in proc.stderr and "then run `jobtui init`" in proc.stderr
    # the hint, as printed, is what makes init work
    conn = admin_connection()
    try:
        with conn.cursor() as cur:
            cur.execute(hint)
        cli_for(missing)("init")
    finally:
        with conn.cursor() as cur:
            cur.execute(f"DROP DATABASE IF EXISTS `{name}`")
        conn.close()


# ---------------------------------------------------------------------- runner and console verbs


@pytest.mark.parametrize(
    ("verb", "module", "part"),
    [
        ("worker", "jobtui.core.worker", "runner"),
        ("run", "jobtui.core.worker", "runner"),
        ("console", "jobtui.console.app", "console"),
    ],
)
def test_missing_runner_or_console_is_reported_clearly(
    verb: str, module: str, part: str, sqlite_url: str, tmp_path: Path
) -> None:
    """A broken installation (the module cannot be imported) is one clear line, exit 1."""
    argv = [verb, "nightly"] if verb == "run" else [verb]
    code = (
        f"import sys; sys.modules[{module!r}] = None\n"
        "from jobtui.cli import main\n"
        f"raise SystemExit(main(['--db', {sqlite_url!r}, *{argv!r}]))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=_env(tmp_path),
        timeout=60,
    )
    assert proc.returncode == 1
    assert proc.stderr.startswith(f"jobtui: error: the {part} is not available")
    assert module in proc.stderr and proc.stderr.count("\n") == 1


def test_run_foreground_runs_a_once_job(sqlite_url: str, cli_for) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("jobtui.core.worker", reason="the runner module is not there yet")
    cli = cli_for(sqlite_url)
    _setup(sqlite_url, ("once", What("sql", "CREATE TABLE ran (x INTEGER)"), ONCE))
    cli("run", "once")
    runs = cli.json("log", "once")
    assert [r["outcome"] for r in runs] == ["ok"]
    assert _job(sqlite_url, "once").status.value == "FINISHED"
    proc = cli("run", "nope", ok=False)
    assert proc.returncode == 2 and "unknown job 'nope'" in proc.stderr


def test_closed_stdout_exits_quietly(sqlite_url: str, tmp_path: Path) -> None:
    """`jobtui list | head -0`: no traceback, no 'Exception ignored', exit 141."""
    _setup(sqlite_url, ("a", SQL, ONCE))
    proc = subprocess.Popen(
        [sys.executable, "-m", "jobtui", "--db", sqlite_url, "list", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(tmp_path),
    )
    assert proc.stdout is not None
    proc.stdout.close()  # long before the process has imported anything
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 141 and err == ""


@pytest.mark.mariadb
def test_mariadb_account_with_a_password_is_masked_and_owns_its_jobs(
    mariadb_url: str, cli_for
) -> None:  # type: ignore[no-untyped-def]
    import secrets

    from support.mariadb import admin_connection

    database = mariadb_url.rsplit("/", 1)[1]
    user = f"jt_cli_{secrets.token_hex(4)}"
    conn = admin_connection()
    with conn.cursor() as cur:
        cur.execute(f"CREATE USER '{user}'@'%' IDENTIFIED BY 'sekret-pw'")
        cur.execute(
            f"GRANT ALL ON `{database}`.* TO '{user}'@'%' WITH GRANT OPTION"
        )  # init's account: the keeper seals with it
    try:
        url = mariadb_url.replace("://root@", f"://{user}:sekret-pw@")
        cli = cli_for(url)
        outputs = [cli("init").stdout]
        outputs.append(cli("submit", "mine", "--sql", "SELECT 1", "--every", "60").stdout)
        job = cli.json("show", "mine")
        assert job["owner"] == f"{user}@%"
        outputs.append(cli("list", "--all").stdout)
        failing = cli("show", "nope", ok=False)
        outputs += [failing.stdout, failing.stderr]
        assert "sekret" not in "".join(outputs)
        assert f"://{user}:***@" in outputs[0]
    finally:
        with conn.cursor() as cur:
            cur.execute(f"DROP USER IF EXISTS '{user}'@'%'")
        conn.close()
