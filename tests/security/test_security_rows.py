"""Issue #11, reproductions 5 and 6: every job row read is checked as strictly as CLI input.

Operators write any value into their own rows through the view
``jobtui_user_job`` (docs/privileges.md). A row that does not validate is read
as a Job carrying its ``problem`` (jobtui/core/row_checks.py) and shown BROKEN with
it by ``list``, ``show``, ``export`` and the console, never an exception; a
runner never claims it, marks it BROKEN with the problem as the reason (once,
in its own transaction) and goes on with the rest of the batch.

- repro 5: ``schedule_interval = -1`` made a runner thread spin at 100 % CPU in
  ``next_slot`` and SIGTERM never ended the worker;
- repro 6: ``what_args = 'not json'``, ``status = 'BOGUS'`` made ``list --all``
  and ``export --all`` exit 1 and poisoned the batch.
"""

from __future__ import annotations

import json
import math
import os
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from itertools import count
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from sqlalchemy import select, text, update
from support.accounts import Server
from support.fuzzing import cli, nasty_text
from support.mariadb import admin_connection
from support.procs import spawn, wait_for, worker_list

from jobtui.core import schema
from jobtui.core.backends.registry import make_engine
from jobtui.core.bookkeeping import coalesce
from jobtui.core.model import Outcome, Status, What
from jobtui.core.runner.pool import RunnerPool
from jobtui.core.runner.session import Session
from jobtui.core.schedules import make_schedule, next_slot
from jobtui.core.store import JobStore, open_store
from jobtui.core.timeutil import to_db, utcnow

T0 = datetime(2026, 1, 1, tzinfo=UTC)
NESTED = "[" * 3000 + "]" * 3000  # json.loads: RecursionError, not ValueError

# (label, the columns written, the column the problem names). Every value fits its
# column's type on MariaDB (strict mode), so the same rows go through the view.
HOSTILE: list[tuple[str, dict[str, Any], str]] = [
    ("interval -1 (repro 5)", {"schedule_interval": -1.0}, "schedule_interval"),
    ("interval 0", {"schedule_interval": 0.0}, "schedule_interval"),
    ("interval 1e-9", {"schedule_interval": 1e-9}, "schedule_interval"),
    ("interval 1e300", {"schedule_interval": 1e300}, "schedule_interval"),
    ("interval NULL", {"schedule_interval": None}, "schedule_interval"),
    ("schedule kind", {"schedule_kind": "weekly"}, "schedule_kind"),
    ("cron", {"schedule_kind": "cron", "schedule_cron": "61 * * * *"}, "schedule_cron"),
    (
        "time zone",
        {"schedule_kind": "cron", "schedule_cron": "* * * * *", "schedule_tz": "Mars/Olympus"},
        "schedule_tz",
    ),
    (
        "expr (repro 4's sleep)",
        {"schedule_kind": "expr", "schedule_expr": "NOW() + INTERVAL SLEEP(15) SECOND"},
        "schedule_expr",
    ),
    (
        "window backwards",
        {"schedule_start": "2026-02-01 00:00:00", "schedule_finish": "2026-01-01 00:00:00"},
        "schedule_finish",
    ),
    ("what kind", {"what_kind": "shell"}, "what_kind"),
    ("call target", {"what_kind": "call", "what_target": "a.b`; DROP"}, "what_target"),
    ("sql target", {"what_target": "SELECT 1; SELECT 2"}, "what_target"),
    ("args not json (repro 6)", {"what_args": "not json"}, "what_args"),
    ("args an object", {"what_args": '{"a": "b"}'}, "what_args"),
    (
        "args numbers",
        {"what_kind": "action", "what_target": "demo.noop", "what_args": "[1]"},
        "what_args",
    ),
    ("args nested", {"what_args": NESTED}, "what_args"),
    (
        "args too many",
        {"what_kind": "action", "what_target": "demo.noop", "what_args": json.dumps(["a"] * 33)},
        "what_args",
    ),
    ("args on sql", {"what_args": '["x"]'}, "what_args"),
    ("status BOGUS (repro 6)", {"status": "BOGUS"}, "status"),
    ("intent", {"intent": "BOGUS"}, "intent"),
    ("phase", {"phase": "RUNNING"}, "phase"),
    ("failures", {"failures": -1}, "failures"),
    ("max_failures 0", {"max_failures": 0}, "max_failures"),
    ("max_failures huge", {"max_failures": 2_000_000_000}, "max_failures"),
    ("cycles", {"cycles": -5}, "cycles"),
    ("total_time", {"total_time": -1.0}, "total_time"),
    ("last_duration", {"last_duration": -3.0}, "last_duration"),
    ("last_outcome", {"last_outcome": "weird"}, "last_outcome"),
    ("name", {"name": "bad name\x1b[31m"}, "name"),
    ("description", {"description": "a\x00b"}, "description"),
    # MariaDB's default sql_mode takes zero-in-date values; PyMySQL gives them as text
    ("zero-in-date next_run", {"next_run": "2026-00-00 00:00:00"}, "next_run"),
    ("zero-in-date created", {"created": "2026-00-00 00:00:00"}, "created"),
]


