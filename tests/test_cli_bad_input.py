"""Bad input to the command line: one clear line, the right exit code, nothing changed.

Every case runs ``python -m jobtui`` in a subprocess against a real database
holding a few jobs, a run and a runner, and asserts:

- the exit code (2 bad input / unknown job / refused, 1 database unreachable),
- exactly one stderr line, ``jobtui: error: ...`` containing the key phrase,
  no traceback, nothing on stdout, no password,
- every jobtui table is byte-for-byte what it was before.
"""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from fuzzing import dump, forget, one_line_error
from sqlalchemy import insert

from jobtui.core import schema
from jobtui.core.db import make_engine
from jobtui.core.model import Schedule, What
from jobtui.core.store import open_store

S = ["--sql", "SELECT 1"]  # a valid what
E = ["--every", "60"]  # a valid schedule
UNREACHABLE = "mysql+pymysql://u:sekret@127.0.0.1:1/x"

# (arguments, exit code, key phrase). "{tmp}" is the test's directory.
SQLITE_CASES: list[Any] = [
    pytest.param(["show", "nope"], 2, "unknown job 'nope'", id="unknown-job-show"),
    pytest.param(["change", "nope", *E], 2, "unknown job 'nope'", id="unknown-job-change"),
    pytest.param(["run-now", "nope"], 2, "unknown job 'nope'", id="unknown-job-run-now"),
    pytest.param(
        ["pause", "nightly", "--owner", "nobody@%"],
        2,
        "unknown job 'nightly' for owner 'nobody@%'",
        id="unknown-owner",
    ),
    pytest.param(["pause", "nightly", "--owner", ""], 2, "invalid --owner ''", id="owner-empty"),
    pytest.param(
        ["show", "nightly", "--owner", "a\x1b[2Jb"], 2, "invalid --owner", id="owner-control"
    ),
    pytest.param(["submit", "x", *S, "--cron", "61 * * * *"], 2, "invalid cron", id="cron-61"),
    pytest.param(["submit", "x", *S, "--cron", "daily"], 2, "expected 5 fields", id="cron-word"),
    pytest.param(["submit", "x", *S, "--every", "0"], 2, "invalid --every '0'", id="every-0"),
    pytest.param(["submit", "x", *S, "--every", "-1"], 2, "invalid --every '-1'", id="every-neg"),
    pytest.param(["submit", "x", *S, "--every", "abc"], 2, "invalid --every 'abc'", id="every-abc"),
    pytest.param(
        ["submit", "x", *S, *E, "--start", "2030-02-01T00:00:00", "--finish", "2030-01-01"],
        2,
        "is not after start",
        id="finish-before-start",
    ),
    pytest.param(
        ["submit", "x", *S, *E, "--start", "tomorrow"], 2, "invalid --start", id="bad-when"
    ),
    pytest.param(
        ["broken", "nightly", "--off", "--next", "31/12/2030"], 2, "ISO 8601", id="bad-next"
    ),
    pytest.param(
        ["submit", "x", "--call", "db.pro`c", *E], 2, "invalid procedure name", id="proc-backtick"
    ),
    pytest.param(
        ["submit", "x", "--call", "db.p;DROP TABLE t", *E], 2, "invalid procedure", id="proc-semi"
    ),
    pytest.param(["submit", "x", "--call", "proc", *E], 2, "SCHEMA.PROC", id="proc-no-schema"),
    pytest.param(["submit", "x", "--call", "db.p", *E], 2, "needs MySQL", id="call-on-sqlite"),
    pytest.param(
        ["submit", "x", *S, *E, "--tz", "Europe/Paris"], 2, "--tz is only accepted", id="tz-alone"
    ),
    pytest.param(
        ["submit", "x", *S, "--cron", "* * * * *", "--tz", "Mars/Base"],
        2,
        "unknown time zone",
        id="tz-unknown",
    ),
    pytest.param(
        ["submit", "x", *S, *E, "--cron", "* * * * *"], 2, "give one schedule", id="two-schedules"
    ),
    pytest.param(["submit", "x", *S], 2, "no schedule", id="no-schedule"),
    pytest.param(
        ["submit", "x", *S, "--action", "demo.noop", *E], 2, "give one thing", id="two-whats"
    ),
    pytest.param(["submit", "x", *E], 2, "nothing to run", id="no-what"),
    pytest.param(
        ["submit", "x", *S, *E, "--max-failures", "0"], 2, "invalid --max-failures", id="maxf-0"
    ),
    pytest.param(
        ["submit", "x", *S, *E, "--max-failures", "1.5"], 2, "invalid --max-failures", id="maxf-1.5"
    ),
    pytest.param(["submit", "x", "--action", "nope", *E], 2, "unknown action", id="unknown-action"),
    pytest.param(
        ["submit", "x", "--sql", "SELECT 1; DROP TABLE jobtui_job", *E],
        2,
        "more than one SQL statement",
        id="sql-two-statements",
    ),
    pytest.param(
        ["submit", "x", "--sql", "SELEC 1", *E], 2, "the database rejected it", id="sql-syntax"
    ),
    pytest.param(
        ["submit", "x", *S, "--arg", "1", *E], 2, "--arg is only accepted", id="arg-with-sql"
    ),
    pytest.param(["submit", "nightly", *S, *E], 2, "already exists", id="duplicate-name"),
    pytest.param(["submit", "bad name!", *S, *E], 2, "invalid job name", id="bad-job-name"),
    pytest.param(
        ["submit", "x", *S, "--expr", "NOW(); DELETE FROM jobtui_job"],
        2,
        "is not allowed",
        id="expr-statement",
    ),
    pytest.param(["submit", "x", *S, "--expr", "NOW()"], 2, "not after NOW()", id="expr-not-later"),
    pytest.param(["change", "nightly"], 2, "nothing to change", id="change-nothing"),
    pytest.param(
        ["change", "nightly", "--description", "new", "--every", "0"],
        2,
        "invalid --every",
        id="change-half-valid",
    ),
    pytest.param(
        ["change", "nightly", "--description", "new", "--sql", "SELECT 1; SELECT 2"],
        2,
        "more than one SQL statement",
        id="change-bad-sql",
    ),
    pytest.param(["remove", "nope"], 2, "unknown job 'nope'", id="remove-unknown"),
    pytest.param(
        ["change", "nightly", "--start", "2030-01-01", "--no-start"],
        2,
        "not both",
        id="start-twice",
    ),
    pytest.param(["pause", "done"], 2, "is FINISHED", id="pause-finished"),
    pytest.param(["resume", "off"], 2, "jobtui enable off", id="resume-disabled"),
    pytest.param(["broken", "nightly"], 2, "--on --off is required", id="broken-no-flag"),
    pytest.param(["frobnicate"], 2, "invalid choice", id="unknown-verb"),
    pytest.param(["list", "--colour"], 2, "unrecognized arguments", id="unknown-option"),
    pytest.param(["log", "--limit", "0"], 2, "invalid --limit", id="log-limit-0"),
    pytest.param(["log", "--outcome", "meh"], 2, "invalid outcome", id="log-outcome"),
    pytest.param(
        ["worker", "--heartbeat-timeout", "0"],
        2,
        "invalid --heartbeat-timeout '0': expected a number of seconds from 1 to 3600",
        id="worker-heartbeat-0",
    ),
    pytest.param(
        ["worker", "--lead", "6"],
        2,
        "invalid --lead '6': expected a number of seconds from 0 to 5",
        id="worker-lead-6",
    ),
    pytest.param(["import", "{tmp}/nope.json"], 2, "cannot read import file", id="import-missing"),
    pytest.param(["import", "{tmp}/half.json"], 2, "job #2", id="import-half-valid"),
    pytest.param(["import", "{tmp}/junk.txt"], 2, "expected JSON or YAML", id="import-junk"),
    pytest.param(
        ["console", "--read-only", "--runners", "2"], 2, "cannot host runners", id="ro-runners"
    ),
    pytest.param(["--db", UNREACHABLE, "list"], 1, "database unavailable", id="unreachable-mysql"),
    pytest.param(
        ["submit", "x", *S, *E, "--db", UNREACHABLE], 1, "database unavailable", id="unreach-submit"
    ),
    pytest.param(
        ["--db", "sqlite:////proc/jobtui/x.db", "list"], 1, "cannot create", id="unreachable-file"
    ),
    pytest.param(
        ["--db", "postgresql://u:sekret@h/db", "list"], 2, "unsupported database", id="bad-url"
    ),
]

