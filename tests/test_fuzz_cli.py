# ruff: noqa: RUF001  (look-alike characters are the point)
"""The command line, fuzzed: every input works as documented or is refused cleanly.

Hypothesis builds names, identifiers, cron and expression strings, windows and
numbers at and past their limits (quotes, backticks, semicolons, NUL, Unicode
look-alikes, over-long text) and runs ``jobtui.cli.main(argv)`` in-process
against a real database. Each case must either

- succeed (exit 0) and do what docs/cli.md says, or
- be refused with exactly one stderr line ``jobtui: error: ...``, exit code 2,
  nothing on stdout, no traceback, and every jobtui table unchanged.

SQLite always (a fresh copy of a populated file per example); a smaller run on
MariaDB. A few cases also run as real subprocesses (argv bytes, a C locale).
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import insert, select

from jobtui.cli import main
from jobtui.core import schema
from jobtui.core.db import make_engine
from jobtui.core.model import JOB_NAME_RE, Schedule, What
from jobtui.core.schedules import MAX_EVERY, MIN_EVERY
from jobtui.core.store import MAX_MAX_FAILURES, open_store
from jobtui.core.transitions import derive_status

FUZZ = settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
SMALL = settings(FUZZ, max_examples=30)

S = ["--sql", "SELECT 1"]
E = ["--every", "60"]

# Text that has broken parsers, quoting and terminals before.
NASTY = [
    "",
    " ",
    "x",
    "a" * 64,
    "a" * 65,
    "a" * 5000,
    "'",
    '"',
    "`",
    "x`; DROP TABLE jobtui_job; --",
    "x'; DELETE FROM jobtui_job; --",
    'x"; DELETE FROM jobtui_run; --',
    "x\x00y",
    "\x00",
    "x\ny",
    "x\r\ny",
    "x\ty",
    "\x1b[31mred",
    "jоb",  # Cyrillic o
    "ｊｏｂ",  # fullwidth
    "job\u200b",  # zero-width space
    "\u202eboj",  # right-to-left override
    "Ⅸ",
    "١٢٣",  # Arabic-Indic digits
    "😀",
    "\udcff",  # a byte that was not UTF-8 on argv (surrogateescape)
    "-x",
    "--db",
    "%s",
    "{0}",
    "$(id)",
    "../../etc/passwd",
    "NULL",
    "nightly",
    "done",
    "Nightly",
]


def nasty_text(max_size: int = 80) -> st.SearchStrategy[str]:
    return st.one_of(
        st.sampled_from(NASTY),
        st.text(max_size=max_size),
        st.text(alphabet="ab_.-`'\";\x00 \\$#/*()", max_size=max_size),
        st.from_regex(r"[A-Za-z0-9_][A-Za-z0-9_.\-]{0,70}", fullmatch=True),
    )


# ---------------------------------------------------------------------- the database


def populate(url: str) -> None:
    """Jobs in several states, one run and one runner."""
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
        store.submit("held", What("action", "demo.noop"), Schedule("every", every=30.0))
        store.pause("held")
        job = store.get("nightly")
        now = datetime.now(UTC).replace(tzinfo=None, microsecond=0)
        with store.engine.begin() as conn:
            conn.execute(
                insert(schema.run).values(
                    job_id=job.id,
                    job_name=job.name,
                    owner=job.owner,
                    scheduled_for=now,
                    started=now,
                    finished=now,
                    duration=0.0,
                    outcome="failed",
                    error="it went wrong",
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
    finally:
        store.close()


_engines: dict[str, Any] = {}


def _engine(url: str) -> Any:
    if url not in _engines:
        _engines[url] = make_engine(url)
    return _engines[url]


def _forget(url: str) -> None:
    engine = _engines.pop(url, None)
    if engine is not None:
        engine.dispose()


def dump(url: str) -> dict[str, list[tuple[Any, ...]]]:
    with _engine(url).connect() as conn:
        return {
            t.name: [tuple(r) for r in conn.execute(select(t).order_by(*t.primary_key.columns))]
            for t in schema.metadata.sorted_tables
        }


def check_consistent(url: str) -> None:
    """Every job row's status is what its state columns say."""
    with _engine(url).connect() as conn:
        for row in conn.execute(select(schema.job)):
            assert (
                row.status
                == derive_status(
                    intent=row.intent,
                    broken=bool(row.broken),
                    running=bool(row.running),
                    phase=row.phase,
                ).value
            ), row


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("fuzz") / "template.db"
    populate(f"sqlite:///{path}")
    return path


