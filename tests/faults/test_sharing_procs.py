"""Several hosts: worker processes with their own runner ids and heartbeats sharing one
MariaDB database. Each runs its share; one killed mid-run hands its share to the other
within the heartbeat timeout, its cut-off run is lost, and no slot runs twice."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from support.procs import (
    check_exclusive,
    create_ledger_proc,
    ledger_counts,
    mysql_db,
    spawn,
    wait_for,
    worker_list,
)

from jobtui.core.model import Outcome, Run, What
from jobtui.core.runner.sharing import owner
from jobtui.core.schedules import make_schedule
from jobtui.core.store import open_store
from jobtui.core.timeutil import utcnow

pytestmark = [pytest.mark.slow, pytest.mark.mariadb]


@pytest.fixture
def workers() -> Iterator[list]:  # type: ignore[type-arg]
    with worker_list() as started:
        yield started


def test_worker_processes_share_the_jobs_and_a_killed_ones_share_moves(
    mariadb_url: str, workers: list, tmp_path: Path
) -> None:
    create_ledger_proc(mariadb_url)
    store = open_store(mariadb_url)
    db = mysql_db(mariadb_url)
    timeout = 4.0  # heartbeats every second; the takeover grace is the default, 2 s
    for name in ("a", "b"):
        # one owner's jobs: let them have every thread (--owner-share 1)
        spawn(
            workers,
            mariadb_url,
            tmp_path,
            name,
            threads=4,
            poll=0.5,
            heartbeat_timeout=timeout,
            extra=["--owner-share", "1"],
        )
    assert wait_for(lambda: all(w.started() for w in workers), 30)
    ids = {w.runner_id(): w for w in workers}
    assert wait_for(lambda: set(ids) <= {r.id for r in store.runners()}, 10)
    # Each reads the other's row with its next heartbeat (within a second), before the
    # first slot.
    start = utcnow() + timedelta(seconds=3)
    quick = [
        store.submit(
            f"q{i:02d}",
            What("call", f"{db}.ledger_ins", (f"q{i:02d}",)),
            make_schedule("every", every=1, start=start),
        )
        for i in range(16)
    ]
    slow = [
        store.submit(
            f"slow{i}",
            What("call", f"{db}.slow_ins", (f"slow{i}", "4")),
            make_schedule("every", every=6, start=start),
        )
        for i in range(2)
    ]
    team = set(ids)
    share = {rid: [j for j in quick if owner(team, j.id) == rid] for rid in ids}
    assert all(share.values())  # 16 jobs over two: each has some (fixed by the ids' hash)

    def executing() -> list[str]:
        """The slow jobs half a second into their current run (its slot: this_run)."""
        now = utcnow()
        return [
            j.name
            for j in slow
            if (job := store.get(j.name)).running
            and job.this_run is not None
            and (now - job.this_run).total_seconds() > 0.5
        ]

    both_worked = wait_for(
        lambda: (
            {r.runner for r in store.runs(limit=10_000, all_owners=True) if r.outcome is Outcome.OK}
            >= team
        ),
        10,
    )
    assert both_worked
    # A slow job's run executing now (4 s long, half a second in): its runner is the victim.
    running = wait_for(executing, 20)
    assert running, [w.log() for w in workers]
    cut = store.get(running[0])
    victim = ids[str(cut.runner_id)]
    [heir] = [w for w in workers if w is not victim]
    heir_id, victim_id = str(heir.runner_id()), str(victim.runner_id())
    before = [r for r in store.runs(limit=10_000, all_owners=True) if r.outcome is Outcome.OK]
    victim.kill9()
    killed = utcnow()
    t0 = time.monotonic()

    def lost() -> list[Run]:
        return [r for r in store.runs(cut.name, limit=20) if r.outcome is Outcome.LOST]

    found = wait_for(lost, timeout + 10, interval=0.1)
    assert found, heir.log()
    assert victim_id in (found[0].error or "")
    assert time.monotonic() - t0 < timeout + 2 + 0.5 + 2.5  # timeout + reap period + margin

    def taken_over() -> dict[str, Run]:
        firsts = {}
        for j in share[victim_id]:
            runs = [
                r
                for r in store.runs(j.name, limit=50)
                if r.runner == heir_id and r.outcome is Outcome.OK and r.scheduled_for > killed
            ]
            if not runs:
                return {}
            firsts[j.name] = min(runs, key=lambda r: r.scheduled_for)
        return firsts

    moved = wait_for(taken_over, timeout + 10, interval=0.1)
    assert moved, heir.log()
    # every job of the victim's share ran again in the heir within the heartbeat timeout
    worst = max((r.started - killed).total_seconds() for r in moved.values())  # type: ignore[operator]
    print(f"the victim's share ran in the heir {worst:.2f} s after the kill at the latest")
    assert worst < timeout + 1.0, moved
    # and keeps running there, each slot once (the victim's gone from the membership)
    time.sleep(2.0)
    assert heir.terminate() == 0, heir.log()
    by_job = check_exclusive(store)  # no slot twice, no overlap, nothing left running
    ledger = ledger_counts(store)
    for j in [*quick, *slow]:
        ok = [r for r in by_job[j.name] if r.outcome is Outcome.OK]
        cut_off = [r for r in by_job[j.name] if r.outcome is Outcome.LOST]
        # every ok run executed once; a cut-off one may have executed (or not yet begun)
        assert len(ok) <= ledger[j.name] <= len(ok) + len(cut_off), j.name
    # before the kill, each pool ran its own share (a takeover of an overdue job aside)
    mine = [r for r in before if r.job.startswith("q")]
    by_owner = [r for r in mine if r.runner == owner(team, r.job_id)]
    assert len(by_owner) >= 0.9 * len(mine), (len(by_owner), len(mine))
    for w in workers:
        assert "Traceback" not in w.log(), w.log()
    store.close()