# The list and a few refusals also run as real subprocesses (the rest in-process).
SUBPROCESS_IDS = {
    "unknown-job-show",
    "cron-61",
    "every-0",
    "every-neg",
    "every-abc",
    "finish-before-start",
    "bad-when",
    "proc-backtick",
    "proc-semi",
    "tz-alone",
    "two-schedules",
    "no-schedule",
    "two-whats",
    "maxf-0",
    "unknown-action",
    "sql-two-statements",
    "duplicate-name",
    "pause-finished",
    "unknown-verb",
    "import-half-valid",
    "unreachable-mysql",
    "bad-url",
}
SUBPROCESS_CASES = [case for case in SQLITE_CASES if case.id in SUBPROCESS_IDS]

MARIADB_CASES: list[Any] = [
    pytest.param(
        ["submit", "x", "--call", "{db}.add`row", *E], 2, "invalid procedure", id="backtick"
    ),
    pytest.param(["submit", "x", "--call", "{db}.missing", *E], 2, "does not exist", id="missing"),
    pytest.param(
        ["submit", "x", "--call", "{db}.add_row", *E], 2, "takes 1 argument", id="arg-count"
    ),
    pytest.param(["submit", "nightly", *S, *E], 2, "already exists", id="duplicate"),
    pytest.param(["submit", "x", "--sql", "SELEC 1", *E], 2, "rejected it", id="sql-syntax"),
    pytest.param(
        ["submit", "x", *S, "--expr", "NOW() + INTERVAL 1 FORTNIGHT"], 2, "rejected", id="expr"
    ),
]


