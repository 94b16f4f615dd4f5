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

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.fuzzing import (
    CRON_FIELD,
    EXPR,
    FUZZ,
    NASTY,
    NUMBER,
    SMALL,
    TZ,
    WHEN,
    Fresh,
    as_every,
    check_consistent,
    cli,
    dump,
    every_value,
    nasty_text,
    populate,
    refused,
    run_case,
    show,
    whole,
)

from jobtui.core import actions
from jobtui.core.jobdefs import MAX_MAX_FAILURES
from jobtui.core.model import JOB_NAME_RE

S = ["--sql", "SELECT 1"]
E = ["--every", "60"]

# ---------------------------------------------------------------------- the database


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("fuzz") / "template.db"
    populate(f"sqlite:///{path}")
    return path


@pytest.fixture
def fresh(template: Path, tmp_path: Path) -> Fresh:
    return Fresh(template, tmp_path)


@pytest.fixture(autouse=True)
def _no_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    monkeypatch.delenv("JOBTUI_DB", raising=False)
    monkeypatch.delenv("JOBTUI_DEBUG", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    yield


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
        assert action in actions.available(), action
        assert show(url, "x")["what"]["args"] == args
        return
    message = refused(result, before, url)
    assert "action" in message or "argument" in message, message


# ---------------------------------------------------------------------- schedules


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


@FUZZ
@given(
    fields=st.lists(CRON_FIELD, min_size=0, max_size=7),
    tz=st.one_of(st.none(), TZ),
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
