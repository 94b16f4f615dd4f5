"""A runner's life in the runner table: registration, heartbeats, and the reaping of
dead runners (their runs become lost, their jobs claimable again).

``Reaper`` is the ``RunnerPool``'s collaborator for all of it; the monitor thread
calls ``heartbeat`` and ``reap``. What differs between databases (SQLite's lease
renewal, MySQL/MariaDB's named lock around a job's release) is the backend's
(``runners: heartbeats and reaping``). docs/runners.md, "Dead runners".
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.engine import Connection, Engine

from jobtui.core import oplog
from jobtui.core.backends import Backend
from jobtui.core.model import Outcome
from jobtui.core.runner import queries, sharing
from jobtui.core.runner.procinfo import process_alive
from jobtui.core.runner.session import transaction, write_transaction
from jobtui.core.timeutil import from_db, to_db
from jobtui.core.transitions import status_after

log = logging.getLogger("jobtui.runner")


@dataclass(frozen=True)
class PoolHandle:
    """What a reaper knows of its pool (made by ``RunnerPool._handle``): who the pool is,
    and what it may ask it. Nothing else of the pool is reached through it."""

    runner_id: str
    name: str
    host: str
    threads: int
    heartbeat_timeout: float
    backend: Backend
    share: sharing.Share
    engine: Callable[[], Engine]  # the pool's engine (once started)
    now: Callable[[], datetime]
    stopping: Callable[[], bool]  # the pool is stopping: its heartbeat says so, it reaps nobody
    taken: Callable[[], set[int]]  # ids of the jobs the pool's threads claim or execute now
    lock_name: Callable[[int], str]  # a job's named lock (MySQL/MariaDB)


class Reaper:
    """One pool's row in the runner table, and its watch over the other runners."""

    def __init__(self, pool: PoolHandle) -> None:
        self.pool = pool
        self._stalled_seen: set[str] = set()  # silent runners alive on this host, told once

    def _write(self) -> AbstractContextManager[Connection]:
        """A write transaction on a connection of the pool's engine."""
        return write_transaction(self.pool.backend, self.pool.engine())

    # ------------------------------------------------------------------ our own row

    def register(self) -> None:
        with self._write() as c:
            now = self.pool.now()
            self._insert(c, now, stopping=False)
            self._read_members(c, now)  # before the first pass: our share from the start

    def _insert(self, c: Connection, now: datetime, *, stopping: bool) -> None:
        pool = self.pool
        c.execute(
            queries.insert_runner(
                {
                    "id": pool.runner_id,
                    "name": pool.name,
                    "host": pool.host,
                    "pid": os.getpid(),
                    "threads": pool.threads,
                    "connection_id": None,
                    "started": to_db(now),
                    "heartbeat": to_db(now),
                    "stopping": stopping,
                }
            )
        )

    def heartbeat(self) -> None:
        # A replicated claim of a row this transaction touched aborts it (1213): again.
        self.pool.backend.retried("a heartbeat", self._heartbeat)

    def _heartbeat(self) -> None:
        pool = self.pool
        now = pool.now()
        with self._write() as c:
            res = c.execute(queries.beat(pool.runner_id, now, stopping=pool.stopping()))
            if res.rowcount == 0:  # reaped while we could not reach the database
                log.warning("runner %s was deregistered; registering again", pool.runner_id)
                self._insert(c, now, stopping=pool.stopping())
            lease_end = now + timedelta(seconds=pool.heartbeat_timeout)
            pool.backend.renew_leases(c, pool.runner_id, lease_end)
            self._read_members(c, now)
        sql_interface = pool.backend.sql_interface  # its cron jobs (none without one)
        for job_id in sql_interface.unarmed(pool.engine(), now):
            with self._write() as c:  # one short transaction each, locking that row only
                sql_interface.arm(c, job_id, now)

    def _read_members(self, c: Connection, now: datetime) -> None:
        """The live pools, read with each heartbeat: our share of the jobs (sharing.py)."""
        pool = self.pool
        rows = c.execute(queries.runner_members()).all()
        live = sharing.members(
            rows, me=pool.runner_id, now=now, timeout=pool.heartbeat_timeout, heartbeat=from_db
        )
        if pool.share.update(live):
            log.info("runner %s shares the jobs with %d pool(s)", pool.runner_id, len(live))

    def deregister(self) -> None:
        with self._write() as c:
            self.pool.backend.drop_leases(c, self.pool.runner_id)
            c.execute(queries.delete_runner(self.pool.runner_id))

    # ------------------------------------------------------------------ the others

    def reap(self, *, others: bool = True) -> None:
        """Runs of dead runners become lost; their jobs become claimable again.

        ``others=False``: only our own claims whose commit reply was lost.
        """
        pool = self.pool
        now = pool.now()
        cutoff = now - timedelta(seconds=pool.heartbeat_timeout)
        with pool.engine().connect() as conn:
            registered = conn.execute(queries.runner_liveness()).all()
            live = {row.id: from_db(row.heartbeat) for row in registered}
            holders = {row[0] for row in conn.execute(queries.running_job_holders())}
            holders |= {row[0] for row in conn.execute(queries.running_run_holders())}
            conn.rollback()
        dead = {rid for rid, hb in live.items() if hb is not None and hb < cutoff}
        dead |= {h for h in holders if h and h not in live}
        dead.discard(pool.runner_id)
        if not pool.backend.named_locks:
            # A lease cannot tell a stopped runner from a dead one; a named lock can:
            # the stopped runner's connection still holds it.
            dead -= self._stalled_here(registered, dead)
        # A run of `CALL run(job)` lives as long as its SQL session holds the job's lock.
        sessions = {rid for rid in dead if pool.backend.sql_interface.is_session(rid)}
        dead -= sessions
        for rid in sorted(sessions) if others else ():
            self._reap_sql_session(rid, now)
        for rid in sorted(dead) if others else ():
            stale = rid in live
            msg = (
                f"runner {rid} stopped heartbeating (none for over {pool.heartbeat_timeout:g} s)"
                if stale
                else f"runner {rid} is not registered any more"
            )
            self._reap_runner(rid, now, msg, delete_row=stale)
        if pool.runner_id in holders:
            self.reap_self(now)

    def _reap_sql_session(self, rid: str, now: datetime) -> None:
        """The runs of a SQL session (``CALL run``) become lost only once the job's named
        lock is free: while it is held, the session is alive and still running the job."""
        msg = f"the SQL session ({rid}) ended during the run (killed or disconnected)"
        with self.pool.engine().connect() as conn:
            ids = [int(x[0]) for x in conn.execute(queries.running_jobs_of(rid))]
            conn.rollback()
        if all([self.release_job(jid, rid, now, msg, kill=False) for jid in ids]):
            self.mark_lost(rid, now, msg)

    def _stalled_here(self, registered: Sequence[Any], silent: set[str]) -> set[str]:
        """Silent runners whose process on this host is alive, only stopped or hung.

        Reaping one would give its running jobs to another runner while its own
        run of them may still go on once it resumes (SIGSTOP, a frozen VM, a
        debugger): two runs of one job at once. Its jobs stay with it until it
        resumes or its process is gone. (On MySQL/MariaDB the job's named lock,
        held by the stalled process's connection, already prevents that.)
        """
        stalled = {
            row.id
            for row in registered
            if row.id in silent
            and row.host == self.pool.host
            and row.pid
            and row.pid != os.getpid()
            and process_alive(int(row.pid), since=from_db(row.heartbeat))
        }
        for rid in stalled - self._stalled_seen:
            log.warning(
                "runner %s has not heartbeated for over %g s, but its process is alive on this "
                "host (stopped or hung?): its jobs stay with it until it resumes or ends",
                rid,
                self.pool.heartbeat_timeout,
            )
        self._stalled_seen = stalled
        return stalled

    def _reap_runner(self, rid: str, now: datetime, msg: str, *, delete_row: bool) -> None:
        pool = self.pool
        cluster = pool.backend.cluster
        if not cluster:
            self.mark_lost(rid, now, msg)
        with pool.engine().connect() as conn:
            ids = [int(x[0]) for x in conn.execute(queries.running_jobs_of(rid))]
            conn.rollback()
        held = {jid for jid in ids if not self.release_job(jid, rid, now, msg)}
        if cluster:  # a run is lost only once its statement is known gone (orphan_gone)
            self.mark_lost(rid, now, msg, skip=held)
        remaining = len(held)
        if remaining == 0 and delete_row:
            cutoff = now - timedelta(seconds=pool.heartbeat_timeout)
            with self._write() as c:
                c.execute(queries.delete_runner(rid, silent_since=cutoff))
            oplog.event(log, logging.WARNING, "runner.reaped", runner=rid, by=pool.runner_id)

    def mark_lost(
        self,
        rid: str,
        now: datetime,
        msg: str,
        *,
        skip: set[int] | None = None,
        unless_held: bool = False,
    ) -> None:
        """``running`` run rows of runner ``rid`` become ``lost``.

        ``skip``: job ids left alone. ``unless_held``: also those whose job row
        ``rid`` holds (running) in the same transaction: a claim that committed
        after the caller looked at its threads' work is a live run, not an orphan.
        """
        with self._write() as c:
            held: set[int] = set()
            if unless_held:
                held = {int(x[0]) for x in c.execute(queries.running_jobs_of(rid))}
            rows = c.execute(queries.running_runs_of(rid)).all()
            for row in rows:
                if (skip is not None and int(row.job_id) in skip) or int(row.job_id) in held:
                    continue
                started = from_db(row.started)
                c.execute(
                    queries.mark_run_lost(
                        row.id,
                        {
                            "outcome": Outcome.LOST.value,
                            "finished": to_db(now),
                            "duration": (now - started).total_seconds() if started else None,
                            "error": f"lost: {msg}; whether it completed is unknown",
                        },
                    )
                )
                oplog.event(
                    log,
                    logging.WARNING,
                    "run.lost",
                    job_id=int(row.job_id),
                    run_id=int(row.id),
                    runner=rid,
                    reason=msg,
                )

    def release_job(
        self,
        job_id: int,
        holder: str,
        now: datetime,
        msg: str,
        *,
        unless_active: bool = False,
        kill: bool = True,
    ) -> bool:
        """Give a dead holder's job back; False while something of the holder may still
        run it (MySQL/MariaDB: its named lock is not free yet; a cluster: its connection
        is still there, ``kill=False``, or its node cannot be asked)."""
        pool = self.pool
        if pool.backend.cluster and not self._orphan_gone(job_id, holder, kill=kill):
            return False
        with (
            pool.engine().connect() as lock_conn,
            pool.backend.reaping_lock(lock_conn, lambda: pool.lock_name(job_id)) as free,
        ):
            if not free:
                return False
            if (
                pool.backend.separate_executor
                and not pool.backend.cluster
                and not self._orphan_gone(job_id, holder, kill=kill)
            ):
                # The holder is dead (its lock is free), but its run executed on its
                # executor connection, which the server may still be running: killed
                # first, so that the job never runs twice at once.
                return False
            with transaction(pool.backend, lock_conn) as c:
                row = c.execute(queries.lock_job(job_id)).first()
                if row is None or not row.running or row.runner_id != holder:
                    return True
                if unless_active and job_id in pool.taken():
                    return True
                if row.remove_requested:  # removed while it ran: its run has ended now
                    c.execute(queries.delete_job(job_id))
                    log.warning("job %s removed: %s", row.name, msg)
                    return True
                values: dict[str, Any] = {
                    "running": False,
                    "this_run": None,
                    "runner_finish": to_db(now),
                    "last_outcome": Outcome.LOST.value,
                    "last_error": f"lost: {msg}",
                    "last_cycle_finish": to_db(now),
                    "locked_by": None,
                    "locked_until": None,
                    "abort_requested": False,
                    # A lost run with no next slot (a once job) may or may not have
                    # completed: show ERROR and leave the rerun to an operator.
                    "phase": (
                        "ERROR" if row.next_run is None and row.phase != "FINISHED" else row.phase
                    ),
                    "updated": to_db(now),
                }
                values["status"] = status_after(row, values)
                c.execute(queries.set_job(job_id, values))
            oplog.event(
                log,
                logging.WARNING,
                "lease.taken_over",
                job=row.name,
                job_id=job_id,
                holder=holder,
                by=pool.runner_id,
                reason=msg,
            )
            return True

    def _orphan_gone(self, job_id: int, holder: str, *, kill: bool) -> bool:
        """The holder's executing connection (recorded with its claim) is gone (from its
        node, on a cluster), killed now if it still ran (``Backend.orphan_gone``)."""
        with self.pool.engine().connect() as conn:
            row = conn.execute(queries.job_holder(job_id)).first()
            conn.rollback()
        if row is None or not row.running or row.runner_id != holder:
            return True  # nothing of the holder's left to wait for
        return self.pool.backend.orphan_gone(row.runner_node, row.runner_connection_id, kill=kill)

    def reap_self(self, now: datetime) -> None:
        """Claims of ours whose commit reply was lost with the connection (no thread has them)."""
        pool = self.pool
        msg = f"runner {pool.runner_id} lost its connection while claiming the job"
        active = pool.taken()
        with pool.engine().connect() as conn:
            ids = [int(x[0]) for x in conn.execute(queries.running_jobs_of(pool.runner_id))]
            conn.rollback()
        orphans = [jid for jid in ids if jid not in active]
        for jid in orphans:
            self.release_job(jid, pool.runner_id, now, msg, unless_active=True)
        # A job claimed again since `active` was read holds its row: not lost.
        self.mark_lost(pool.runner_id, now, msg, skip=pool.taken(), unless_held=True)