def _populate(url: str, tmp_path: Path) -> None:
    """A database with jobs in several states, a run and a runner; and import files."""
    store = open_store(url)
    past = datetime.now(UTC) - timedelta(days=2)
    try:
        store.submit("nightly", What("sql", "SELECT 1"), Schedule("every", every=3600.0))
        store.submit(
            "done",
            What("sql", "SELECT 1"),
            Schedule("once", start=past, finish=past + timedelta(hours=1)),
        )
        store.submit("off", What("sql", "SELECT 1"), Schedule("every", every=60.0), disabled=True)
        job = store.get("nightly")
    finally:
        store.close()
    now = datetime.now(UTC).replace(tzinfo=None, microsecond=0)
    engine = make_engine(url)
    with engine.begin() as conn:
        conn.execute(
            insert(schema.run).values(
                job_id=job.id,
                job_name=job.name,
                owner=job.owner,
                scheduled_for=now,
                started=now,
                finished=now,
                duration=0.0,
                outcome="ok",
                runner="r1",
                skipped=0,
                manual=False,
            )
        )
        conn.execute(
            insert(schema.runner).values(
                id="r1", name="r1", host="h", pid=1, threads=1, started=now, heartbeat=now
            )
        )
    engine.dispose()
    (tmp_path / "half.json").write_text(
        '[{"name": "fresh", "what": {"kind": "sql", "target": "SELECT 1"},'
        ' "schedule": {"kind": "every", "every": 5}},'
        ' {"name": "bad", "what": {"kind": "sql", "target": "SELECT 1"},'
        ' "schedule": {"kind": "every", "every": 0}}]'
    )
    (tmp_path / "junk.txt").write_text("{ this is: [not, json, nor yaml\n")


def _run(url: str, args: list[str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "jobtui"]
    if "--db" not in args:
        argv += ["--db", url]
    env = {k: v for k, v in os.environ.items() if k not in ("JOBTUI_DB", "JOBTUI_DEBUG")}
    env["XDG_DATA_HOME"] = str(tmp_path / "xdg")
    return subprocess.run(
        [*argv, *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def _assert_refused(returncode: int, stdout: str, stderr: str, code: int, phrase: str) -> None:
    line = one_line_error(returncode, stdout, stderr.replace("\r\n", "\n"), code)
    assert phrase in line, line
    assert "sekret" not in stderr


def _check(url: str, args: list[str], code: int, phrase: str, tmp_path: Path) -> None:
    before = dump(url)
    proc = _run(url, args, tmp_path)
    _assert_refused(proc.returncode, proc.stdout, proc.stderr, code, phrase)
    assert dump(url) == before
    forget(url)


@pytest.mark.parametrize(("args", "code", "phrase"), SUBPROCESS_CASES)
def test_bad_input_on_sqlite(
    args: list[str], code: int, phrase: str, sqlite_url: str, tmp_path: Path
) -> None:
    _populate(sqlite_url, tmp_path)
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    _check(sqlite_url, args, code, phrase, tmp_path)


@pytest.mark.parametrize(("args", "code", "phrase"), SQLITE_CASES)
def test_bad_input_in_process(
    args: list[str],
    code: int,
    phrase: str,
    sqlite_url: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The whole corpus through ``jobtui.cli.main`` (the same code, no process start-up)."""
    from jobtui.cli import main

    monkeypatch.delenv("JOBTUI_DB", raising=False)
    monkeypatch.delenv("JOBTUI_DEBUG", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    _populate(sqlite_url, tmp_path)
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    before = dump(sqlite_url)
    capsys.readouterr()
    returncode = main(args if "--db" in args else ["--db", sqlite_url, *args])
    out, err = capsys.readouterr()
    _assert_refused(returncode, out, err, code, phrase)
    assert dump(sqlite_url) == before
    forget(sqlite_url)


@pytest.mark.mariadb
@pytest.mark.parametrize(("args", "code", "phrase"), MARIADB_CASES)
def test_bad_input_on_mariadb(
    args: list[str], code: int, phrase: str, mariadb_url: str, tmp_path: Path
) -> None:
    from conftest import admin_connection

    database = mariadb_url.rsplit("/", 1)[1]
    conn = admin_connection(database)
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE t (x INT)")
        cur.execute("CREATE PROCEDURE add_row(IN v INT) INSERT INTO t VALUES (v)")
    conn.close()
    _populate(mariadb_url, tmp_path)
    args = [a.replace("{db}", database) for a in args]
    _check(mariadb_url, args, code, phrase, tmp_path)