def write_row(store_or_url: JobStore | str, job_id: int, values: dict[str, Any]) -> None:
    """``UPDATE jobtui_job SET ...`` with the values as given (no type processing), as a
    client writing the table (or, for an operator, the view) would."""
    url = store_or_url if isinstance(store_or_url, str) else store_or_url.url
    engine = make_engine(url)
    try:
        sets = ", ".join(f"{col} = :{col}" for col in values)
        with engine.begin() as conn:
            conn.execute(
                text(f"UPDATE jobtui_job SET {sets} WHERE id = :id"), {**values, "id": job_id}
            )
    finally:
        engine.dispose()


def within(seconds: float, fn: Callable[[], Any]) -> Any:
    """``fn()`` in a thread; fails the test if it has not returned after ``seconds`` (a spin)."""
    result: list[Any] = []
    error: list[BaseException] = []

    def target() -> None:
        try:
            result.append(fn())
        except BaseException as exc:  # reported in the test's thread
            error.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still running after {seconds} s (a loop that spins?)"
    if error:
        raise error[0]
    return result[0]


def due_now(store: JobStore, ids: list[int]) -> None:
    j = schema.job
    slot = to_db(utcnow() - timedelta(seconds=0.5))
    with store.write() as conn:
        conn.execute(update(j).where(j.c.id.in_(ids)).values(next_run=slot, schedule_anchor=slot))


def job_row(store: JobStore, job_id: int) -> Any:
    j = schema.job
    with store.read() as conn:
        return conn.execute(
            select(j.c.broken, j.c.broken_reason, j.c.running, j.c.run_now, j.c.status).where(
                j.c.id == job_id
            )
        ).first()


def runs_of(store: JobStore, job_id: int) -> list[Any]:
    r = schema.run
    with store.read() as conn:
        return list(conn.execute(select(r.c.outcome).where(r.c.job_id == job_id)))


def claim_and_close(pool: RunnerPool, ids: list[int]) -> list[int]:
    """Claim ``ids`` as one batch (no spin allowed), record every claimed run as aborted
    without executing it; return the claimed job ids."""
    session = Session(pool.engine, pool.backend)
    try:
        runs = within(20, lambda: pool._claim(session, ids))
        if runs:
            pool._finish([(run, Outcome.ABORTED, "test", pool.now()) for run in runs])
        return [run.job.id for run in runs]
    finally:
        session.discard()


# ---------------------------------------------------------------------- reading


