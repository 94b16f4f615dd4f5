"""A MariaDB restart under busy runners, on a private throw-away server.

Worker processes and a console hosting runners (in tmux) run jobs against a
MariaDB server of their own; the server is shut down (SIGTERM: every client
connection is closed), kept down for a few seconds, and started again on the
same data directory and port. Runners and console reconnect by themselves,
every run that started is finished (a run cut off is ``failed``/``lost``,
never left ``running``), no slot runs twice, and the jobs go on.

The shared test server is never restarted (other tests use it): the fixture
installs a private server in a temporary directory. Outside CI the test is
skipped when that is impossible here; with ``CI`` set it fails.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import func, select
from support.private_mariadb import PrivateMariaDB, ServerUnavailable
from support.procs import (
    Console,
    check_exclusive,
    create_ledger_proc,
    ledger_counts,
    require_tmux,
    spawn,
    wait_for,
    worker_list,
)

from jobtui.core import schema
from jobtui.core.model import Outcome, What
from jobtui.core.schedules import make_schedule
from jobtui.core.store import open_store
from jobtui.core.timeutil import utcnow

pytestmark = [pytest.mark.slow, pytest.mark.mariadb]

DOWN = 4.0  # seconds the server stays down


@pytest.fixture(scope="module")
def server() -> Iterator[PrivateMariaDB]:
    try:
        srv = PrivateMariaDB()
        try:
            srv.start()
        except ServerUnavailable:
            srv.remove()
            raise
    except ServerUnavailable as exc:
        if os.environ.get("CI"):
            pytest.fail(f"CI is set, so the MariaDB restart test must run: {exc}")
        pytest.skip(f"cannot run a private MariaDB server here: {exc}")
    try:
        yield srv
    finally:
        srv.remove()


@pytest.fixture
def workers() -> Iterator[list]:  # type: ignore[type-arg]
    with worker_list() as started:
        yield started


def test_mariadb_restart_runners_and_console_reconnect(
    server: PrivateMariaDB, workers: list, tmp_path: Path
) -> None:
    require_tmux()
    conn = server.connect()
    with conn.cursor() as cur:
        cur.execute("CREATE DATABASE restart_t")
    conn.close()
    url = f"{server.server_url}/restart_t"
    create_ledger_proc(url, server.connect)
    store = open_store(url)
    jobs = [f"k{i}" for i in range(6)]
    for name in jobs:
        store.submit(
            name, What("call", "restart_t.ledger_ins", (name,)), make_schedule("every", every=1)
        )
    # long calls: some are always in flight when the server goes down
    for name in ("s0", "s1"):
        store.submit(
            name, What("call", "restart_t.slow_ins", (name, "2.5")), make_schedule("every", every=1)
        )
    for n in range(2):
        spawn(workers, url, tmp_path, f"w{n}", threads=3, poll=0.5)
    console = Console(["--db", url, "console", "--runners", "2", "--refresh", "0.5"], tmp_path)
    try:
        assert wait_for(lambda: all(w.started() for w in workers), 30)
        assert wait_for(lambda: len(store.runners()) == 3, 30), store.runners()
        console.wait_for_screen("k0")
        time.sleep(3)
        in_flight = [j.name for j in store.list_jobs(all_owners=True) if j.running]
        store.close()
        stopping = utcnow()
        server.stop()
        stopped = utcnow()
        console.wait_for_screen("Database unreachable", timeout=DOWN + 10)
        time.sleep(max(0.0, DOWN - (utcnow() - stopped).total_seconds()))
        server.start()
        restarted = utcnow()
        # the banner goes once the console reads again
        assert wait_for(lambda: "Database unreachable" not in console.screen(), 30, 0.2), (
            console.screen()
        )
        store = open_store(url)

        def recovered() -> bool:
            after = restarted + timedelta(seconds=1)
            runs = [r for r in store.runs(limit=5000, all_owners=True) if r.started]
            ok = {(r.job, r.runner) for r in runs if r.outcome is Outcome.OK and r.started > after}
            return (
                all(any(j == name for j, _ in ok) for name in jobs)
                and len({rid for _, rid in ok}) == 3
            )

        # every job runs again, and each of the three pools (2 workers, the console) runs some
        assert wait_for(recovered, 40, 0.5), store.runs(limit=40, all_owners=True)
        for w in workers:
            assert w.proc.poll() is None, w.log()
        console.keys("q")
        # With runs in flight the console asks first: answer "abort them" once the
        # question is on the screen (a key sent before it would steer the table).
        asked = wait_for(lambda: not console.alive() or "Abort them" in console.screen(), 30, 0.2)
        assert asked, console.screen()
        if console.alive():
            console.keys("a")
        assert wait_for(lambda: not console.alive(), 30, 0.2), console.screen()
        for w in workers:
            assert w.terminate() == 0, w.log()
    finally:
        console.cleanup()
    by_job = check_exclusive(store)  # no slot twice, no overlap, nothing left running
    r = schema.run
    with store.read() as c:
        started = c.execute(select(func.count()).where(r.c.started.is_not(None))).scalar()
        unfinished = c.execute(
            select(func.count()).where(r.c.started.is_not(None), r.c.finished.is_(None))
        ).scalar()
        running = c.execute(select(func.count()).where(r.c.outcome == "running")).scalar()
    # Every run that started has finished and none is left running. (A run claimed ahead
    # of its slot and withdrawn before it, e.g. by the console's abort on quit, is
    # finished `aborted` without ever starting: it counts in neither.)
    assert (unfinished, running) == (0, 0)
    finished = started - unfinished
    ledger = ledger_counts(store)
    cut_off = 0
    for name in [*jobs, "s0", "s1"]:
        rs = by_job[name]
        ok = sum(r.outcome is Outcome.OK for r in rs)
        bad = sum(r.outcome in (Outcome.FAILED, Outcome.LOST, Outcome.ABORTED) for r in rs)
        cut_off += sum(
            r.outcome in (Outcome.FAILED, Outcome.LOST)
            and r.started <= stopped
            and r.finished >= stopping
            for r in rs
        )
        # every ok run wrote its ledger row once; a cut-off one may or may not have
        assert ok <= ledger[name] <= ok + bad, (name, ok, bad, ledger[name])
    assert cut_off >= 1, f"no run was cut off by the restart (in flight: {in_flight})"
    assert store.runners() == []
    for w in workers:
        assert "Traceback" not in w.log(), w.log()
    outcomes = Counter(r.outcome.value for rs in by_job.values() for r in rs)
    print(
        f"outcomes {dict(outcomes)}; runs: {started} started = {finished} finished; {cut_off} cut off by the restart; "
        f"in flight at the stop: {in_flight}"
    )
    store.close()


LONG_DOWN = 8.0  # seconds down in the long outage: over twice the heartbeat timeout
SHORT_TIMEOUT = 3.0  # the workers' heartbeat timeout there


def test_an_outage_longer_than_the_heartbeat_timeout_reaps_only_the_runner_that_died(
    server: PrivateMariaDB, workers: list, tmp_path: Path
) -> None:
    """The server is down for longer than the heartbeat timeout; one worker dies meanwhile.

    Once the server is back, every runner's last heartbeat is older than the
    timeout. The living must not take each other for dead (no run of theirs
    ``lost``, no row of theirs reaped); the one killed during the outage is
    reaped: its unfinished runs become ``lost``, its row goes, its jobs run on.
    """
    conn = server.connect()
    with conn.cursor() as cur:
        cur.execute("CREATE DATABASE outage_t")
    conn.close()
    url = f"{server.server_url}/outage_t"
    create_ledger_proc(url, server.connect)
    store = open_store(url)
    jobs = [f"k{i}" for i in range(6)]
    for name in jobs:
        store.submit(
            name, What("call", "outage_t.ledger_ins", (name,)), make_schedule("every", every=1)
        )
    for name in ("s0", "s1"):
        store.submit(
            name, What("call", "outage_t.slow_ins", (name, "2.5")), make_schedule("every", every=1)
        )
    started = [
        spawn(workers, url, tmp_path, f"o{n}", threads=3, poll=0.5, heartbeat_timeout=SHORT_TIMEOUT)
        for n in range(3)
    ]
    assert wait_for(lambda: all(w.started() for w in started), 30)
    assert wait_for(lambda: len(store.runners()) == 3, 30), store.runners()
    ids = {w.name: w.runner_id() for w in started}
    time.sleep(2)

    def slow_runner() -> str | None:
        """The runner of a slow call that began under a second ago (over 1.5 s to go):
        the server stops before it ends, so nobody can record it."""
        for r in store.runs(outcome="running", all_owners=True):
            if r.job in ("s0", "s1") and r.started and utcnow() - r.started < timedelta(seconds=1):
                return r.runner
        return None

    # The pools share the jobs, so the worker to kill is the one running a slow call now.
    # Found once: asked again a moment later, the run may be over a second old already.
    dead = wait_for(slow_runner, 20, 0.05)
    assert dead, store.runs(limit=20, all_owners=True)
    victim = next(w for w in started if ids[w.name] == dead)
    survivors = [w for w in started if w is not victim]
    live = {ids[w.name] for w in survivors}
    store.close()
    server.stop()
    victim.kill9()  # dies while nobody can record anything of it
    time.sleep(LONG_DOWN)
    server.start()
    restarted = utcnow()
    store = open_store(url)

    def recovered() -> bool:
        after = restarted + timedelta(seconds=1)
        runs = [r for r in store.runs(limit=5000, all_owners=True) if r.started]
        ok = {(r.job, r.runner) for r in runs if r.outcome is Outcome.OK and r.started > after}
        return (
            {r.id for r in store.runners()} == live
            and all(any(j == name for j, _ in ok) for name in jobs)
            and {rid for _, rid in ok} == live
        )

    # the dead worker is reaped, every job runs again, in both living workers
    assert wait_for(recovered, 40, 0.5), (store.runners(), store.runs(limit=40, all_owners=True))
    time.sleep(2 * SHORT_TIMEOUT)  # a wrong reap would have come by now
    assert {r.id for r in store.runners()} == live
    for w in survivors:
        assert w.proc.poll() is None, w.log()
        assert w.terminate() == 0, w.log()
    by_job = check_exclusive(store)  # no slot twice, no overlap, nothing left running
    runs = [r for rs in by_job.values() for r in rs]
    lost = [r for r in runs if r.outcome is Outcome.LOST]
    assert [r for r in lost if r.runner != dead] == [], "a living runner's run was taken as lost"
    assert lost, "the killed worker's run in flight was not reaped"
    ledger = ledger_counts(store)
    for name in [*jobs, "s0", "s1"]:
        rs = by_job[name]
        ok = sum(r.outcome is Outcome.OK for r in rs)
        bad = sum(r.outcome in (Outcome.FAILED, Outcome.LOST, Outcome.ABORTED) for r in rs)
        assert ok <= ledger[name] <= ok + bad, (name, ok, bad, ledger[name])
    for w in survivors:
        log = w.log()
        assert "was deregistered" not in log, log
        reaped = {
            line.split(" runner=", 1)[1].split()[0]
            for line in log.splitlines()
            if " runner.reaped " in line
        }
        assert reaped <= {dead}, (reaped, log)
        assert "Traceback" not in log, log
    assert store.runners() == []
    outcomes = Counter(r.outcome.value for r in runs)
    print(f"outcomes {dict(outcomes)}; lost (all of the killed worker): {len(lost)}")
    store.close()
