"""Two pools on one database: how often each tries a job the other one runs.

N jobs ``call <db>.fire(i)`` every second for T seconds (after ``--warmup``
slots, not counted: the jobs' first runs), run by ``--pools`` runner pools in this
process (``--threads`` each). Each pool's claims are counted as they are asked
for: the job ids tried, those declined (taken by the other pool first, or not
due any more), and the runs. Without sharing every pool tries every due job
and the lock decides; with sharing (jobtui.core.runner.sharing) each tries its own
share, so declined claims should be about none.

    python bench/contention.py --jobs 200 --seconds 10 --pools 2

Run it with another tree's ``jobtui`` first on ``PYTHONPATH`` to compare with
that revision (figures side by side: run it twice).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import _common as c


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--jobs", type=int, default=200)
    p.add_argument("--seconds", type=int, default=10)
    p.add_argument("--pools", type=int, default=2)
    p.add_argument("--threads", type=int, default=4)
    p.add_argument(
        "--warmup", type=int, default=2, help="first slots not counted (the jobs' first runs)"
    )
    p.add_argument("--server", default=None, help="MariaDB URL without database")
    p.add_argument("--database", default="jobtui_contention", help="scratch database")
    args = p.parse_args(argv)
    if args.jobs < 1 or args.seconds < 2 or args.pools < 1 or args.threads < 1:
        p.error("--jobs, --pools and --threads must be at least 1, --seconds at least 2")
    c.use_database(args.database)

    import jobtui
    from jobtui.core.model import What
    from jobtui.core.runner.pool import RunnerPool
    from jobtui.core.schedules import make_schedule
    from jobtui.core.store import open_store

    server = c.server_url(args.server)
    c.recreate_database(server)
    conn = c.admin_connect(server, c.BENCH_DB)
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE ledger (job INT, fired DATETIME(6))")
        cur.execute("CREATE PROCEDURE fire(IN j INT) INSERT INTO ledger VALUES (j, NOW(6))")
    url = c.db_url(server)
    store = open_store(url)
    sched = make_schedule("every", every=1)  # first slot set below, for every job at once
    for i in range(args.jobs):
        store.submit(f"c{i}", What("call", f"{c.BENCH_DB}.fire", (str(i),)), sched)
    start = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=3)
    with conn.cursor() as cur:  # every job's first slot (submitting took a while)
        cur.execute("UPDATE jobtui_job SET next_run = %s", (start.replace(tzinfo=None),))
    counted = start + timedelta(seconds=args.warmup - 0.5)
    end = counted + timedelta(seconds=args.seconds)
    counts: list[dict[str, int]] = []
    lock = threading.Lock()
    pools: list[Any] = []
    for n in range(args.pools):
        pool = RunnerPool(store, threads=args.threads, poll=1.0, name=f"bench{n}", owner_share=1)
        tally = {"claims": 0, "tried": 0, "declined": 0, "runs": 0}
        claim = pool._claimer.claim

        def counting(session: Any, job_ids: list[int], *, lead: Any, _c=claim, _t=tally) -> Any:
            runs, declined = _c(session, job_ids, lead=lead)
            if not counted <= datetime.now(UTC) < end:
                return runs, declined
            with lock:
                _t["claims"] += 1
                _t["tried"] += len(job_ids)
                _t["declined"] += len(declined)
                _t["runs"] += len(runs)
            return runs, declined

        pool._claimer.claim = counting
        counts.append(tally)
        pools.append(pool)
    for pool in pools:
        pool.start()
    time.sleep(max(0.0, (counted - datetime.now(UTC)).total_seconds()))
    cpu0 = time.process_time()
    time.sleep(max(0.0, (end - datetime.now(UTC)).total_seconds()))
    cpu = time.process_time() - cpu0
    for pool in pools:
        pool.stop(grace=5)
    with conn.cursor() as cur:
        since = counted.replace(tzinfo=None)
        until = end.replace(tzinfo=None)
        cur.execute("SELECT COUNT(*) FROM ledger WHERE fired >= %s AND fired < %s", (since, until))
        (fired,) = cur.fetchone()
        cur.execute(
            "SELECT COALESCE(SUM(skipped), 0) FROM jobtui_run WHERE outcome = 'skipped' "
            "AND scheduled_for >= %s AND scheduled_for < %s",
            (since, until),
        )
        (bad,) = cur.fetchone()
    store.close()
    conn.close()
    admin = c.admin_connect(server)
    with admin.cursor() as cur:
        cur.execute(f"DROP DATABASE IF EXISTS `{c.BENCH_DB}`")
    admin.close()
    rev = subprocess.run(
        ["git", "-C", str(jobtui.__path__[0]), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    print(
        f"jobtui {rev} from {jobtui.__path__[0]}: {args.jobs} jobs every 1 s, {args.warmup} "
        f"warm-up + {args.seconds} counted slots, {args.pools} pool(s) x {args.threads} threads"
    )
    print("| pool | claims | job ids tried | declined | runs |")
    print("|---|---|---|---|---|")
    for n, t in enumerate(counts):
        print(f"| {n} | {t['claims']} | {t['tried']} | {t['declined']} | {t['runs']} |")
    total = {k: sum(t[k] for t in counts) for k in counts[0]}
    print(f"| all | {total['claims']} | {total['tried']} | {total['declined']} | {total['runs']} |")
    print(
        f"expected {args.jobs * args.seconds} firings, ledger {fired}, slots skipped {bad}; "
        f"process CPU {cpu:.2f} s ({1000 * cpu / max(fired, 1):.2f} ms per firing)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
