"""1,000 random operator actions from three processes against a busy worker.

One worker process (4 threads) runs a dozen jobs that take 0-300 ms, every
0.5-2 s, and a steady one every 0.2 s that nobody touches (it gives the run-log
pruner, which runs every second, something to do whatever the operators do). Three operator processes fire random pause, resume, abort, run-now,
broken on/off, schedule edits and remove/resubmit at them through the store
API, logging when each action started and returned. Meanwhile and afterwards
the test checks that the database never shows an impossible state:

- every job row's status is derive_status(intent, broken, running, phase);
  a running job names its runner and has that runner's ``running`` run row
  (read in one transaction, so one consistent snapshot);
- no scheduled run of a job starts while it is paused (from the moment a pause
  returned until a resume, enable or resubmit was asked), run-now excepted;
- after an abort, no scheduled run starts until resume, enable or resubmit;
- after the worker stops: no ``running`` row, every run that started finished,
  no (job_id, scheduled_for) twice, no job left running.

Both backends. The margins are generous (2 shared CPU cores): a run claimed
just before a pause may start executing shortly after it returned.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select
from support.demo_db import make_demo
from support.fuzzing import assert_status_derived
from support.procs import Worker, wait_for

from jobtui.core import schema
from jobtui.core.bookkeeping import finish_values
from jobtui.core.model import Intent, Job, Outcome, Status, What
from jobtui.core.schedules import make_schedule
from jobtui.core.store import JobStore, open_store
from jobtui.core.timeutil import from_db, utcnow

pytestmark = pytest.mark.slow

JOBS = [f"c{i:02d}" for i in range(12)]
STEADY = "steady"  # cycles every 0.2 s and no operator touches it: the pruner always has work
ACTIONS_PER_OPERATOR = 334  # three operators: 1,002 actions
KEEP = 8  # runs per job (and as many errors) the chaos worker keeps
MARGIN = 1.5  # seconds a run claimed before a pause/abort returned may take to start executing

OPERATOR = r"""
import json, random, sys, time
from jobtui.core.errors import JobtuiError
from jobtui.core.model import Intent, Job, Outcome, Status, What
from jobtui.core.bookkeeping import finish_values
from jobtui.core.schedules import make_schedule
from jobtui.core.store import open_store

url, seed, count, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
names = sys.argv[5].split(",")
rng = random.Random(seed)
store = open_store(url)
ops = ["pause", "resume", "abort", "run_now", "broken_on", "broken_off", "edit", "resubmit"]
weights = [3, 3, 2, 2, 1, 1, 2, 1]


def what(name):
    return What("action", "demo.sleep", (str(rng.choice([0, 0.05, 0.1, 0.2, 0.3])),))


with open(out, "w") as log:
    for _ in range(count):
        op = rng.choices(ops, weights)[0]
        name = rng.choice(names)
        rec = {"op": op, "name": name, "t0": time.time()}
        try:
            if op == "pause":
                store.pause(name)
            elif op == "resume":
                store.resume(name)
            elif op == "abort":
                store.abort(name)
            elif op == "run_now":
                store.run_now(name)
            elif op == "broken_on":
                store.broken(name, True)
            elif op == "broken_off":
                store.broken(name, False)
            elif op == "edit":
                store.change(name, every=rng.choice([0.5, 1, 1.5, 2]))
            elif op == "resubmit":
                try:
                    store.remove(name)
                    rec["removed"] = time.time()
                finally:
                    store.submit(name, what(name), make_schedule("every", every=1))
            rec["ok"] = True
        except JobtuiError as exc:
            rec["ok"] = False
            rec["err"] = f"{type(exc).__name__}: {exc}"
        except Exception as exc:
            rec["ok"] = False
            rec["unexpected"] = f"{type(exc).__name__}: {exc}"
        rec["t1"] = time.time()
        log.write(json.dumps(rec) + "\n")
        log.flush()
        time.sleep(rng.random() * 0.06)
