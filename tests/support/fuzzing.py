# ruff: noqa: RUF001  (look-alike characters are the point)
"""Shared by the fuzz tests: hostile values, a populated database, and the refusal check.

The strategies feed the command line (tests/cli/test_fuzz_cli.py), the console's
form (tests/console/test_fuzz_console.py) and the fixed bad-input cases
(tests/cli/test_cli_bad_input.py) the same quotes, backticks, semicolons, NUL and
control characters, look-alikes, over-long text and numbers past their limits.
``dump`` reads every jobtui table, to prove that a refused input changed nothing.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from sqlalchemy import insert, select

from jobtui.cli import main
from jobtui.core import schema
from jobtui.core.backends.registry import make_engine
from jobtui.core.model import Schedule, What
from jobtui.core.schedules import MAX_EVERY, MIN_EVERY
from jobtui.core.store import open_store
from jobtui.core.transitions import derive_status
from support.demo_db import make_demo

FUZZ = settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
SMALL = settings(FUZZ, max_examples=30)

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
        make_demo(store)  # the demo.* actions: a demo database
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


def forget(url: str) -> None:
    """Close the cached engine of ``url`` (before its file is replaced or dropped)."""
    engine = _engines.pop(url, None)
    if engine is not None:
        engine.dispose()


def dump(url: str) -> dict[str, list[tuple[Any, ...]]]:
    with _engine(url).connect() as conn:
        return {
            t.name: [tuple(r) for r in conn.execute(select(t).order_by(*t.primary_key.columns))]
            for t in schema.metadata.sorted_tables
        }


def assert_status_derived(row: Any) -> None:
    """A job row's status is what its state columns say."""
    assert (
        row.status
        == derive_status(
            intent=row.intent,
            broken=bool(row.broken),
            running=bool(row.running),
            phase=row.phase,
        ).value
    ), row


def check_consistent(url: str) -> None:
    """Every job row's status is what its state columns say."""
    with _engine(url).connect() as conn:
        for row in conn.execute(select(schema.job)):
            assert_status_derived(row)


_copy_of: dict[str, Path] = {}  # url -> the template it is a fresh copy of
_template_dumps: dict[Path, Any] = {}


class Fresh:
    """A fresh copy of the template database for each example."""

    def __init__(self, template: Path, work: Path) -> None:
        self.template = template
        self.path = work / "fuzz.db"

    def new(self) -> str:
        forget(f"sqlite:///{self.path}")
        for suffix in ("", "-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                os.remove(f"{self.path}{suffix}")
        shutil.copyfile(self.template, self.path)
        url = f"sqlite:///{self.path}"
        _copy_of[url] = self.template
        return url


def cli(url: str, *args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["--db", url, *args])
    return code, out.getvalue(), err.getvalue()


def one_line_error(code: int, out: str, err: str, expected: int = 2) -> str:
    """Assert the exit code, nothing on stdout and one clean ``jobtui: error:`` line; return it."""
    assert "Traceback" not in err, err
    assert code == expected, (code, out, err)
    assert out == "", out
    lines = err.split("\n")
    assert len(lines) == 2 and lines[1] == "", err  # exactly one line
    assert lines[0].startswith("jobtui: error: "), err
    assert "\x00" not in err and "\x1b" not in err.replace("\\x1b", ""), err
    return lines[0]


def refused(result: tuple[int, str, str], before: dict[str, Any], url: str) -> str:
    """Assert a clean refusal (exit 2, one line, nothing changed); return the message."""
    line = one_line_error(*result)
    assert dump(url) == before
    return line


def diverged(url: str) -> None:
    """The copy at ``url`` was changed: ``run_case`` dumps it afresh instead of its template's."""
    _copy_of.pop(url, None)


def run_case(url: str, *args: str) -> tuple[tuple[int, str, str], dict[str, Any]]:
    """Run ``jobtui --db url args`` in-process; also return every table as it was before."""
    template = _copy_of.get(url)
    if template is not None:  # a fresh copy of a template: its content is known
        if template not in _template_dumps:
            _template_dumps[template] = dump(url)
        before = _template_dumps[template]
    else:
        before = dump(url)
    return cli(url, *args), before


def show(url: str, name: str) -> dict[str, Any]:
    code, out, err = cli(url, "show", name, "--json")
    assert code == 0, err
    return json.loads(out)  # type: ignore[no-any-return]


# ---------------------------------------------------------------------- schedules and numbers


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


TZ = st.sampled_from(
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
)


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