@pytest.mark.parametrize(("label", "values", "column"), HOSTILE, ids=[h[0] for h in HOSTILE])
def test_hostile_row_reads_with_its_problem_and_is_never_claimed(
    store: JobStore, pool: RunnerPool, label: str, values: dict[str, Any], column: str
) -> None:
    hostile = store.submit("hostile", What("sql", "SELECT 1"), make_schedule("every", every=5))
    good = store.submit("good", What("sql", "SELECT 1"), make_schedule("every", every=5))
    due_now(store, [hostile.id, good.id])
    write_row(store, hostile.id, values)

    jobs = {j.id: j for j in store.list_jobs(all_owners=True)}
    job = jobs[hostile.id]
    # "<column> = <value>: <accepted>", or "<column>: <the validator's message>"
    assert job.problem is not None and job.problem.startswith((f"{column} =", f"{column}:"))
    assert job.status is Status.BROKEN
    assert job.problem.isprintable() and len(job.problem) <= 500
    assert jobs[good.id].problem is None
    assert store.get_by_id(hostile.id).problem == job.problem  # type: ignore[union-attr]
    assert store.preview(job) == []

    # the command line: exit 0, the problem shown, the good job too
    for args in (["list", "--all"], ["export", "--all"], ["list", "--all", "--json"]):
        code, out, err = cli(store.url, *args)
        assert code == 0, (args, err)
        assert "Traceback" not in err and "\x1b" not in out
        assert "good" in out
        assert column in out, (args, out)
    code, out, _ = cli(store.url, "list", "--all", "--json")
    shown = {j["id"]: j for j in json.loads(out)}
    assert shown[hostile.id]["problem"] == job.problem
    assert shown[hostile.id]["status"] == "BROKEN"
    assert shown[good.id]["problem"] is None
    stored_name = values.get("name", "hostile")
    code, out, err = cli(store.url, "show", stored_name, "--json")
    assert code == 0, err
    assert json.loads(out)["problem"] == job.problem
    code, out, err = cli(store.url, "show", stored_name)
    assert code == 0 and "upcoming: none (the job's row has a problem" in out, out

    # the runner: the good job is claimed, the hostile one marked BROKEN, never run
    claimed = claim_and_close(pool, [hostile.id, good.id])
    assert claimed == [good.id]
    row = job_row(store, hostile.id)
    assert row.broken and row.broken_reason == job.problem and not row.running
    assert runs_of(store, hostile.id) == []
    after = store.get_by_id(hostile.id)
    assert after is not None and after.status is Status.BROKEN
    if column == "status":  # the mark wrote the status the state columns give: fixed
        assert after.problem is None and after.broken
    else:
        assert after.problem == job.problem


def test_a_batch_of_many_problems_claims_the_others(store: JobStore, pool: RunnerPool) -> None:
    """Every hostile value of HOSTILE at once in one batch, with good jobs between them:
    the good ones are claimed, every hostile one marked BROKEN in one transaction."""
    ids: dict[int, str] = {}
    good: list[int] = []
    for n, (_label, _values, column) in enumerate(HOSTILE):
        job = store.submit(f"h{n}", What("sql", "SELECT 1"), make_schedule("every", every=5))
        ids[job.id] = column
        good.append(
            store.submit(f"g{n}", What("sql", "SELECT 1"), make_schedule("every", every=5)).id
        )
    due_now(store, [*ids, *good])
    for (jid, _column), (_label, values, _col) in zip(ids.items(), HOSTILE, strict=True):
        if "name" in values:
            values = {"name": values["name"] + str(jid)}
        write_row(store, jid, values)
    began = time.monotonic()
    claimed = claim_and_close(pool, sorted([*ids, *good]))
    assert sorted(claimed) == sorted(good)
    assert time.monotonic() - began < 15
    for jid in ids:
        row = job_row(store, jid)
        assert row.broken and not row.running and row.broken_reason, (jid, ids[jid])
        assert runs_of(store, jid) == []


def test_export_with_a_problem_is_not_imported(store: JobStore) -> None:
    job = store.submit("j", What("sql", "SELECT 1"), make_schedule("every", every=5))
    write_row(store, job.id, {"schedule_interval": -1.0})
    code, out, err = cli(store.url, "export")
    assert code == 0, err
    exported = json.loads(out)
    assert "schedule_interval" in exported[0]["problem"]
    store.remove("j")
    with pytest.raises(Exception, match="exported with a problem"):
        store.import_jobs(exported)
    assert store.list_jobs() == []


def test_run_in_the_foreground_refuses_a_job_with_a_problem(store: JobStore) -> None:
    job = store.submit("j", What("sql", "SELECT 1"), make_schedule("every", every=5))
    write_row(store, job.id, {"schedule_interval": -1.0})
    code, out, err = cli(store.url, "run", "j")
    assert code == 2 and "schedule_interval = -1.0" in err and out == "", (code, out, err)


def test_change_of_a_job_with_a_problem(store: JobStore) -> None:
    """A window alone is not merged into an unreadable schedule; a whole schedule fixes it."""
    job = store.submit("j", What("sql", "SELECT 1"), make_schedule("every", every=5))
    write_row(store, job.id, {"schedule_interval": -1.0})
    with pytest.raises(Exception, match="give its whole schedule"):
        store.change("j", finish=T0 + timedelta(days=3650))
    fixed = store.change("j", every=10)
    assert fixed.problem is None and fixed.schedule.every == 10.0
    write_row(store, job.id, {"what_args": "not json"})
    assert store.change("j", description="still broken").problem is not None
    assert store.change("j", what=What("sql", "SELECT 2")).problem is None