class Fresh:
    """A fresh copy of the template database for each example."""

    def __init__(self, template: Path, work: Path) -> None:
        self.template = template
        self.path = work / "fuzz.db"

    def new(self) -> str:
        _forget(f"sqlite:///{self.path}")
        for suffix in ("", "-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                os.remove(f"{self.path}{suffix}")
        shutil.copyfile(self.template, self.path)
        return f"sqlite:///{self.path}"


@pytest.fixture
def fresh(template: Path, tmp_path: Path) -> Fresh:
    return Fresh(template, tmp_path)


@pytest.fixture(autouse=True)
def _no_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    monkeypatch.delenv("JOBTUI_DB", raising=False)
    monkeypatch.delenv("JOBTUI_DEBUG", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    yield


def cli(url: str, *args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["--db", url, *args])
    return code, out.getvalue(), err.getvalue()


def refused(result: tuple[int, str, str], before: dict[str, Any], url: str) -> str:
    """Assert a clean refusal (exit 2, one line, nothing changed); return the message."""
    code, out, err = result
    assert code == 2, (code, out, err)
    assert out == "", out
    assert "Traceback" not in err
    lines = err.split("\n")
    assert len(lines) == 2 and lines[1] == "", err  # exactly one line
    assert lines[0].startswith("jobtui: error: "), err
    assert "\x00" not in err and "\x1b" not in err.replace("\\x1b", ""), err
    assert dump(url) == before
    return lines[0]


_template_dumps: dict[str, Any] = {}


def run_case(url: str, *args: str) -> tuple[tuple[int, str, str], dict[str, Any]]:
    if url.endswith("/fuzz.db"):  # a fresh copy of the template: its content is known
        before = _template_dumps.get("t") or _template_dumps.setdefault("t", dump(url))
    else:
        before = dump(url)
    return cli(url, *args), before


def show(url: str, name: str) -> dict[str, Any]:
    code, out, err = cli(url, "show", name, "--json")
    assert code == 0, err
    return json.loads(out)  # type: ignore[no-any-return]


# ---------------------------------------------------------------------- names


@FUZZ
@given(name=nasty_text())
def test_fuzz_job_names(fresh: Fresh, name: str) -> None:
    url = fresh.new()
    result, before = run_case(url, "submit", name, *S, *E)
    taken = name in ("nightly", "done", "off", "held")
    if JOB_NAME_RE.fullmatch(name) and not taken:
        assert result[0] == 0, result
        assert show(url, name)["name"] == name
        check_consistent(url)
        return
    message = refused(result, before, url)
    assert (
        ("invalid job name" in message)
        or ("already exists" in message)
        or (name.startswith("-") and "argument" in message)
    ), message


@FUZZ
@given(
    verb=st.sampled_from(
        ["show", "pause", "resume", "enable", "disable", "abort", "run-now", "remove", "log"]
    ),
    name=nasty_text(),
)
def test_fuzz_names_of_existing_jobs(fresh: Fresh, verb: str, name: str) -> None:
    url = fresh.new()
    args = [verb, "--", name]  # "--": a name may start with "-"
    result, before = run_case(url, *args)
    if name in ("nightly", "done", "off", "held"):
        code = result[0]
        assert code in (0, 2), result
        if code == 2:
            refused(result, before, url)  # e.g. pause of a FINISHED job
        check_consistent(url)
        return
    message = refused(result, before, url)
    assert "unknown job" in message or "not valid Unicode" in message, message


# ---------------------------------------------------------------------- identifiers


@FUZZ
@given(schema_part=nasty_text(70), proc=nasty_text(70))
def test_fuzz_procedure_identifiers(fresh: Fresh, schema_part: str, proc: str) -> None:
    url = fresh.new()
    target = f"{schema_part}.{proc}"
    result, before = run_case(url, "submit", "x", f"--call={target}", *E)
    message = refused(result, before, url)  # SQLite has no procedures: always refused
    assert any(w in message for w in ("procedure", "schema name", "needs MySQL")), message


@SMALL
@given(action=nasty_text(140), args=st.lists(nasty_text(50), max_size=3))
def test_fuzz_action_names_and_arguments(fresh: Fresh, action: str, args: list[str]) -> None:
    url = fresh.new()
    argv = ["submit", "x", f"--action={action}", *[f"--arg={a}" for a in args], *E]
    result, before = run_case(url, *argv)
    if result[0] == 0:  # only registered actions are accepted
        assert action in (
            "demo.noop",
            "demo.sleep",
            "demo.fail",
            "demo.flaky",
            "demo.export_csv",
        ), action
        assert show(url, "x")["what"]["args"] == args
        return
    message = refused(result, before, url)
    assert "action" in message or "argument" in message, message


# ---------------------------------------------------------------------- schedules


def every_value() -> st.SearchStrategy[str]:
    return st.one_of(
        st.sampled_from(
            [
                "0",
                "0.1",
                "0.09999999",
                "0.1000001",
                "-0",
                "-1",
                "nan",
                "NaN",
                "inf",
                "-inf",
                "1e400",
                "1e-400",
                str(MAX_EVERY),
                str(MAX_EVERY + 1),
                "3e9",
                " 5 ",
                "5s",
                "5,5",
                "0x10",
                "1_000",
                "١٢",
                "True",
                "",
                "60; DROP",
            ]
        ),
        st.floats(allow_nan=True, allow_infinity=True).map(repr),
        st.integers(min_value=-10, max_value=10**12).map(str),
        nasty_text(20),
    )


def as_every(text: str) -> float | None:
    """The documented rule: a number of seconds from 0.1 to MAX_EVERY."""
    try:
        value = float(text)
    except ValueError:
        return None
    if not math.isfinite(value) or not MIN_EVERY <= value <= MAX_EVERY:
        return None
    return value


@FUZZ
@given(value=every_value())
def test_fuzz_every(fresh: Fresh, value: str) -> None:
    url = fresh.new()
    result, before = run_case(url, "submit", "x", *S, f"--every={value}")
    expected = as_every(value)
    if expected is not None:
        assert result[0] == 0, result
        assert show(url, "x")["schedule"]["every"] == pytest.approx(expected, abs=1e-6)
        return
    assert "invalid --every" in refused(result, before, url)


CRON_FIELD = st.one_of(
    st.sampled_from(
        [
            "*",
            "*/5",
            "0",
            "59",
            "60",
            "61",
            "-1",
            "1-5",
            "5-1",
            "1,2,3",
            "*/0",
            "L",
            "W",
            "15W",
            "5#3",
            "MON-FRI",
            "jan",
            "?",
            "H",
            "R",
            "1/0",
            "99999999999",
            "",
            "`",
            ";",
            "'",
            "\x00",
            "*;",
            "１",
        ]
    ),
    st.integers(min_value=-5, max_value=100).map(str),
)


@FUZZ
@given(
    fields=st.lists(CRON_FIELD, min_size=0, max_size=7),
    tz=st.one_of(
        st.none(),
        st.sampled_from(
            [
                "UTC",
                "Europe/Paris",
                "Mars/Base",
                "../etc",
                "/etc/localtime",
                "",
                "utc",
                "Etc/GMT+14",
                "x" * 70,
                "Europe/Paris\x00",
            ]
        ),
    ),
)
def test_fuzz_cron(fresh: Fresh, fields: list[str], tz: str | None) -> None:
    url = fresh.new()
    cron = " ".join(fields)
    args = ["submit", "x", *S, f"--cron={cron}"] + ([f"--tz={tz}"] if tz is not None else [])
    result, before = run_case(url, *args)
    if result[0] == 0:
        job = show(url, "x")
        assert job["schedule"]["kind"] == "cron"
        assert job["next_run"] is not None and len(job["upcoming"]) == 5
        assert len(fields) in (5, 6)
        check_consistent(url)
        return
    message = refused(result, before, url)
    assert "cron" in message or "time zone" in message, message


EXPR = st.one_of(
    st.sampled_from(
        [
            "datetime(NOW(), '+1 day')",
            "datetime(NOW(), '+1 hour')",
            "NOW()",
            "datetime(NOW(), '-1 day')",
            "NULL",
            "'2999-01-01 00:00:00'",
            "'not a date'",
            "42",
            "NOW() + INTERVAL 1 DAY",
            "datetime(NOW(), '+1 day'); DELETE FROM jobtui_job",
            "datetime(NOW(), '+1 day') -- comment",
            "datetime(NOW(), '+1 day') /* x */",
            "(SELECT MAX(next_run) FROM jobtui_job)",
            "(SELECT name FROM sqlite_master)",
            "load_extension('x')",
            "randomblob(1000000000)",
            "datetime(NOW(), '+' || (SELECT COUNT(*) FROM jobtui_run) || ' day')",
            "datetime(NOW(), '+1 day'",
            "datetime(NOW(), '+1 day'))",
            "",
            "\x00",
            "x" * 1001,
            "datetime(NOW(), '+1 day')\x00",
            "datetime(NOW(), '+10000 years')",
        ]
    ),
    nasty_text(60),
)


@FUZZ
@given(expr=EXPR)
def test_fuzz_expr(fresh: Fresh, expr: str) -> None:
    url = fresh.new()
    result, before = run_case(url, "submit", "x", *S, f"--expr={expr}")
    if result[0] == 0:
        job = show(url, "x")
        assert job["schedule"]["kind"] == "expr"
        nxt = job["next_run"]
        assert nxt is None or datetime.fromisoformat(nxt) > datetime.now(UTC) - timedelta(seconds=5)
        check_consistent(url)
        return
    message = refused(result, before, url)
    assert "--expr" in message or "not valid Unicode" in message, message


WHEN = st.one_of(
    st.sampled_from(
        [
            "2030-01-01",
            "2030-01-01T00:00:00",
            "2030-01-01T00:00:00+01:00",
            "2030-01-01T00:00:00+25:00",
            "2030-02-30",
            "0001-01-01",
            "1970-01-01",
            "1971-01-02",
            "9998-12-31T23:59:59",
            "9999-12-31",
            "10000-01-01",
            "2030-01-01T24:00:00",
            "2030-13-01",
            "tomorrow",
            "now",
            "",
            "  2030-01-01  ",
            "2030-01-01T00:00:00Z",
            "2030-W01",
            "2030-001",
            "1e9",
            "２０３０-01-01",
        ]
    ),
    st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31)).map(
        lambda d: d.isoformat()
    ),
    nasty_text(30),
)