class Beats:
    """The monitor's cadence: a heartbeat and a look for dead runners every
    ``interval`` seconds (``tick``), and when the last heartbeat reached the database
    (``last_beat``, monotonic).

    A runner that could not reach the database reaps nobody until it has
    been back for a whole heartbeat timeout: when the server itself was
    down (or restarted) for longer than the timeout, every runner's last
    heartbeat is stale once it is back, and the living need that long to
    show they are alive. Only those that stay silent are then reaped.
    """

    def __init__(self, reaper: Reaper, *, interval: float, timeout: float) -> None:
        self.reaper = reaper
        self.interval = interval
        self.timeout = timeout
        self.last_beat = float("-inf")  # time.monotonic() of the last heartbeat written
        self._next_beat = 0.0
        self._next_reap = 0.0
        self._back_since: float | None = float("-inf")  # None: cut off since the last error

    def start(self, mono: float) -> None:
        """The monitor starts (at ``mono``): the first reaping one interval later."""
        self._next_beat = 0.0
        self._next_reap = mono + self.interval
        self._back_since = float("-inf")

    def tick(self, mono: float, *, stopping: Callable[[], bool]) -> None:
        """Heartbeat, and reap unless ``stopping()``, when their time has come (``mono``).
        Raises what the database raised; then ``cut_off``."""
        if mono >= self._next_beat:
            self._next_beat = mono + self.interval
            self.reaper.heartbeat()
            self.last_beat = time.monotonic()
            if self._back_since is None:
                self._back_since = mono
                log.info(
                    "runner %s reaches the database again; reaping others in %g s",
                    self.reaper.pool.runner_id,
                    self.timeout,
                )
        if mono >= self._next_reap and not stopping():
            self._next_reap = mono + self.interval
            back = self._back_since
            self.reaper.reap(others=back is not None and mono - back >= self.timeout)

    def cut_off(self) -> None:
        """The database could not be reached: reap nobody until back for a timeout."""
        self._back_since = None