store.close()
"""


@pytest.fixture
def procs() -> Iterator[list[Any]]:
    started: list[Any] = []
    yield started
    for p in started:
        if isinstance(p, Worker):
            p.cleanup()
        elif p.poll() is None:
            p.kill()
            p.wait(10)


def submit_jobs(store: JobStore) -> None:
    make_demo(store)  # the demo.* actions: a demo database
    for i, name in enumerate(JOBS):
        seconds = ("0", "0.05", "0.1", "0.2", "0.3")[i % 5]
        store.submit(
            name,
            What("action", "demo.sleep", (seconds,)),
            make_schedule("every", every=(0.5, 1, 1.5, 2)[i % 4]),
        )
    store.submit(STEADY, What("action", "demo.sleep", ("0",)), make_schedule("every", every=0.2))


def snapshot_check(store: JobStore) -> int:
    """One consistent read of jobs and running runs; returns how many jobs run."""
    j, r = schema.job, schema.run
    with store.read() as conn:
        jobs = conn.execute(select(j)).all()
        running = conn.execute(select(r).where(r.c.outcome == "running")).all()
    in_flight = {(row.job_id, row.runner) for row in running}
    job_ids = {row.id for row in jobs}
    for row in jobs:
        assert_status_derived(row)
        if row.running:
            assert row.runner_id, row
            assert (row.id, row.runner_id) in in_flight, (row, running)
    # a running run row belongs to a running job (or to one just removed under it)
    by_id = {row.id: row for row in jobs}
    for run in running:
        if run.job_id in job_ids:
            assert by_id[run.job_id].running, (
                dict(run._mapping),
                dict(by_id[run.job_id]._mapping),
            )
    return sum(1 for row in jobs if row.running)


class Checker(threading.Thread):
    """Checks snapshots every 0.3 s until stopped; keeps the first failure."""

    def __init__(self, store: JobStore) -> None:
        super().__init__(daemon=True)
        self.store = store
        self.stop = threading.Event()
        self.error: BaseException | None = None
        self.checks = 0
        self.max_running = 0

    def run(self) -> None:
        while not self.stop.wait(0.3):
            try:
                self.max_running = max(self.max_running, snapshot_check(self.store))
                self.checks += 1
            except AssertionError as exc:
                self.error = exc
                return
            except Exception as exc:  # a busy database: try again next time
                print("checker:", type(exc).__name__, exc)


def intervals(
    records: list[dict[str, Any]], opens: set[str], closes: set[str]
) -> dict[str, list[tuple[float, float]]]:
    """Per job name: from an opening action's return to the start of the next closing one.

    When a closing action (by another process) overlaps the opening one in time,
    their order is unknown and that span is not checked.
    """
    opened: dict[str, list[tuple[float, float]]] = defaultdict(list)
    closed: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for rec in records:
        if rec["op"] in opens and rec["ok"]:
            opened[rec["name"]].append((rec["t0"], rec["t1"]))
        if rec["op"] in closes and (rec["ok"] or rec["op"] == "resubmit"):
            closed[rec["name"]].append((rec["t0"], rec["t1"]))
    spans: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for name, ops in opened.items():
        for t0, t1 in ops:
            if any(c0 < t1 and c1 > t0 for c0, c1 in closed[name]):
                continue  # raced with a closing action: order unknown
            end = min((c0 for c0, _ in closed[name] if c0 > t1), default=float("inf"))
            spans[name].append((t1, end))
    return spans


def violations(
    runs: list[Any], spans: dict[str, list[tuple[float, float]]]
) -> list[tuple[str, datetime, datetime, tuple[float, float]]]:
    """Scheduled runs claimed inside a span.

    A scheduled run is claimed at or after its slot (``scheduled_for``) and
    before it starts executing (``started``): a slot after the span opened and
    a start before it closed mean the claim fell inside the span. No margin is
    needed for that; a run whose start alone falls inside (claimed just before)
    is allowed up to MARGIN seconds.
    """
    bad = []
    for run in runs:
        if run.manual or run.started is None or run.outcome == "skipped":
            continue
        started = (from_db(run.started) or datetime.min).timestamp()
        slot = (from_db(run.scheduled_for) or datetime.min).timestamp()
        for a, b in spans.get(run.job_name, []):
            if (a < slot and started < b) or (a + MARGIN < started < b):
                bad.append((run.job_name, run.scheduled_for, run.started, (a, b)))
    return bad


def chaos(url: str, tmp_path: Path, procs: list[Any]) -> None:
    store = open_store(url)
    checker: Checker | None = None
    try:
        submit_jobs(store)
        # The worker also prunes the run log every second (keep 8 runs per job and
        # class) while it runs and is steered: pruning must not disturb any of it.
        worker = Worker(
            url,
            tmp_path,
            name="chaos",
            threads=4,
            poll=0.2,
            grace=5.0,
            extra=["--keep-runs", str(KEEP), "--prune-interval", "1"],
        )
        procs.append(worker)
        assert wait_for(worker.started, 30), worker.log()
        # not "operator.py": a script's folder comes first on sys.path, and that
        # name would shadow the standard library's operator module
        script = tmp_path / "chaos_operator.py"
        script.write_text(OPERATOR)
        checker = Checker(store)
        checker.start()
        outs = []
        t_start = time.monotonic()
        for n in range(3):
            out = tmp_path / f"op{n}.jsonl"
            outs.append(out)
            p = subprocess.Popen(
                [
                    sys.executable,
                    str(script),
                    url,
                    str(1000 + n),
                    str(ACTIONS_PER_OPERATOR),
                    str(out),
                    ",".join(JOBS),
                ],
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
            procs.append(p)
        for p in procs[1:]:
            output, _ = p.communicate(timeout=150)
            assert p.returncode == 0, output
        elapsed = time.monotonic() - t_start
        time.sleep(1.0)
        assert worker.terminate() == 0, worker.log()
        checker.stop.set()
        checker.join(10)
        if checker.error is not None:
            raise checker.error

        records = [json.loads(line) for out in outs for line in out.read_text().splitlines()]
        assert len(records) == 3 * ACTIONS_PER_OPERATOR
        unexpected = [r for r in records if "unexpected" in r]
        assert not unexpected, unexpected[:5]
        done = Counter(r["op"] for r in records if r["ok"])
        print(f"{len(records)} actions in {elapsed:.1f} s, done: {dict(done)}")
        print(f"{checker.checks} snapshots checked, up to {checker.max_running} jobs running")
        assert checker.checks >= 10
        for op in ("pause", "resume", "abort", "run_now", "broken_on", "broken_off", "edit"):
            assert done[op] >= 10, (op, done)
        assert done["resubmit"] >= 5, done

        # after the worker: nothing running, every started run finished, no slot twice
        r, j = schema.run, schema.job
        with store.read() as conn:
            runs = conn.execute(select(r)).all()
            jobs = conn.execute(select(j)).all()
        print(f"{len(runs)} runs: {dict(Counter(x.outcome for x in runs))}")
        # The housekeeping pruned while all this went on. The chaos jobs alone may
        # leave it little to do (a resubmitted job starts a new history), so the
        # steady job is the measure: far more runs logged than rows left.
        log_text = worker.log()
        logged = log_text.count(" outcome=")  # one line per run
        steady_logged = log_text.count(f" job={STEADY} ")
        steady_left = sum(1 for x in runs if x.job_name == STEADY and x.outcome != "skipped")
        print(
            f"{logged} runs logged by the worker, {len(runs)} rows left; "
            f"{STEADY}: {steady_logged} logged, {steady_left} left"
        )
        assert logged >= 100
        assert steady_logged >= 4 * KEEP
        assert steady_left < steady_logged / 2
        assert "pruning the run log" not in worker.log(), worker.log()[-3000:]
        assert not [x for x in runs if x.outcome == "running"]
        started = [x for x in runs if x.started is not None and x.outcome != "skipped"]
        assert all(x.finished is not None for x in started)
        slots = Counter((x.job_id, x.scheduled_for) for x in runs)
        assert max(slots.values()) == 1
        for row in jobs:
            assert not row.running, row
            assert_status_derived(row)

        # paused jobs start nothing; an aborted job is not retried
        paused = intervals(records, {"pause"}, {"resume", "resubmit"})
        aborted = intervals(records, {"abort"}, {"resume", "resubmit"})
        print(
            f"checked {sum(len(v) for v in paused.values())} paused and "
            f"{sum(len(v) for v in aborted.values())} aborted intervals"
        )
        assert sum(len(v) for v in paused.values()) >= 10
        assert sum(len(v) for v in aborted.values()) >= 10
        assert violations(runs, paused) == []
        assert violations(runs, aborted) == []
        assert "Traceback" not in worker.log(), worker.log()[-3000:]
    finally:
        if checker is not None:  # never leave it printing into later tests
            checker.stop.set()
            checker.join(10)
        store.close()


def test_operator_chaos_sqlite(sqlite_url: str, tmp_path: Path, procs: list[Any]) -> None:
    chaos(sqlite_url, tmp_path, procs)


@pytest.mark.mariadb
def test_operator_chaos_mariadb(mariadb_url: str, tmp_path: Path, procs: list[Any]) -> None:
    chaos(mariadb_url, tmp_path, procs)


def test_an_abort_that_loses_the_race_with_the_run_still_stops_the_schedule() -> None:
    """The run ended (ok or failed) before the interrupt: the job stays ABORTED, not retried.

    Found by the chaos test above: the phase became SLEEPING (or ERROR, with a retry)
    and the schedule went on after the operator's abort.
    """
    now = utcnow()
    job = Job(
        id=1,
        owner="o",
        name="a",
        description="",
        what=What("sql", "SELECT 1"),
        schedule=make_schedule("every", every=1),
        status=Status.RUNNING,
        intent=Intent.ENABLED,
        broken=False,
        failures=0,
        max_failures=16,
        cycles=3,
        created=now,
        next_run=now,
        phase="ABORTED",
        running=True,
    )
    for outcome in (Outcome.OK, Outcome.FAILED):
        values = finish_values(
            job, "ABORTED", outcome=outcome, error=None, started=now, finished=now, manual=False
        )
        assert values["phase"] == "ABORTED" and values["status"] == "ABORTED", values
        assert "next_run" not in values  # no retry scheduled


def test_a_resubmitted_job_never_gets_the_removed_jobs_id(db_url: str) -> None:
    """Found by the chaos test on SQLite: the removed job's id (the largest) came back.

    The run log keeps job_id after a removal, so a reused id mixed two jobs' histories
    (and their UNIQUE(job_id, scheduled_for) slots).
    """
    store = open_store(db_url)
    try:
        store.submit("a", What("sql", "SELECT 1"), make_schedule("once"))
        old = store.submit("b", What("sql", "SELECT 1"), make_schedule("once"))
        store.remove("b")
        new = store.submit("b", What("sql", "SELECT 1"), make_schedule("once"))
        assert new.id > old.id
    finally:
        store.close()