@FUZZ
@given(
    start=st.one_of(st.none(), WHEN),
    finish=st.one_of(st.none(), WHEN),
    kind=st.sampled_from([E, ["--once"], ["--cron", "0 * * * *"]]),
)
def test_fuzz_windows(fresh: Fresh, start: str | None, finish: str | None, kind: list[str]) -> None:
    url = fresh.new()
    args = ["submit", "x", *S, *kind]
    if start is not None:
        args.append(f"--start={start}")
    if finish is not None:
        args.append(f"--finish={finish}")
    result, before = run_case(url, *args)
    if result[0] == 0:
        sched = show(url, "x")["schedule"]
        if sched["start"] and sched["finish"]:
            assert sched["finish"] > sched["start"]
        check_consistent(url)
        return
    message = refused(result, before, url)
    assert any(w in message for w in ("--start", "--finish", "window", "finish")), message


# ---------------------------------------------------------------------- numbers


def whole(text: str, low: int, high: int) -> int | None:
    try:
        value = int(text)
    except ValueError:
        return None
    return value if low <= value <= high else None


NUMBER = st.one_of(
    st.sampled_from(
        [
            "0",
            "1",
            "-1",
            "-0",
            "+1",
            "1.0",
            "1.5",
            "1e3",
            "nan",
            "inf",
            "",
            " ",
            "0x1",
            "1_0",
            "١",
            "99999999999999999999999",
            "True",
            "--1",
            "1 2",
        ]
    ),
    st.integers(min_value=-(10**7), max_value=10**9).map(str),
)