def test_next_slot_never_spins_on_an_interval_out_of_range() -> None:
    """Repro 5's loop, and coalesce above it: an exception at once, whatever the interval."""
    from jobtui.core.errors import InvalidInput
    from jobtui.core.model import Schedule

    for every in (-1.0, 0.0, -1e300, 1e-9, math.nan, math.inf, 0):
        bad = Schedule("every", every=every)
        with pytest.raises(InvalidInput):
            within(5, lambda bad=bad: next_slot(bad, T0, T0 - timedelta(days=1)))
        with pytest.raises(InvalidInput):
            within(5, lambda bad=bad: coalesce(bad, T0, T0 + timedelta(days=1), T0))
    ok = make_schedule("every", every=0.1)
    assert next_slot(ok, T0, T0) == T0 + timedelta(seconds=0.1)


async def test_console_shows_the_problem(sqlite_url: str) -> None:
    """The console's row says BROKEN; its details say what is wrong, and no next runs."""
    from support.console import console, row_texts, select_row, settle, wait_for

    from jobtui.console.screens.details import DetailsScreen

    seeded = open_store(sqlite_url)
    bad = seeded.submit("bad", What("sql", "SELECT 1"), make_schedule("every", every=5))
    seeded.submit("fine", What("sql", "SELECT 1"), make_schedule("every", every=5))
    write_row(sqlite_url, bad.id, {"schedule_interval": -1.0, "status": "BOGUS"})
    seeded.close()
    async with console(sqlite_url) as (app, pilot, _store):
        rows = row_texts(app)
        assert rows["bad"]["status"] == "BROKEN"
        assert rows["fine"]["status"] == "ENABLED"
        await select_row(app, pilot, "bad")
        await pilot.press("enter")
        await settle(app, pilot)
        details = app.screen
        assert isinstance(details, DetailsScreen)
        fields = str(details.query_one("#fields").render())
        assert "Problem" in fields and "schedule_interval = -1.0" in fields, fields
        await wait_for(
            pilot, lambda: "row has a problem" in str(details.query_one("#upcoming").render())
        )


