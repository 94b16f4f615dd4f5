"""The store API, fuzzed: every call works as documented or raises InvalidInput.

Names, identifiers, SQL, cron and expression strings, windows, numbers at
and past their limits, and values of the wrong type go straight to
``JobStore`` methods. A refused call raises InvalidInput (JobNotFound for a
lookup of a name that no job has) with a one-line message, and leaves every
jobtui table as it was. SQLite always; a smaller run on MariaDB.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import select
from support.fuzzing import CRON_FIELD, EXPR, NASTY, nasty_text

from jobtui.core import schema
from jobtui.core.errors import InvalidInput, JobNotFound
from jobtui.core.model import JOB_NAME_RE, Schedule, What
from jobtui.core.schedules import make_schedule
from jobtui.core.store import JobStore, open_store

FUZZ = settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
SMALL = settings(FUZZ, max_examples=25)

ANY_VALUE = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**20), max_value=10**20),
    st.floats(allow_nan=True, allow_infinity=True),
    nasty_text(40),
    st.sampled_from([b"bytes", [], {}, ("a",), object()]),
)


def dump(store: JobStore) -> dict[str, list[tuple[Any, ...]]]:
    with store.engine.connect() as conn:
        return {
            t.name: [tuple(r) for r in conn.execute(select(t).order_by(*t.primary_key.columns))]
            for t in schema.metadata.sorted_tables
        }


@pytest.fixture
def fstore(sqlite_url: str) -> Iterator[JobStore]:
    s = open_store(sqlite_url)
    s.submit("nightly", What("sql", "SELECT 1"), Schedule("every", every=3600.0))
    s.submit("off", What("sql", "SELECT 1"), Schedule("every", every=60.0), disabled=True)
    try:
        yield s
    finally:
        s.close()


def refused_cleanly(store: JobStore, before: Any, exc: BaseException) -> None:
    assert isinstance(exc, (InvalidInput, JobNotFound)), repr(exc)
    message = str(exc)
    assert message and "\n" not in message, message
    assert dump(store) == before


def attempt(store: JobStore, fn: Any, *args: Any, **kwargs: Any) -> Any:
    """Call; on refusal check it was clean and return None."""
    before = dump(store)
    try:
        return fn(*args, **kwargs)
    except Exception as exc:
        refused_cleanly(store, before, exc)
        return None


def cleanup(store: JobStore, keep: tuple[str, ...] = ("nightly", "off")) -> None:
    for job in store.list_jobs():
        if job.name not in keep:
            store.remove(job.name)


# ---------------------------------------------------------------------- submit


@FUZZ
@given(name=nasty_text(), description=nasty_text(2100), maxf=ANY_VALUE)
def test_fuzz_submit_values(fstore: JobStore, name: str, description: str, maxf: Any) -> None:
    job = attempt(
        fstore,
        fstore.submit,
        name,
        What("sql", "SELECT 1"),
        make_schedule("every", every=60),
        description=description,
        max_failures=maxf,
    )
    if job is not None:
        assert JOB_NAME_RE.fullmatch(name) and name not in ("nightly", "off")
        assert job.description == description and "\x00" not in description
        assert 1 <= job.max_failures <= 1_000_000
        cleanup(fstore)


@FUZZ
@given(
    kind=st.sampled_from(["sql", "action", "call", "shell", "", "SQL"]),
    target=nasty_text(100),
    args=st.lists(nasty_text(30), max_size=3),
)
def test_fuzz_what(fstore: JobStore, kind: str, target: str, args: list[str]) -> None:
    def build_and_submit() -> Any:
        return fstore.submit("w", What(kind, target, tuple(args)), make_schedule("once"))

    job = attempt(fstore, build_and_submit)
    if job is not None:
        assert kind in ("sql", "action")
        cleanup(fstore)


@FUZZ
@given(
    kind=st.sampled_from(["every", "cron", "expr", "once", "never", ""]),
    every=ANY_VALUE,
    cron=st.one_of(st.lists(CRON_FIELD, min_size=4, max_size=7).map(" ".join), ANY_VALUE),
    tz=st.one_of(st.none(), st.sampled_from(["UTC", "Europe/Paris", "Nowhere/X", "", "\x00"])),
    expr=st.one_of(EXPR, ANY_VALUE),
    start=st.one_of(st.none(), st.datetimes(min_value=datetime(1, 1, 2))),
    length=st.one_of(st.none(), st.integers(min_value=-10, max_value=10**6)),
)
def test_fuzz_schedules(
    fstore: JobStore,
    kind: str,
    every: Any,
    cron: Any,
    tz: Any,
    expr: Any,
    start: datetime | None,
    length: int | None,
) -> None:
    finish = None
    if start is not None and length is not None:
        try:
            finish = start + timedelta(seconds=length)
        except OverflowError:
            finish = None

    def build_and_submit() -> Any:
        sched = make_schedule(
            kind, every=every, cron=cron, tz=tz, expr=expr, start=start, finish=finish
        )
        return fstore.submit("s", What("sql", "SELECT 1"), sched)

    job = attempt(fstore, build_and_submit)
    if job is not None:
        assert job.schedule.kind == kind
        upcoming = fstore.preview(job)
        assert all(a < b for a, b in itertools.pairwise(upcoming))
        cleanup(fstore)


@FUZZ
@given(
    op=st.sampled_from(
        [
            "change_every",
            "change_cron",
            "change_expr",
            "change_window",
            "change_description",
            "change_max_failures",
        ]
    ),
    value=st.one_of(ANY_VALUE, EXPR, st.lists(CRON_FIELD, min_size=5, max_size=6).map(" ".join)),
)
def test_fuzz_change(fstore: JobStore, op: str, value: Any) -> None:
    kwargs: dict[str, Any] = {
        "change_every": {"every": value},
        "change_cron": {"cron": value},
        "change_expr": {"expr": value},
        "change_window": {"finish": value},
        "change_description": {"description": value},
        "change_max_failures": {"max_failures": value},
    }[op]
    job = attempt(fstore, fstore.change, "nightly", **kwargs)
    if job is not None:
        fstore.change(
            "nightly",
            every=3600.0,
            finish=None,
            description="",
            max_failures=16,
        )


@FUZZ
@given(
    method=st.sampled_from(
        ["get", "pause", "resume", "enable", "disable", "abort", "run_now", "remove", "runs"]
    ),
    name=st.one_of(nasty_text(), st.sampled_from(NASTY), ANY_VALUE),
)
def test_fuzz_lookups(fstore: JobStore, method: str, name: Any) -> None:
    result = attempt(fstore, getattr(fstore, method), name)
    if result is not None:
        assert name in ("nightly", "off") or (method == "runs" and name is None)
        cleanup(fstore)
        if name == "nightly" and method == "remove":
            fstore.submit("nightly", What("sql", "SELECT 1"), Schedule("every", every=3600.0))


@FUZZ
@given(
    limit=ANY_VALUE,
    outcome=st.one_of(st.none(), st.sampled_from(["ok", "lost", "OK", "", "ok; --"]), ANY_VALUE),
    count=ANY_VALUE,
    keep=ANY_VALUE,
    keep_days=ANY_VALUE,
)
def test_fuzz_numbers(
    fstore: JobStore, limit: Any, outcome: Any, count: Any, keep: Any, keep_days: Any
) -> None:
    attempt(fstore, fstore.runs, limit=limit, outcome=outcome)
    attempt(fstore, fstore.preview, fstore.get("nightly"), count)
    attempt(fstore, fstore.prune_runs, keep=keep, keep_days=keep_days, dry_run=True)
    # only a real prune may change the run log; with no runs there is nothing to delete
    assert attempt(fstore, fstore.prune_runs, keep=keep, keep_days=keep_days) in (None, 0)


@FUZZ
@given(
    data=st.one_of(
        ANY_VALUE,
        st.lists(
            st.dictionaries(
                st.sampled_from(
                    ["name", "what", "schedule", "description", "max_failures", "disabled", "owner"]
                ),
                st.one_of(
                    ANY_VALUE,
                    st.just({"kind": "sql", "target": "SELECT 1"}),
                    st.just({"kind": "every", "every": 5}),
                ),
            ),
            max_size=3,
        ),
    )
)
def test_fuzz_import(fstore: JobStore, data: Any) -> None:
    result = attempt(fstore, fstore.import_jobs, data)
    if result is not None:
        cleanup(fstore)


# ---------------------------------------------------------------------- MariaDB


@pytest.fixture
def mstore(mariadb_url: str) -> Iterator[JobStore]:
    s = open_store(mariadb_url)
    s.submit("nightly", What("sql", "SELECT 1"), Schedule("every", every=3600.0))
    s.submit("off", What("sql", "SELECT 1"), Schedule("every", every=60.0), disabled=True)
    try:
        yield s
    finally:
        s.close()


@pytest.mark.mariadb
@SMALL
@given(name=nasty_text(), description=nasty_text(300), target=nasty_text(60), expr=EXPR)
def test_fuzz_store_on_mariadb(
    mstore: JobStore, name: str, description: str, target: str, expr: str
) -> None:
    job = attempt(
        mstore,
        mstore.submit,
        name,
        What("sql", "SELECT 1"),
        make_schedule("once"),
        description=description,
    )
    if job is not None:
        assert mstore.get(name).description == description
        cleanup(mstore)
    attempt(mstore, lambda: mstore.submit("c", What("call", f"db.{target}"), make_schedule("once")))
    attempt(mstore, mstore.get, name)
    job = attempt(
        mstore,
        lambda: mstore.submit("e", What("sql", "SELECT 1"), make_schedule("expr", expr=expr)),
    )
    if job is not None:
        assert job.next_run is None or job.next_run > datetime.now(UTC) - timedelta(seconds=5)
        cleanup(mstore)