@FUZZ
@given(value=NUMBER)
def test_fuzz_max_failures(fresh: Fresh, value: str) -> None:
    url = fresh.new()
    result, before = run_case(url, "submit", "x", *S, *E, f"--max-failures={value}")
    expected = whole(value, 1, MAX_MAX_FAILURES)
    if expected is not None:
        assert result[0] == 0, result
        assert show(url, "x")["max_failures"] == expected
        return
    assert "invalid --max-failures" in refused(result, before, url)


@FUZZ
@given(option=st.sampled_from(["--limit", "--keep-runs", "--keep-days"]), value=NUMBER)
def test_fuzz_read_and_prune_numbers(fresh: Fresh, option: str, value: str) -> None:
    url = fresh.new()
    verb = "log" if option == "--limit" else "prune"
    args = [verb, f"{option}={value}"] + (["--dry-run"] if verb == "prune" else [])
    result, before = run_case(url, *args)
    if option == "--limit":
        ok = whole(value, 1, 100_000) is not None
    elif option == "--keep-runs":
        ok = whole(value, 0, 100_000_000) is not None
    else:
        try:
            ok = 0 < float(value) <= 36_500
        except ValueError:
            ok = False
    if ok:
        assert result[0] == 0, result
        assert dump(url) == before  # reading and a dry run change nothing
        return
    assert option in refused(result, before, url)