# ---------------------------------------------------------------------- worker processes


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat", "rb") as f:
        fields = f.read().rsplit(b")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def busy_share(pid: int, seconds: float = 2.0) -> float:
    """The share of one CPU the process used over ``seconds``."""
    before = cpu_seconds(pid)
    time.sleep(seconds)
    return (cpu_seconds(pid) - before) / seconds


def missed_after_start(runs: list[Any]) -> list[Any]:
    """Slots missed once the worker ran the job (the slots before its start are coalesced
    into its first run, as always)."""
    ok = [r.scheduled_for for r in runs if r.outcome is Outcome.OK]
    first = min(ok, default=None)
    return [
        r
        for r in runs
        if r.outcome is Outcome.SKIPPED and first is not None and r.scheduled_for > first
    ]


@pytest.mark.slow
@pytest.mark.mariadb
def test_repro5_values_written_through_the_view(server: Server, tmp_path: Path) -> None:
    """alice writes hostile values into her rows through the view; the worker marks them
    BROKEN with the reason, stays idle, keeps bob's job on time and ends on SIGTERM (bob:
    an operator; an admin's own jobs are refused, docs/privileges.md)."""
    alice = server.store("alice")
    adm = server.store("bob")
    cases = {
        "spin": {"schedule_interval": -1},  # the reproduction
        "zero": {"schedule_interval": 0},
        "bogus": {"status": "BOGUS", "what_args": "not json"},
        "zerodate": {"next_run": "2026-00-00 00:00:00"},
        "phase": {"phase": "X"},
    }
    for name in cases:
        alice.submit(name, What("sql", "SELECT 1"), make_schedule("every", every=1))
    adm.submit("steady", What("sql", "SELECT 1"), make_schedule("every", every=1))
    raw = server.raw("alice")
    with raw.cursor() as cur:
        for name, values in cases.items():
            sets = ", ".join(f"{col} = %s" for col in values)
            cur.execute(
                f"UPDATE jobtui_user_job SET {sets} WHERE name = %s", (*values.values(), name)
            )
            assert cur.rowcount == 1
    problems = {j.name: j.problem for j in alice.list_jobs()}
    assert all(problems[name] for name in cases), problems

    admin = admin_connection(server.database)
    with admin.cursor() as cur:  # what a runner reads (plan decision 1), granted elsewhere too
        for table in ("jobtui_secret", "jobtui_action_grant"):
            cur.execute(
                f"GRANT SELECT ON `{server.database}`.`{table}` TO '{server.names['run']}'@'%'"
            )
    admin.close()
    with worker_list() as workers:
        w = spawn(workers, server.url_for("run"), tmp_path, "w", threads=2, poll=0.2, grace=3.0)
        assert wait_for(w.started, 20), w.log()

        def all_marked() -> bool:
            return all(j.broken for j in alice.list_jobs())

        assert wait_for(all_marked, 20), w.log()
        for job in alice.list_jobs():
            assert job.broken_reason == job.problem, job
            assert job.status is Status.BROKEN
        # alice keeps asking for runs: each is refused quietly (run_now cleared)
        with raw.cursor() as cur:
            for _ in range(3):
                cur.execute("UPDATE jobtui_user_job SET run_now = 1 WHERE name = 'spin'")
                assert wait_for(lambda: not alice.get("spin").run_now, 10), w.log()
        assert busy_share(w.pid) < 0.5, "the worker is busy with nothing to do"
        time.sleep(2)
        began = time.monotonic()
        assert w.terminate(timeout=15) == 0, w.log()
        assert time.monotonic() - began < 3.0 + 5, "SIGTERM took longer than the grace"
        log = w.log()
    raw.close()
    assert "Traceback" not in log, log
    for name in cases:  # told once each, not at every pass
        assert log.count(f"job {name} (id ") == 1, log
    steady = adm.runs("steady", limit=1000)
    assert sum(r.outcome is Outcome.OK for r in steady) >= 4, steady
    assert not missed_after_start(steady), steady
    for name in cases:
        assert alice.runs(name) == []
    # alice's own listing: exit 0, BROKEN with the problem
    code, out, err = cli(server.url_for("alice"), "list")
    assert code == 0, err
    assert "schedule_interval = -1.0" in out and "what_args = 'not json'" in out
    alice.close()
    adm.close()


@pytest.mark.slow
def test_repro6_a_malformed_row_poisons_nothing(db_url: str, tmp_path: Path) -> None:
    """Another owner's job in the same batch runs on time; listings exit 0; one warning."""
    store = open_store(db_url)
    bad = store.submit("malformed", What("sql", "SELECT 1"), make_schedule("every", every=1))
    store.submit("steady", What("sql", "SELECT 1"), make_schedule("every", every=1))
    # another owner's malformed row, as an operator would leave it through the view
    write_row(db_url, bad.id, {"what_args": "not json", "status": "BOGUS", "owner": "mallory@%"})
    with worker_list() as workers:
        w = spawn(workers, db_url, tmp_path, "w", threads=2, poll=0.2, grace=3.0)
        assert wait_for(w.started, 20), w.log()
        time.sleep(6)
        assert w.terminate(timeout=15) == 0, w.log()
        log = w.log()
    assert "Traceback" not in log, log
    assert log.count("marked BROKEN") == 1, log
    assert len([line for line in log.splitlines() if "job malformed" in line]) == 1, log
    steady = store.runs("steady", limit=1000)
    ok = [r for r in steady if r.outcome is Outcome.OK]
    assert len(ok) >= 3, steady
    assert not missed_after_start(steady), steady
    late = sorted((r.started - r.scheduled_for).total_seconds() for r in ok)  # type: ignore[operator]
    assert late[len(late) // 2] < 0.5, late
    for args in (["list", "--all"], ["export", "--all"]):
        code, out, err = cli(db_url, *args)
        assert code == 0, err
        assert "what_args = 'not json'" in out, out
    (job,) = [j for j in store.list_jobs(all_owners=True) if j.id == bad.id]
    assert job.broken and job.broken_reason == job.problem
    assert store.runs("malformed", owner="mallory@%") == []
    store.close()


# ---------------------------------------------------------------------- fuzzing

_DATES = st.one_of(
    st.datetimes(min_value=datetime(1000, 1, 1), max_value=datetime(9999, 12, 31)).map(
        lambda d: d.isoformat(" ")
    ),
    st.sampled_from(["0000-00-00 00:00:00", "2026-00-00 00:00:00", "2026-02-31 00:00:00"]),
    st.none(),
)
_NUMBERS = st.one_of(
    st.floats(),
    st.sampled_from([-1.0, 0.0, 0.05, 0.1, 5.0, 1e300, -1e300]),
    st.integers(-(2**40), 2**40),
)
_WHOLE = st.one_of(st.integers(-3, 20), st.integers(-(2**63), 2**63 - 1))


def _text(*valid: str) -> st.SearchStrategy[Any]:
    return st.one_of(st.sampled_from(list(valid)), nasty_text(), st.none())


COLUMNS: dict[str, st.SearchStrategy[Any]] = {
    "owner": _text("alice@%", "bob@localhost"),
    "name": _text("n1", "other"),
    "description": _text("", "x"),
    "what_kind": _text("call", "sql", "action"),
    "what_target": _text("SELECT 1", "a.b", "demo.noop"),
    "what_args": _text("[]", '["a"]', "not json", NESTED, "[1]", '{"a": 1}'),
    "schedule_kind": _text("every", "cron", "expr", "once"),
    "schedule_interval": st.one_of(_NUMBERS, st.none()),
    "schedule_cron": _text("* * * * *", "0 0 31 2 *", "*/5 * * * * 10"),
    "schedule_tz": _text("UTC", "Europe/Paris", "Mars/Base"),
    "schedule_expr": _text("NOW() + INTERVAL 1 DAY", "SLEEP(1)"),
    "schedule_start": _DATES,
    "schedule_finish": _DATES,
    "schedule_anchor": _DATES,
    "status": _text(*Status.__members__),
    "intent": _text("ENABLED", "DISABLED", "PAUSED"),
    "phase": _text("ENABLED", "SLEEPING", "ERROR", "FINISHED"),
    "broken": st.integers(-3, 3),
    "running": st.integers(-3, 3),
    "run_now": st.integers(-3, 3),
    "failures": _WHOLE,
    "max_failures": _WHOLE,
    "cycles": _WHOLE,
    "total_time": _NUMBERS,
    "last_duration": st.one_of(_NUMBERS, st.none()),
    "last_outcome": _text("ok", "failed"),
    "next_run": _DATES,
    "created": _DATES,
    "last_run": _DATES,
    "updated": _DATES,
}

_serial = count()


@pytest.mark.parametrize(
    "examples",
    [pytest.param(60, id="sqlite"), pytest.param(20, id="mariadb", marks=pytest.mark.mariadb)],
)
def test_random_column_values_never_raise_and_are_never_claimed(
    request: pytest.FixtureRequest, examples: int
) -> None:
    url = request.getfixturevalue("sqlite_url" if examples == 60 else "mariadb_url")
    store = open_store(url)
    p = RunnerPool(store, threads=1, poll=0.2, name="fuzz", lead=0.0)
    p._engine = make_engine(url, pool_size=2)
    p._schema = store.schema_name

    @settings(
        max_examples=examples,
        deadline=None,
        suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow],
    )
    @given(
        st.dictionaries(st.sampled_from(sorted(COLUMNS)), st.none(), min_size=1).flatmap(
            lambda keys: st.fixed_dictionaries({k: COLUMNS[k] for k in keys})
        )
    )
    def check(values: dict[str, Any]) -> None:
        name = f"f{next(_serial)}"
        job = store.submit(name, What("sql", "SELECT 1"), make_schedule("every", every=5))
        due_now(store, [job.id])
        if "name" in values and isinstance(values["name"], str):
            values["name"] = values["name"] + name  # unique per example
        try:
            write_row(url, job.id, values)
        except Exception:
            assume(False)  # the column's type (or NOT NULL) refused it: nothing was written
        read = [j for j in store.list_jobs(all_owners=True) if j.id == job.id]
        assert len(read) == 1
        got = read[0]
        assert store.get_by_id(job.id) is not None
        got.to_dict()  # what --json prints
        got.schedule.describe()
        if got.problem is None:
            # a valid schedule never spins the scheduling arithmetic
            anchor = got.anchor or got.created
            within(5, lambda: coalesce(got.schedule, got.next_run or anchor, utcnow(), anchor))
            return
        assert got.status is Status.BROKEN
        session = Session(p.engine, p.backend)
        try:
            runs = within(20, lambda: p._claim(session, [job.id]))
        finally:
            session.discard()
        assert runs == []
        row = job_row(store, job.id)
        if not row.running:  # marked BROKEN with the problem (a status column is rewritten)
            assert row.broken and row.broken_reason == got.problem, (row, got.problem)
        assert runs_of(store, job.id) == []

    try:
        check()
    finally:
        p.engine.dispose()
        store.close()
