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
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import insert
from support.fuzzing import dump, forget, one_line_error

from jobtui.core import schema
from jobtui.core.backends.registry import make_engine
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
    pytest.param(
        ["submit", "x", *S, "--cron", "61 * * * *"],
        2,
        "the minute field (field 1) '61' is out of range: the minute takes 0-59",
        id="cron-61",
    ),
    pytest.param(
        ["submit", "x", *S, "--cron", "0 3 * 13 *"],
        2,
        "the month field (field 4) '13' is out of range",
        id="cron-month-13",
    ),
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
    pytest.param(
        ["worker", "--takeover-grace", "-1"],
        2,
        "invalid --takeover-grace '-1': expected a number of seconds from 0 to 3600",
        id="worker-takeover-grace-negative",
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
    # import files that would never end, or take all memory or the stack (issue #11)
    pytest.param(["import", "{tmp}/deep.json"], 2, "nested more than 32", id="import-deep-json"),
    pytest.param(["import", "{tmp}/deep.yaml"], 2, "nested more than 32", id="import-deep-yaml"),
    pytest.param(
        ["import", "{tmp}/deepflow.yaml"], 2, "nested more than 32", id="import-deep-flow"
    ),
    pytest.param(["import", "{tmp}/laughs.yaml"], 2, "more than 1,000,000", id="import-laughs"),
    pytest.param(["import", "{tmp}/aliases.yaml"], 2, "more than 1000 aliases", id="import-alias"),
    pytest.param(["import", "{tmp}/wide.json"], 2, "more than 1,000,000", id="import-wide"),
    pytest.param(["import", "{tmp}/huge.json"], 2, "larger than 8 MiB", id="import-huge"),
    pytest.param(["import", "{tmp}/bigint.yaml"], 2, "cannot be read", id="import-bigint"),
    pytest.param(["import", "/dev/zero"], 2, "not a regular file", id="import-dev-zero"),
    pytest.param(["import", "{tmp}/fifo"], 2, "not a regular file", id="import-fifo"),
    pytest.param(["import", "{tmp}"], 2, "not a regular file", id="import-directory"),
    *(
        pytest.param(["--db", url, "list"], 2, phrase, id=f"db-{key}")
        for key, url, phrase in [
            ("one-slash", "mysql+pymysql:/alice:sekret@host/db", "two slashes"),
            ("empty", "", "empty"),
            ("blank", "  ", "empty"),
            ("no-scheme", "alice:sekret@host/db", "two slashes"),
            ("creds-path", "./alice:sekret@host/db", "USER:PASSWORD@HOST without a scheme"),
            ("sqlite-one-slash", "sqlite:/x.db", "two slashes"),
            ("sqlite-host", "sqlite://x.db", "sqlite:///PATH"),
            ("sqlite-no-path", "sqlite:///", "needs a file PATH"),
            ("sqlite-option", "sqlite:///x.db?mode=ro", "takes no ?options"),
            ("port-big", "mysql+pymysql://u:sekret@127.0.0.1:99999/db", "invalid port 99999"),
            ("port-zero", "mysql+pymysql://u:sekret@127.0.0.1:0/db", "invalid port 0"),
            ("port-abc", "mysql+pymysql://u:sekret@127.0.0.1:abc/db", "invalid database URL"),
            ("no-database", "mysql+pymysql://u:sekret@127.0.0.1", "no /DATABASE"),
            ("no-host", "mysql+pymysql:///db", "no HOST"),
            ("host-space", "mysql+pymysql://u:sekret@ho st/db", "invalid host"),
            ("option-unknown", "mysql+pymysql://u:sekret@h/db?bogus=1", "unknown connect option"),
            ("option-infile", "mysql+pymysql://u:sekret@h/db?local_infile=1", "'local_infile'"),
            ("timeout-abc", "mysql+pymysql://u:sekret@h/db?connect_timeout=abc", "whole seconds"),
            ("timeout-0", "mysql+pymysql://u:sekret@h/db?connect_timeout=0", "whole seconds"),
            ("charset", "mysql+pymysql://u:sekret@h/db?charset=latin1", "utf8mb4"),
            (
                "option-twice",
                "mysql+pymysql://u:sekret@h/db?read_timeout=1&read_timeout=2",
                "twice",
            ),
            ("password-option", "mysql+pymysql://u@h/db?password=sekret&x=1", "unknown connect"),
            (
                "option-file-missing",
                "mysql+pymysql://u@h/db?read_default_file={tmp}/no.cnf",
                "file",
            ),
            ("option-file-bad", "mysql+pymysql://u@h/db?read_default_file={tmp}/bad.cnf", "line 1"),
            ("control", "mysql+pymysql://u:sekret@h/db\x1b[2J", "control characters"),
        ]
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
    "import-deep-json",
    "import-laughs",
    "import-dev-zero",
    "import-fifo",
    "db-one-slash",
    "db-empty",
    "db-port-abc",
    "db-option-unknown",
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
    pytest.param(
        ["submit", "x", "--call", "{db}.add_row", "--arg", "abc", *E],
        2,
        "invalid --arg 'abc': parameter 1 (v) of {db}.add_row is INT(11): expected a whole number",
        id="arg-not-int",
    ),
    pytest.param(
        ["submit", "x", "--call", "{db}.add_row", "--arg", "3000000000", *E],
        2,
        "expected a whole number from -2147483648 to 2147483647",
        id="arg-int-range",
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


def _laughs() -> str:
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 10)]
    lines.append(
        'jobs: [{name: x, what: {kind: sql, target: "SELECT 1", args: *a9}, '
        "schedule: {kind: every, every: 60}}]"
    )
    return "\n".join(lines) + "\n"


# Import files that are bombs of one kind or another (all small on disk but one),
# written only for the case that names them.
BAD_FILES: dict[str, Callable[[], str]] = {
    "deep.json": lambda: "[" * 100_000 + "]" * 100_000,
    "deep.yaml": lambda: "- " * 20_000 + "x\n",
    "deepflow.yaml": lambda: "jobs: " + "[" * 50_000 + "]" * 50_000 + "\n",
    "laughs.yaml": _laughs,
    "aliases.yaml": lambda: "a: &a x\nb: [" + ", ".join(["*a"] * 1001) + "]\n",
    "wide.json": lambda: "[" + ",".join(["0"] * 1_000_001) + "]",
    "huge.json": lambda: "[" + " " * (8 * 1024 * 1024) + "]",
    "bigint.yaml": lambda: "- " + "9" * 100_000 + "\n",
    "bad.cnf": lambda: "password = sekret\n",  # no [client] line before it
}


def _bad_files(tmp_path: Path, args: list[str]) -> None:
    for name, content in BAD_FILES.items():
        if any(f"{{tmp}}/{name}" in a for a in args):
            (tmp_path / name).write_text(content())
    if any("{tmp}/fifo" in a for a in args):
        os.mkfifo(tmp_path / "fifo")


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
    _bad_files(tmp_path, args)
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
    _bad_files(tmp_path, args)
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
    from support.mariadb import admin_connection

    database = mariadb_url.rsplit("/", 1)[1]
    conn = admin_connection(database)
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE t (x INT)")
        cur.execute("CREATE PROCEDURE add_row(IN v INT) INSERT INTO t VALUES (v)")
    conn.close()
    _populate(mariadb_url, tmp_path)
    args = [a.replace("{db}", database) for a in args]
    _check(mariadb_url, args, code, phrase.replace("{db}", database), tmp_path)


DB_CASES = [case for case in SQLITE_CASES if case.id.startswith("db-")]


@pytest.mark.parametrize(("args", "code", "phrase"), DB_CASES)
def test_a_bad_database_url_creates_nothing_and_shows_no_password(
    args: list[str], code: int, phrase: str, tmp_path: Path
) -> None:
    """Issue #11 (12): a URL that does not parse is not taken for a SQLite path.

    Run where a file would land (the working directory, the data directory):
    afterwards both are as they were, and the password is nowhere in the output.
    """
    _bad_files(tmp_path, args)
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    work = tmp_path / "cwd"
    work.mkdir()
    before = sorted(p.name for p in tmp_path.iterdir())
    env = {k: v for k, v in os.environ.items() if k not in ("JOBTUI_DB", "JOBTUI_DEBUG")}
    env["XDG_DATA_HOME"] = str(tmp_path / "xdg")
    proc = subprocess.run(
        [sys.executable, "-m", "jobtui", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=work,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    _assert_refused(proc.returncode, proc.stdout, proc.stderr, code, phrase)
    assert "sekret" not in proc.stdout
    assert list(work.iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no xdg/jobtui/jobtui.db


def test_an_empty_jobtui_db_means_the_default_and_a_bad_one_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from jobtui.cli import main

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("JOBTUI_DB", "mysql+pymysql:/alice:sekret@host/db")
    assert main(["list"]) == 2
    out, err = capsys.readouterr()
    line = one_line_error(2, out, err)
    assert "invalid JOBTUI_DB" in line and "sekret" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    monkeypatch.setenv("JOBTUI_DB", "")  # unset, as a shell would have it
    assert main(["list"]) == 0
    assert (tmp_path / "xdg" / "jobtui" / "jobtui.db").exists()