@FUZZ
@given(text=nasty_text(2100))
def test_fuzz_description(fresh: Fresh, text: str) -> None:
    url = fresh.new()
    result, before = run_case(url, "change", "nightly", f"--description={text}")
    if result[0] == 0:
        assert "\x00" not in text and len(text) <= 2000
        assert show(url, "nightly")["description"] == text
        return
    message = refused(result, before, url)
    assert "description" in message or "not valid Unicode" in message, message


# ---------------------------------------------------------------------- any argv

SAFE_VERBS = [
    "submit",
    "change",
    "remove",
    "list",
    "show",
    "log",
    "pause",
    "resume",
    "enable",
    "disable",
    "abort",
    "run-now",
    "broken",
    "export",
    "runners",
    "prune",
]
OPTIONS = [
    "--sql",
    "--call",
    "--action",
    "--arg",
    "--every",
    "--cron",
    "--tz",
    "--expr",
    "--once",
    "--start",
    "--finish",
    "--no-start",
    "--no-finish",
    "--description",
    "--max-failures",
    "--disabled",
    "--enable",
    "--json",
    "--all",
    "--limit",
    "--outcome",
    "--on",
    "--off",
    "--next",
    "--format",
    "--keep-runs",
    "--keep-days",
    "--dry-run",
    "--db",
    "-h",
]


