"""``kill -9`` of a console that hosts runners, in a real terminal (tmux).

The console (``jobtui console --runners N``) hosts an ordinary runner pool.
When its process dies, a worker process reaps the pool's run as ``lost`` and
runs the job on its next slot, never overlapping the statement the dead
console left running on the server (MariaDB), or once the dead console's
claim is reaped (SQLite).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from support.demo_db import make_demo
from support.mariadb import admin_connection
from support.procs import (
    Console,
    check_exclusive,
    create_ledger_proc,
    kill_mid_call_and_check_rerun,
    mysql_db,
    require_tmux,
    spawn,
    wait_for,
    worker_list,
)

from jobtui.core.model import Outcome, What
from jobtui.core.schedules import make_schedule
from jobtui.core.store import JobStore, open_store
from jobtui.core.timeutil import utcnow

pytestmark = pytest.mark.slow

TIMEOUT = 5.0  # the heir worker's heartbeat timeout: the console beats every 2 s


@pytest.fixture
def workers() -> Iterator[list]:  # type: ignore[type-arg]
    with worker_list() as started:
        yield started


@pytest.fixture
def consoles() -> Iterator[list[Console]]:
    started: list[Console] = []
    yield started
    for c in started:
        c.cleanup()


def host(consoles: list[Console], url: str, cwd: Path) -> Console:
    """A console hosting 2 runner threads on ``url``."""
    console = Console(["--db", url, "console", "--runners", "2", "--refresh", "0.5"], cwd)
    consoles.append(console)
    return console


def console_runner(store: JobStore) -> str:
    """The id of the only registered runner (the console's pool)."""
    found = wait_for(lambda: [r.id for r in store.runners()], 30, 0.1)
    assert found, "the console's runners did not register"
    [rid] = found
    return str(rid)


@pytest.mark.mariadb
def test_kill9_of_a_console_mid_call_is_lost_and_never_overlaps_the_orphan(
    mariadb_url: str, workers: list, consoles: list[Console], tmp_path: Path
) -> None:
    require_tmux()
    create_ledger_proc(mariadb_url)
    store = open_store(mariadb_url)
    db = mysql_db(mariadb_url)
    every = 10.0
    start = utcnow() + timedelta(seconds=6)
    # 12 s: the orphan outlives the reaping (timeout + a reap interval + a poll)
    job = store.submit(
        "slow",
        What("call", f"{db}.slow_ins", ("slow", "12")),
        make_schedule("every", every=every, start=start),
    )
    console = host(consoles, mariadb_url, tmp_path)
    console_id = console_runner(store)
    console.wait_for_screen("slow")
    assert wait_for(lambda: store.get("slow").running, 30), console.screen()
    assert store.get("slow").runner_id == console_id
    heir = spawn(
        workers, mariadb_url, tmp_path, "heir", threads=2, poll=0.5, heartbeat_timeout=TIMEOUT
    )
    assert wait_for(heir.started, 20), heir.log()
    admin = admin_connection(db)
    lost_after = kill_mid_call_and_check_rerun(
        store,
        job,
        start=start,
        every=every,
        victim=console_id,
        kill=console.kill9,
        heir=heir,
        admin=admin,
    )
    print(f"lost {lost_after:.1f} s after the kill (heartbeat timeout {TIMEOUT:g} s)")
    assert console_id not in {r.id for r in store.runners()}
    assert "Traceback" not in heir.log(), heir.log()
    admin.close()
    store.close()


def test_kill9_of_a_console_sqlite_the_job_moves_to_a_worker(
    sqlite_url: str, workers: list, consoles: list[Console], tmp_path: Path
) -> None:
    require_tmux()
    store = open_store(sqlite_url)
    make_demo(store)  # the demo.* actions: a demo database
    store.submit("nap", What("action", "demo.sleep", ("30",)), make_schedule("every", every=3))
    console = host(consoles, sqlite_url, tmp_path)
    console_id = console_runner(store)
    assert wait_for(lambda: store.get("nap").running, 30), console.screen()
    assert store.get("nap").runner_id == console_id
    heir = spawn(
        workers, sqlite_url, tmp_path, "heir", threads=1, poll=0.5, heartbeat_timeout=TIMEOUT
    )
    assert wait_for(heir.started, 20), heir.log()
    console.kill9()
    assert not console.alive()
    killed_at = time.monotonic()

    def lost() -> bool:
        return any(r.outcome is Outcome.LOST for r in store.runs("nap", limit=10))

    assert wait_for(lost, TIMEOUT + 20, 0.1), store.runs("nap", limit=10)
    print(f"lost {time.monotonic() - killed_at:.1f} s after the kill")
    [lost_run] = [r for r in store.runs("nap", limit=10) if r.outcome is Outcome.LOST]
    assert console_id in (lost_run.error or "")
    heir_id = heir.runner_id()
    assert wait_for(lambda: store.get("nap").runner_id == heir_id and store.get("nap").running, 20)
    assert console_id not in {r.id for r in store.runners()}
    assert heir.terminate() == 0, heir.log()
    check_exclusive(store)
    store.close()