@FUZZ
@given(
    verb=st.sampled_from(SAFE_VERBS),
    rest=st.lists(
        st.one_of(
            st.sampled_from(OPTIONS),
            nasty_text(30),
            st.sampled_from(["nightly", "done", "off", "held", "60", "SELECT 1"]),
        ),
        max_size=6,
    ),
)
def test_fuzz_any_argv(fresh: Fresh, verb: str, rest: list[str]) -> None:
    url = fresh.new()
    if "--db" in rest or "-h" in rest:
        rest = [r for r in rest if r not in ("--db", "-h")]
    before = dump(url)
    code, out, err = cli(url, verb, *rest)
    assert code in (0, 2), (code, out, err)
    if code == 2:
        refused((code, out, err), before, url)
    else:
        assert err == "" or verb == "prune", err
    check_consistent(url)


# ---------------------------------------------------------------------- MariaDB


@pytest.mark.mariadb
@SMALL
@given(
    name=nasty_text(),
    cron=st.lists(CRON_FIELD, min_size=5, max_size=5).map(" ".join),
    description=nasty_text(100),
)
def test_fuzz_submit_on_mariadb(mariadb_db: str, name: str, cron: str, description: str) -> None:
    url = mariadb_db
    result, before = run_case(
        url, "submit", name, *S, f"--cron={cron}", f"--description={description}"
    )
    if result[0] == 0:
        job = show(url, name)
        assert job["name"] == name and job["description"] == description
        code, _, err = cli(url, "remove", name)
        assert code == 0, err
        return
    refused(result, before, url)


@pytest.mark.mariadb
@SMALL
@given(target=st.tuples(nasty_text(70), nasty_text(70)).map(".".join), expr=EXPR)
def test_fuzz_call_and_expr_on_mariadb(mariadb_db: str, target: str, expr: str) -> None:
    url = mariadb_db
    result, before = run_case(url, "submit", "x", f"--call={target}", *E)
    refused(result, before, url)  # no such procedure, or not an identifier
    result, before = run_case(url, "submit", "y", *S, f"--expr={expr}")
    if result[0] == 0:
        code, _, err = cli(url, "remove", "y")
        assert code == 0, err
        return
    message = refused(result, before, url)
    assert "--expr" in message or "not valid Unicode" in message, message


@pytest.fixture
def mariadb_db(mariadb_url: str) -> str:
    populate(mariadb_url)
    return mariadb_url


# ---------------------------------------------------------------------- real processes


SUBPROCESS_CASES = [
    (["submit", b"\xff\xfe", *S, *E], "invalid job name"),
    (["submit", "jоb", *S, *E], "invalid job name"),  # Cyrillic o, in a C locale
    (["change", "nightly", b"--description=\xff"], "not valid Unicode"),
    (["submit", "x", "--call", "db.p`; DROP TABLE jobtui_job; --", *E], "invalid procedure"),
    (["submit", "x", *S, "--cron", "* * * * * * *"], "cron"),
    (["log", "--limit", "100001"], "--limit"),
    (["prune", "--keep-days", "-1"], "--keep-days"),
]


@pytest.mark.parametrize(("args", "phrase"), SUBPROCESS_CASES)
def test_fuzz_cases_in_real_processes(
    template: Path, tmp_path: Path, args: list[Any], phrase: str
) -> None:
    url = Fresh(template, tmp_path).new()
    before = dump(url)
    argv: list[Any] = [sys.executable, "-m", "jobtui", "--db", url, *args]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JOBTUI_", "LC_", "LANG"))}
    env.update(LC_ALL="C", XDG_DATA_HOME=str(tmp_path / "xdg"))
    proc = subprocess.run(
        [a if isinstance(a, bytes) else a.encode() for a in argv],
        capture_output=True,
        env=env,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    err = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == 2, err
    assert proc.stdout == b""
    assert b"Traceback" not in proc.stderr
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("jobtui: error: ") and phrase in lines[0], err
    assert dump(url) == before


def test_nasty_list_has_what_the_issue_names() -> None:
    joined = "".join(NASTY)
    for needle in ("'", "`", ";", "\x00", "о", "ｊ", "a" * 65):
        assert needle in joined
    assert re.search(r"[^\x00-\x7f]", joined)
