"""Runner pools: execute due jobs on time, exactly once, and obey the operator.

A ``RunnerPool`` is DBMS_JOB's job queue processes in one process:

- a scheduler thread finds due jobs with one query, sleeps until the earliest
  next run (bounded by ``poll``) and hands job ids to idle worker threads;
- each worker thread owns one connection on which it claims the job
  (``GET_LOCK`` + row update on MySQL/MariaDB, a lease inside ``BEGIN
  IMMEDIATE`` on SQLite), executes it, and records the outcome;
- a monitor thread heartbeats, renews leases, watches ``abort_requested``
  (interrupting the statement in flight) and reaps dead runners.

``worker_main`` runs a pool headless (``jobtui worker``); ``run_foreground``
runs one job's schedule in the foreground (``jobtui run NAME``, the seed's
job$run). docs/runners.md describes the protocol.
"""

from __future__ import annotations

import argparse
import itertools
import logging
import os
import random
import secrets
import signal
import socket
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, delete, func, insert, or_, select, update
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import SQLAlchemyError

from jobtui.core import bookkeeping, claims, schema
from jobtui.core.claiming import Claimer, Run
from jobtui.core.claims import describe as _describe
from jobtui.core.db import make_engine, mask_text
from jobtui.core.errors import InvalidInput, JobLocked, JobtuiError
from jobtui.core.model import Outcome
from jobtui.core.recording import Ended, Recorder
from jobtui.core.running import abort_run, execute_run, find_aborts
from jobtui.core.session import Session, transaction, write_transaction
from jobtui.core.store import JobStore, Retention, translate_db_error
from jobtui.core.timeutil import Clock, aware, from_db, iso, to_db
from jobtui.core.transitions import derive_status

log = logging.getLogger("jobtui.runner")

DEFAULT_THREADS = 4
DEFAULT_POLL = 1.0
DEFAULT_OWNER_SHARE = 0.5  # of a pool's threads one owner's runs may hold at once (at least 1)
DEFAULT_HEARTBEAT_TIMEOUT = 15.0
ABORT_CHECK_INTERVAL = 0.3
BACKLOG_PER_THREAD = 4
MAX_BATCH = 256  # short jobs claimed and recorded together when many are due
BATCH_BUDGET = 0.25  # seconds: a batch's jobs run one after another; their last runs add up to this
MIN_PASS = 0.02  # seconds between two scheduler passes a worker asked for
DEFAULT_LEAD = 0.25  # seconds: a slot due this soon is claimed now and executed at its time
BURST_WAIT = 0.2  # seconds: the longest a batch's recording waits for a slot's other batches
SHORT_RUN = 0.1  # seconds: a job whose last run took less may be batched
RECONNECT_CAP = 5.0
PRUNE_MAX_BATCHES = 20  # per housekeeping pass; the rest goes in the next one

OnRun = Callable[["RunResult"], None]


@dataclass(frozen=True)
class RunResult:
    """What one finished run reports (``worker_main`` logs one line of it)."""

    job: str
    job_id: int
    slot: datetime
    outcome: Outcome
    started: datetime
    finished: datetime
    error: str | None
    manual: bool
    skipped: int

    @property
    def duration(self) -> float:
        return (self.finished - self.started).total_seconds()

    def line(self) -> str:
        text_ = (
            f"{iso(self.finished)} job={self.job} slot={iso(self.slot)} "
            f"outcome={self.outcome.value} duration={self.duration:.3f}s"
        )
        if self.manual:
            text_ += " manual"
        if self.skipped:
            text_ += f" skipped={self.skipped}"
        if self.error:
            text_ += f" error={self.error.splitlines()[0][:300]!r}"
        return text_


_Item = tuple[str, list[int]] | None  # ("run" | "hold", job ids); None: a thread's stop


class _OwnerQueue:
    """The worker threads' queue: first in, first out, except that the items of an owner
    whose runs already hold ``cap`` threads wait (without a thread) and the others pass.

    Each "run" item is one owner's (batches never mix owners), so one owner's jobs never
    execute on more than ``cap`` threads at once: a few endless jobs of one owner leave
    the pool's other threads to the others (docs/runners.md, "Between owners").
    """

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self._items: deque[tuple[str | None, _Item]] = deque()
        self._holding: dict[str, int] = {}  # owner -> items taken by threads, not yet done
        self._cond = threading.Condition()

    def put(self, item: _Item, owner: str | None = None) -> None:
        with self._cond:
            self._items.append((owner, item))
            self._cond.notify()

    def get(self) -> tuple[_Item, str | None]:
        """The first item a thread may take now (blocking); ``done(owner)`` when finished."""
        with self._cond:
            while True:
                for i, (owner, item) in enumerate(self._items):
                    if owner is None or self._holding.get(owner, 0) < self.cap:
                        del self._items[i]
                        if owner is not None:
                            self._holding[owner] = self._holding.get(owner, 0) + 1
                        return item, owner
                self._cond.wait()

    def done(self, owner: str | None) -> None:
        if owner is None:
            return
        with self._cond:
            left = self._holding.get(owner, 0) - 1
            if left > 0:
                self._holding[owner] = left
            else:
                self._holding.pop(owner, None)
            self._cond.notify_all()

    def runnable(self) -> int:
        """How many queued items a thread could take now."""
        with self._cond:
            return sum(
                1
                for owner, _ in self._items
                if owner is None or self._holding.get(owner, 0) < self.cap
            )


def owner_cap(threads: int, share: float) -> int:
    """How many of ``threads`` one owner's runs may hold: ``share`` of them, at least one."""
    return max(1, int(threads * share + 1e-9))


class RunnerPool:
    """N worker threads executing due jobs from one database (job queue processes)."""

    def __init__(
        self,
        store: JobStore,
        *,
        threads: int = DEFAULT_THREADS,
        poll: float = DEFAULT_POLL,
        name: str | None = None,
        heartbeat_timeout: float = DEFAULT_HEARTBEAT_TIMEOUT,
        clock: Clock | None = None,
        on_run: OnRun | None = None,
        job_id: int | None = None,
        hold: bool = False,
        retention: Retention | None = None,
        lead: float = DEFAULT_LEAD,
        owner_share: float = DEFAULT_OWNER_SHARE,
    ) -> None:
        if threads < 1:
            raise ValueError("threads must be at least 1")
        if not 0 < owner_share <= 1:
            raise ValueError("owner_share must be a fraction above 0 and at most 1")
        if poll <= 0:
            raise ValueError("poll must be a positive number of seconds")
        if not 0 <= lead <= 5:
            raise ValueError("lead must be between 0 and 5 seconds")
        self.store = store
        self.threads = int(threads)
        self.poll = float(poll)
        # One owner's runs hold at most this many threads at once (see _OwnerQueue).
        self.owner_share = float(owner_share)
        self.owner_cap = owner_cap(self.threads, self.owner_share)
        # Claiming takes round trips; done this much before a slot, only the execution
        # itself is left for the slot. Not in hold mode: run NAME claims at the slot.
        self._lead = timedelta(seconds=0.0 if hold else float(lead))
        self.name = (name or "runner")[:64]
        self.heartbeat_timeout = float(heartbeat_timeout)
        self.heartbeat_interval = max(0.2, min(2.0, self.heartbeat_timeout / 4))
        self.clock: Clock = clock or store.clock
        self.on_run = on_run
        self.only_job = job_id
        self.hold = hold
        self.host = socket.gethostname()[:255]
        self.runner_id = f"{self.host}:{os.getpid()}:{self.name}:{secrets.token_hex(3)}"[:190]
        self.mysql = not store.is_sqlite
        self.backend = store.backend
        self.running = False
        self.hold_error: JobLocked | None = None
        self.hold_ready = threading.Event()
        self._engine: Engine | None = None
        self._schema = ""
        self._lock_key = ""  # the store's jobtui_secret key: lock names operators cannot compute
        self._lock = threading.Lock()
        self._active: dict[int, Run | None] = {}  # job id -> run (None while claiming)
        # Batches claimed ahead of their slot that are executing now: their recording
        # waits for the others' executions (BURST_WAIT at most), so a slot's burst of
        # runs is not slowed down by the bookkeeping of the batches that ended first.
        self._burst = threading.Condition()
        self._bursting = 0
        self._cooldown: dict[int, float] = {}
        self._stalled_seen: set[str] = set()  # SQLite: silent runners alive on this host
        self._long_taken: set[int] = set()  # taken jobs that are not batched (guarded by _lock)
        self._owner_of: dict[int, str] = {}  # taken job id -> its owner (guarded by _lock)
        self._queue = _OwnerQueue(self.owner_cap)
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._stopped = threading.Event()
        self._give_up = threading.Event()
        self._threads: list[threading.Thread] = []
        self.runs_done = 0
        # Run-log retention (store.prune_runs), pruned by a housekeeping thread.
        self.retention: Retention = retention if retention is not None else store.retention
        self.pruned = 0
        # Claiming and recording (claiming.py, recording.py), through the store's backend.
        self._claimer = Claimer(
            self.backend,
            runner_id=self.runner_id,
            clock=self.now,
            lease=timedelta(seconds=self.heartbeat_timeout),
            lock_name=self._lock_name,
            evaluate_expr=store.evaluate_expr,
            hold=hold,
        )
        self._recorder = Recorder(self.backend, runner_id=self.runner_id, hold=hold)

    # ------------------------------------------------------------------ public

    @property
    def engine(self) -> Engine:
        assert self._engine is not None, "start() the pool first"
        return self._engine

    def now(self) -> datetime:
        return aware(self.clock())

    def in_flight(self) -> list[str]:
        """Names of the jobs this pool is executing now."""
        with self._lock:
            return sorted(r.job.name for r in self._active.values() if r is not None)

    def busy(self) -> bool:
        """Whether a job is being claimed or executed here now."""
        return self._has_runs()

    def start(self) -> None:
        """Register in the runner table and start the threads."""
        if self.running:
            return
        url = self.store.url
        claims.quiet_lost_resets()
        if self.store.is_sqlite and (":memory:" in url or url.rstrip("/") == "sqlite:"):
            self._engine = self.store.engine
        else:
            self._engine = make_engine(url, pool_size=self.threads + 3)
        try:
            if self.mysql:
                with self.engine.connect() as conn:
                    self._schema = claims.current_schema(conn)
                self._lock_key = self.store.lock_key()
            self._register()
        except (SQLAlchemyError, JobtuiError) as exc:
            if self._engine is not self.store.engine:
                self.engine.dispose()
            if isinstance(exc, JobtuiError):
                raise
            raise translate_db_error(exc) from exc
        self.running = True
        for i in range(self.threads):
            self._spawn(self._worker_loop, f"jobtui-worker-{i}")
        if self.hold and self.only_job is not None:
            self._queue.put(("hold", [self.only_job]))
        else:
            self.hold_ready.set()
        self._spawn(self._monitor_loop, "jobtui-monitor")
        self._spawn(self._scheduler_loop, "jobtui-scheduler")
        if self.retention.enabled and self.only_job is None:
            self._spawn(self._housekeeping_loop, "jobtui-housekeeping")

    def stop(self, grace: float = 10.0, abort: bool = True) -> None:
        """Stop claiming, let runs finish for ``grace`` seconds, then abort them; deregister.

        With ``abort=False`` the runs in flight are waited for however long they take.
        """
        if not self.running:
            return
        self._stopping.set()
        self._wake.set()
        deadline = time.monotonic() + max(0.0, grace)
        while self._has_runs() and (not abort or time.monotonic() < deadline):
            time.sleep(0.05)
        if self._has_runs():
            for run in self._runs():
                run.abort_reason = run.abort_reason or "shutdown"
                self._abort(run)
        # Recording may wait for a lost database; do not wait for ever.
        deadline = time.monotonic() + max(10.0, self.heartbeat_timeout)
        while self._has_runs() and time.monotonic() < deadline:
            time.sleep(0.05)
        self._give_up.set()
        for _ in range(self.threads):
            self._queue.put(None)
        self._stopped.set()
        for t in self._threads:
            t.join(timeout=5.0)
        try:
            self._deregister()
        except Exception as exc:
            log.warning("could not deregister runner %s: %s", self.runner_id, _describe(exc))
        if self._engine is not None and self._engine is not self.store.engine:
            self._engine.dispose()
        self.running = False

    # ------------------------------------------------------------------ threads

    def _spawn(self, target: Callable[[], None] | Callable[[int], None], name: str) -> None:
        t = threading.Thread(target=target, name=name, daemon=True)
        self._threads.append(t)
        t.start()

    def _has_runs(self) -> bool:
        with self._lock:
            return bool(self._active)

    def _runs(self) -> list[Run]:
        with self._lock:
            return [r for r in self._active.values() if r is not None]

    def _scheduler_loop(self) -> None:
        backoff = 0.2
        while not self._stopping.is_set():
            self._wake.clear()
            began = time.monotonic()
            try:
                wait = self._schedule_once()
                backoff = 0.2
            except Exception as exc:
                log.warning("scheduler: %s (retrying in %.1f s)", _describe(exc), backoff)
                wait = backoff
                backoff = min(backoff * 2, RECONNECT_CAP)
            if self._wake.wait(wait):
                # Woken by a worker running low: at most one pass per MIN_PASS seconds,
                # so a busy pool does not re-read the due jobs after every batch.
                rest = MIN_PASS - (time.monotonic() - began)
                if rest > 0:
                    self._stopping.wait(rest)

    def _schedule_once(self) -> float:
        """Queue due jobs for the worker threads; return how long to sleep."""
        now = self.now()
        soon = now + self._lead
        with self._lock:
            busy = set(self._active)
        # A short backlog beyond the idle threads keeps them busy without a query per run;
        # short jobs go in batches, so many more of them can be taken at once.
        long_cap = self.threads * BACKLOG_PER_THREAD
        capacity = self.threads * (BACKLOG_PER_THREAD + MAX_BATCH) - len(busy)
        j = schema.job
        eligible = and_(
            j.c.intent == "ENABLED",
            j.c.broken.is_(False),
            j.c.phase.notin_(["ABORTED", "FINISHED"]),
            j.c.next_run.is_not(None),
        )
        limit = max(capacity, 0) * 2 + len(busy) + 1
        # Only the jobs due by `soon` (a busy pool would otherwise re-read every job
        # due within the next poll on each pass), and the earliest of the others.
        query = (
            select(
                j.c.id,
                j.c.owner,
                j.c.next_run,
                j.c.run_now,
                j.c.locked_by,
                j.c.locked_until,
                j.c.last_duration,
            )
            .where(
                j.c.running.is_(False),
                or_(j.c.run_now.is_(True), and_(eligible, j.c.next_run <= to_db(soon))),
            )
            .order_by(j.c.run_now.desc(), j.c.next_run)
            # more than we can take: pools sharing a database pick different random ones
            .limit(limit)
        )
        later = select(func.min(j.c.next_run)).where(
            j.c.running.is_(False), eligible, j.c.next_run > to_db(soon)
        )
        if self.only_job is not None:
            query = query.where(j.c.id == self.only_job)
            later = later.where(j.c.id == self.only_job)
        with self.engine.connect() as conn:
            rows = conn.execute(query).all()
            first_later = from_db(conn.execute(later).scalar())
            conn.rollback()
        mono = time.monotonic()
        earliest: datetime | None = first_later
        due: list[tuple[float, int]] = []
        short: dict[int, float] = {}  # job id -> its last run's duration
        owners: dict[int, str] = {}
        for row in rows:
            jid = int(row.id)
            owners[jid] = str(row.owner)
            if jid in busy or self._cooldown.get(jid, 0.0) > mono:
                continue
            if (
                row.locked_by
                and row.locked_by != self.runner_id
                and row.locked_until is not None
                and (bookkeeping.row_time(row.locked_until) or now) > now
            ):
                continue  # SQLite lease held by another runner
            # A next_run that is no date (a zero date written through the view) sorts
            # first in SQL: due now, and the claim finds the row's problem.
            nxt = bookkeeping.row_time(row.next_run, now)
            duration = row.last_duration
            if type(duration) in (float, int) and 0.0 <= duration < SHORT_RUN:
                short[jid] = float(duration)
            if row.run_now:
                due.append((0.0, jid))
            elif nxt is not None and nxt <= soon:
                # 0.1 s buckets, shuffled inside: pools sharing a database start on
                # different jobs instead of all fighting over the same first one.
                due.append((1.0 + (nxt - now).total_seconds() // 0.1 + random.random(), jid))
            elif nxt is not None and (earliest is None or nxt < earliest):
                earliest = nxt
        due.sort()
        taken: list[tuple[float, int]] = []
        with self._lock:
            n_long = len(self._long_taken)
            owner_long: dict[str, int] = {}
            for jid in self._long_taken:
                owner = self._owner_of.get(jid, "")
                owner_long[owner] = owner_long.get(owner, 0) + 1
        # One owner's long jobs fill at most its share of the backlog: the others' jobs
        # are still taken when one owner has many due (fairness; _OwnerQueue).
        owner_long_cap = max(self.owner_cap, int(long_cap * self.owner_share))
        for item in due:
            if len(taken) >= capacity:
                break
            if item[1] not in short:
                owner = owners[item[1]]
                if n_long >= long_cap or owner_long.get(owner, 0) >= owner_long_cap:
                    continue
                n_long += 1
                owner_long[owner] = owner_long.get(owner, 0) + 1
            taken.append(item)
        with self._lock:
            for _, jid in taken:
                self._active[jid] = None
                self._owner_of[jid] = owners[jid]
                if jid not in short:
                    self._long_taken.add(jid)
        self._dispatch([jid for _, jid in taken], short, owners)
        if len(self._cooldown) > 1000:
            self._cooldown = {k: v for k, v in self._cooldown.items() if v > mono}
        if len(due) > len(taken) or len(rows) >= limit:
            return self.poll  # more are due: a worker running low on work wakes the loop
        if earliest is None:
            return self.poll
        return max(0.002, min(self.poll, (earliest - self._lead - self.now()).total_seconds()))

    def _dispatch(self, jids: list[int], short: dict[int, float], owners: dict[int, str]) -> None:
        """Queue the jobs: one by one, except short ones when there are many (batches).

        A batch holds one owner's jobs only: its runs share a connection, which is
        reset after each batch (``Session.reset``). An owner's short jobs are spread
        over the threads (one batch each), unless a batch's last durations would add
        up to more than BATCH_BUDGET: then more, smaller batches. (Not over the threads
        the owner may hold at once: larger batches' claims lock by a table scan once
        they name a large part of the table, and deadlocked in the benchmark.)
        """
        quick: dict[str, list[int]] = {}
        for jid in jids:
            if jid in short:
                quick.setdefault(owners[jid], []).append(jid)
            else:
                self._queue.put(("run", [jid]), owners[jid])
        for owner, ids in quick.items():
            size = min(MAX_BATCH, max(1, -(-len(ids) // self.threads)))
            mean = sum(short[jid] for jid in ids) / len(ids)
            size = max(1, min(size, int(BATCH_BUDGET / max(mean, 1e-4))))
            for i in range(0, len(ids), size):
                self._queue.put(("run", ids[i : i + size]), owner)

    def _worker_loop(self) -> None:
        session = Session(self.engine, self.backend)
        try:
            while True:
                item, owner = self._queue.get()
                if item is None:
                    break
                kind, jids = item
                try:
                    if kind == "hold":
                        self._take_hold(session, jids[0])
                    elif not self._stopping.is_set():
                        self._process(session, jids)
                except Exception as exc:
                    log.warning("runner thread: %s", _describe(exc))
                    if claims.is_disconnect(exc):
                        session.discard()
                finally:
                    if kind == "run":
                        with self._lock:
                            for jid in jids:
                                self._active.pop(jid, None)
                                self._long_taken.discard(jid)
                                self._owner_of.pop(jid, None)
                        self._queue.done(owner)
                        if self._queue.runnable() < self.threads:
                            self._wake.set()
        finally:
            session.discard()

    def _monitor_loop(self) -> None:
        """Aborts, heartbeats and the reaping of dead runners.

        A runner that could not reach the database reaps nobody until it has
        been back for a whole heartbeat timeout: when the server itself was
        down (or restarted) for longer than the timeout, every runner's last
        heartbeat is stale once it is back, and the living need that long to
        show they are alive. Only those that stay silent are then reaped.
        """
        next_beat = 0.0
        next_reap = time.monotonic() + self.heartbeat_interval
        back_since: float | None = float("-inf")  # None: cut off since the last error
        while not self._stopped.wait(ABORT_CHECK_INTERVAL):
            mono = time.monotonic()
            try:
                if self._has_runs():
                    self._check_aborts()
                if mono >= next_beat:
                    next_beat = mono + self.heartbeat_interval
                    self._heartbeat()
                    if back_since is None:
                        back_since = mono
                        log.info(
                            "runner %s reaches the database again; reaping others in %g s",
                            self.runner_id,
                            self.heartbeat_timeout,
                        )
                if mono >= next_reap and not self._stopping.is_set():
                    next_reap = mono + self.heartbeat_interval
                    self._reap(
                        others=back_since is not None
                        and mono - back_since >= self.heartbeat_timeout
                    )
            except Exception as exc:
                back_since = None
                log.warning("monitor: %s", _describe(exc))

    def _housekeeping_loop(self) -> None:
        """Prune the run log every ``retention.interval`` seconds, a few batches at a time.

        Its own thread, so a slow DELETE never delays heartbeats or aborts; batches
        are short transactions, so claims go on in between. On MySQL/MariaDB one
        pruner at a time (GET_LOCK ...:prune inside prune_runs; others skip).
        """
        ret = self.retention
        wait = ret.interval
        while not self._stopping.wait(wait):
            wait = ret.interval
            try:
                deleted = self.store.prune_runs(
                    keep=ret.keep_runs,
                    keep_days=ret.keep_days,
                    keep_error_days=ret.keep_error_days,
                    batch=ret.batch,
                    max_batches=PRUNE_MAX_BATCHES,
                    now=self.now(),
                )
            except Exception as exc:
                log.warning("pruning the run log: %s", _describe(exc))
                continue
            self.pruned += deleted
            if deleted:
                log.info("pruned %d run-log row(s)", deleted)
            if deleted >= ret.batch * PRUNE_MAX_BATCHES:
                wait = min(ret.interval, 1.0)  # more to do: carry on soon, in small steps

    # ------------------------------------------------------------------ transactions

    @contextmanager
    def _txn(self, conn: Connection, *, write: bool = True) -> Iterator[Connection]:
        """A transaction on ``conn``: BEGIN IMMEDIATE on SQLite when writing."""
        with transaction(self.backend, conn, write=write) as c:
            yield c

    @contextmanager
    def _write(self) -> Iterator[Connection]:
        with write_transaction(self.backend, self.engine) as c:
            yield c

    def _lock_row(self, conn: Connection, job_id: int) -> Any:
        j = schema.job
        return conn.execute(select(j).where(j.c.id == job_id).with_for_update()).first()

    # ------------------------------------------------------------------ claiming

    def _lock_name(self, job_id: int) -> str:
        key = self._lock_key or self.store.lock_key()  # read at start(); once per store
        return claims.lock_name(key, self._schema, job_id)

    def _take_hold(self, session: Session, job_id: int) -> None:
        """Foreground mode: hold the job's lock (or lease) from now until stop."""
        try:
            now = self.now()
            held = self.backend.take_hold(
                session.get(),
                job_id,
                lock_name=self._lock_name,
                runner_id=self.runner_id,
                now=now,
                lease_until=self._lease_end(now),
            )
            if held is not None:
                name, holder = held
                self.hold_error = JobLocked(name or self._job_label(job_id), holder)
        finally:
            self.hold_ready.set()

    def _job_label(self, job_id: int) -> str:
        job = self.store.get_by_id(job_id)
        return job.name if job else str(job_id)

    def _lease_end(self, now: datetime) -> datetime:
        return now + timedelta(seconds=self.heartbeat_timeout)

    def _process(self, session: Session, job_ids: list[int]) -> None:
        if session.dirty and not self.hold:
            session.reset()  # not reset after its last batch (recording gave up): now
        try:
            runs = self._claim(session, job_ids)
        except Exception as exc:
            if not claims.is_disconnect(exc):
                raise
            # The held connection died while idle (server restart, KILL): once more on a
            # fresh one. Safe: a claim that did commit left running=1, so this finds it taken.
            session.discard()
            runs = self._claim(session, job_ids)
        if not runs:
            return
        with self._lock:
            for run in runs:
                self._active[run.job.id] = run
        self._run_batch(runs)

    def _claim(self, session: Session, job_ids: list[int]) -> list[Run]:
        """Claim what is still eligible of ``job_ids`` (``Claimer.claim``); the others
        are left alone for a moment (the scheduler's cooldown)."""
        runs, declined = self._claimer.claim(session, job_ids, lead=self._lead)
        if declined:
            until = time.monotonic() + min(self.poll, 0.5)
            for jid in declined:
                self._cooldown[jid] = until
        return runs

    def _run_batch(self, runs: list[Run]) -> None:
        """Execute claimed runs one after the other (each at its slot), then record them."""
        done: list[Ended] = []
        checked = False
        # Only batches of short jobs (more than one run) take part: a job run alone (long,
        # or of unknown duration) neither waits for the others nor makes them wait.
        burst = len(runs) > 1 and any(run.ahead for run in runs)
        self._verify(runs)
        if burst:
            with self._burst:
                self._bursting += 1
        try:
            for run in runs:  # a batch runs one after the other on this connection
                if run.ahead:
                    self._wait_for_slot(run)
                    if not checked:
                        checked = True
                        self._claimer.withdraw([r for r in runs if r.ahead])
                outcome, error = self._execute(run)
                done.append((run, outcome, error, self.now()))
        finally:
            if burst:
                with self._burst:
                    self._bursting -= 1
                    self._burst.notify_all()
        if burst:
            with self._burst:
                self._burst.wait_for(lambda: self._bursting == 0, timeout=BURST_WAIT)
        self._finish(done)

    def _verify(self, runs: list[Run]) -> None:
        self._claimer.verify(runs, self._schema)

    def _wait_for_slot(self, run: Run) -> None:
        """A run claimed ahead of its slot (``lead``) starts at the slot, or when aborted."""
        early = (run.slot - self.now()).total_seconds()
        if early > 0:
            # Bounded by the lead: an injected clock that stands still does not stall us.
            run.abort_event.wait(min(early, self._lead.total_seconds()))

    # ------------------------------------------------------------------ executing

    def _execute(self, run: Run) -> tuple[Outcome, str | None]:
        return execute_run(
            run, self.backend, schema_name=self._schema, now=self.now, runner_id=self.runner_id
        )

    def _abort(self, run: Run) -> None:
        """Stop a run in flight: the action's event, and the statement on its connection."""
        abort_run(run, self.backend, self.engine)

    def _check_aborts(self) -> None:
        runs = self._runs()
        if not runs:
            return
        for run in find_aborts(self.engine, runs, self.runner_id):
            log.info("aborting job %s (%s)", run.job.name, run.abort_reason)
            self._abort(run)

    # ------------------------------------------------------------------ recording

    def _finish(self, done: list[Ended]) -> None:
        """Record the outcomes (retrying until the database answers), then report them."""
        items = []
        for run, outcome, error, finished in done:
            if error is not None:
                error = mask_text(error)[: bookkeeping.MAX_ERROR_LENGTH]
            items.append((run, outcome, error, finished))
        session = items[0][0].session
        names = ", ".join(run.job.name for run, *_ in items)
        delay = 0.2
        for attempt in itertools.count():
            try:
                conn = session.get()
                self._recorder.record(conn, items)
                break
            except Exception as exc:
                if claims.is_interrupt(exc) and attempt < 3:
                    continue  # a KILL QUERY that arrived late; the connection is fine
                log.warning(
                    "could not record the run of %s (retrying in %.1f s): %s",
                    names,
                    delay,
                    _describe(exc),
                )
                session.discard()
                if self._give_up.is_set():
                    log.error("giving up recording the run of %s", names)
                    return
                time.sleep(delay)
                delay = min(delay * 2, RECONNECT_CAP)
        if session.dirty and not self.hold:
            # Recorded, locks released: what the runs set in the session goes, before
            # this connection claims another owner's jobs (or evaluates their expr).
            session.reset()
        self.runs_done += len(items)
        if self.on_run is None:
            return
        for run, outcome, error, finished in items:
            try:
                self.on_run(
                    RunResult(
                        job=run.job.name,
                        job_id=run.job.id,
                        slot=run.slot,
                        outcome=outcome,
                        started=run.exec_start or run.started,
                        finished=finished,
                        error=error,
                        manual=run.manual,
                        skipped=run.skipped,
                    )
                )
            except Exception as exc:
                log.warning("on_run callback failed: %s", exc)

    # ------------------------------------------------------------------ staying alive

    def _register(self) -> None:
        now = self.now()
        with self._write() as c:
            c.execute(
                insert(schema.runner).values(
                    id=self.runner_id,
                    name=self.name,
                    host=self.host,
                    pid=os.getpid(),
                    threads=self.threads,
                    connection_id=None,
                    started=to_db(now),
                    heartbeat=to_db(now),
                    stopping=False,
                )
            )

    def _heartbeat(self) -> None:
        now = self.now()
        rn, j = schema.runner, schema.job
        with self._write() as c:
            res = c.execute(
                update(rn)
                .where(rn.c.id == self.runner_id)
                .values(heartbeat=to_db(now), stopping=self._stopping.is_set())
            )
            if res.rowcount == 0:  # reaped while we could not reach the database
                log.warning("runner %s was deregistered; registering again", self.runner_id)
                c.execute(
                    insert(rn).values(
                        id=self.runner_id,
                        name=self.name,
                        host=self.host,
                        pid=os.getpid(),
                        threads=self.threads,
                        started=to_db(now),
                        heartbeat=to_db(now),
                        stopping=self._stopping.is_set(),
                    )
                )
            if not self.mysql:
                c.execute(
                    update(j)
                    .where(j.c.locked_by == self.runner_id)
                    .values(locked_until=to_db(self._lease_end(now)))
                )

    def _deregister(self) -> None:
        rn, j = schema.runner, schema.job
        with self._write() as c:
            if not self.mysql:
                c.execute(
                    update(j)
                    .where(j.c.locked_by == self.runner_id, j.c.running.is_(False))
                    .values(locked_by=None, locked_until=None)
                )
            c.execute(delete(rn).where(rn.c.id == self.runner_id))

    def _reap(self, *, others: bool = True) -> None:
        """Runs of dead runners become lost; their jobs become claimable again.

        ``others=False``: only our own claims whose commit reply was lost.
        """
        now = self.now()
        cutoff = now - timedelta(seconds=self.heartbeat_timeout)
        rn, j, r = schema.runner, schema.job, schema.run
        with self.engine.connect() as conn:
            registered = conn.execute(select(rn.c.id, rn.c.heartbeat, rn.c.host, rn.c.pid)).all()
            live = {row.id: from_db(row.heartbeat) for row in registered}
            holders = {
                row[0]
                for row in conn.execute(
                    select(j.c.runner_id).where(j.c.running.is_(True)).distinct()
                )
            }
            holders |= {
                row[0]
                for row in conn.execute(
                    select(r.c.runner).where(r.c.outcome == Outcome.RUNNING.value).distinct()
                )
            }
            conn.rollback()
        dead = {rid for rid, hb in live.items() if hb is not None and hb < cutoff}
        dead |= {h for h in holders if h and h not in live}
        dead.discard(self.runner_id)
        if not self.mysql:
            dead -= self._stalled_here(registered, dead)
        for rid in sorted(dead) if others else ():
            stale = rid in live
            msg = (
                f"runner {rid} stopped heartbeating (none for over {self.heartbeat_timeout:g} s)"
                if stale
                else f"runner {rid} is not registered any more"
            )
            self._reap_runner(rid, now, msg, delete_row=stale)
        if self.runner_id in holders:
            self._reap_self(now)

    def _stalled_here(self, registered: Sequence[Any], silent: set[str]) -> set[str]:
        """SQLite: silent runners whose process on this host is alive, only stopped or hung.

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
            and row.host == self.host
            and row.pid
            and row.pid != os.getpid()
            and process_alive(int(row.pid), since=from_db(row.heartbeat))
        }
        for rid in stalled - self._stalled_seen:
            log.warning(
                "runner %s has not heartbeated for over %g s, but its process is alive on this "
                "host (stopped or hung?): its jobs stay with it until it resumes or ends",
                rid,
                self.heartbeat_timeout,
            )
        self._stalled_seen = stalled
        return stalled

    def _reap_runner(self, rid: str, now: datetime, msg: str, *, delete_row: bool) -> None:
        self._mark_lost(rid, now, msg)
        j = schema.job
        with self.engine.connect() as conn:
            ids = [
                int(x[0])
                for x in conn.execute(
                    select(j.c.id).where(j.c.running.is_(True), j.c.runner_id == rid)
                )
            ]
            conn.rollback()
        remaining = sum(0 if self._release_job(jid, rid, now, msg) else 1 for jid in ids)
        if remaining == 0 and delete_row:
            rn = schema.runner
            cutoff = now - timedelta(seconds=self.heartbeat_timeout)
            with self._write() as c:
                c.execute(delete(rn).where(rn.c.id == rid, rn.c.heartbeat < to_db(cutoff)))
            log.warning("reaped runner %s", rid)

    def _mark_lost(
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
        r, j = schema.run, schema.job
        with self._write() as c:
            held: set[int] = set()
            if unless_held:
                held = {
                    int(x[0])
                    for x in c.execute(
                        select(j.c.id).where(j.c.running.is_(True), j.c.runner_id == rid)
                    )
                }
            rows = c.execute(
                select(r.c.id, r.c.job_id, r.c.started).where(
                    r.c.runner == rid, r.c.outcome == Outcome.RUNNING.value
                )
            ).all()
            for row in rows:
                if (skip is not None and int(row.job_id) in skip) or int(row.job_id) in held:
                    continue
                started = from_db(row.started)
                c.execute(
                    update(r)
                    .where(r.c.id == row.id, r.c.outcome == Outcome.RUNNING.value)
                    .values(
                        outcome=Outcome.LOST.value,
                        finished=to_db(now),
                        duration=(now - started).total_seconds() if started else None,
                        error=f"lost: {msg}; whether it completed is unknown",
                    )
                )

    def _release_job(
        self, job_id: int, holder: str, now: datetime, msg: str, *, unless_active: bool = False
    ) -> bool:
        """Give a dead holder's job back (MySQL: only once its lock is really free)."""
        name = self._lock_name(job_id) if self.mysql else None
        with self.engine.connect() as lock_conn:
            if name is not None:
                if not self.backend.take_locks(lock_conn, [name])[0]:
                    lock_conn.rollback()
                    return False  # an orphaned statement still runs: keep the job taken
                lock_conn.commit()
            try:
                with self._txn(lock_conn) as c:
                    row = self._lock_row(c, job_id)
                    if row is None or not row.running or row.runner_id != holder:
                        return True
                    if unless_active:
                        with self._lock:
                            if job_id in self._active:
                                return True
                    j = schema.job
                    if row.remove_requested:  # removed while it ran: its run has ended now
                        c.execute(delete(j).where(j.c.id == job_id))
                        log.warning("job %s removed: %s", row.name, msg)
                        return True
                    lost_phase = (
                        "ERROR" if row.next_run is None and row.phase != "FINISHED" else row.phase
                    )
                    c.execute(
                        update(j)
                        .where(j.c.id == job_id)
                        .values(
                            running=False,
                            this_run=None,
                            runner_finish=to_db(now),
                            last_outcome=Outcome.LOST.value,
                            last_error=f"lost: {msg}",
                            last_cycle_finish=to_db(now),
                            locked_by=None,
                            locked_until=None,
                            abort_requested=False,
                            # A lost run with no next slot (a once job) may or may not
                            # have completed: show ERROR and leave the rerun to an operator.
                            phase=lost_phase,
                            status=derive_status(
                                intent=row.intent,
                                broken=bool(row.broken),
                                running=False,
                                phase=lost_phase,
                            ).value,
                            updated=to_db(now),
                        )
                    )
                log.warning("job %s released: %s", row.name, msg)
                return True
            finally:
                if name is not None:
                    self.backend.release_locks(lock_conn, [name])
                    lock_conn.commit()

    def _reap_self(self, now: datetime) -> None:
        """Claims of ours whose commit reply was lost with the connection (no thread has them)."""
        j = schema.job
        msg = f"runner {self.runner_id} lost its connection while claiming the job"
        with self._lock:
            active = set(self._active)
        with self.engine.connect() as conn:
            ids = [
                int(x[0])
                for x in conn.execute(
                    select(j.c.id).where(j.c.running.is_(True), j.c.runner_id == self.runner_id)
                )
            ]
            conn.rollback()
        orphans = [jid for jid in ids if jid not in active]
        for jid in orphans:
            self._release_job(jid, self.runner_id, now, msg, unless_active=True)
        with self._lock:
            active = set(self._active)
        # A job claimed again since `active` was read holds its row: not lost.
        self._mark_lost(self.runner_id, now, msg, skip=active, unless_held=True)


def process_alive(pid: int, *, since: datetime | None = None) -> bool:
    """Whether process ``pid`` on this host exists and is not a zombie.

    With ``since`` (a time the process is known to have been alive), a process
    that started after it is another one that got the pid (Linux: the start
    time from /proc); without /proc, existence is all that is checked.
    """
    try:
        os.kill(pid, 0)
    except PermissionError:
        pass  # it exists, as another user's
    except OSError:
        return False
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        with open("/proc/stat", "rb") as f:
            boot = next(int(line.split()[1]) for line in f if line.startswith(b"btime "))
    except (OSError, IndexError, ValueError, StopIteration):
        return True
    if fields[0] in (b"Z", b"X"):  # a zombie (or dying): the process has ended
        return False
    started = boot + int(fields[19]) / os.sysconf("SC_CLK_TCK")
    return since is None or started <= since.timestamp() + 1.0


# ---------------------------------------------------------------------- entry points


def worker_main(
    store: JobStore,
    *,
    threads: int = DEFAULT_THREADS,
    poll: float = DEFAULT_POLL,
    name: str | None = None,
    grace: float = 10.0,
    heartbeat_timeout: float = DEFAULT_HEARTBEAT_TIMEOUT,
    retention: Retention | None = None,
    lead: float = DEFAULT_LEAD,
    owner_share: float = DEFAULT_OWNER_SHARE,
) -> int:
    """Run a pool headless until SIGTERM/SIGINT (``jobtui worker``); one log line per run."""
    stop = threading.Event()

    def on_signal(signum: int, _frame: Any) -> None:
        stop.set()

    def on_run(result: RunResult) -> None:
        print(result.line(), file=sys.stderr, flush=True)

    pool = RunnerPool(
        store,
        threads=threads,
        poll=poll,
        name=name or "worker",
        heartbeat_timeout=heartbeat_timeout,
        on_run=on_run,
        retention=retention,
        lead=lead,
        owner_share=owner_share,
    )
    previous = {}
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGINT):
            previous[sig] = signal.signal(sig, on_signal)
    try:
        pool.start()
        print(
            f"jobtui worker {pool.runner_id}: {threads} thread(s) on {store.masked_url} "
            f"(heartbeat timeout {heartbeat_timeout:g} s, lead {lead:g} s)",
            file=sys.stderr,
            flush=True,
        )
        while not stop.wait(0.5):
            pass
        print(
            f"jobtui worker {pool.runner_id}: stopping (grace {grace:g} s)",
            file=sys.stderr,
            flush=True,
        )
        pool.stop(grace=grace, abort=True)
        print(f"jobtui worker {pool.runner_id}: stopped", file=sys.stderr, flush=True)
    finally:
        if pool.running:
            pool.stop(grace=0, abort=True)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0


EXIT_FINISHED = 0
EXIT_ABORTED = 3
EXIT_INTERRUPTED = 130


def run_foreground(store: JobStore, name: str, *, poll: float = DEFAULT_POLL) -> int:
    """Run one job's schedule in the foreground (the seed's job$run, ``jobtui run NAME``).

    Holds the job's lock for the whole session, runs each due slot (and
    run-now requests), and returns when the schedule has no more slots (0),
    the job is aborted or removed (3), or on Ctrl-C (130; a run in flight is
    aborted). Raises JobLocked when another runner holds the job.
    """
    job = store.get(name)
    if job.problem is not None:  # never run: no session would ever end
        raise InvalidInput(f"job {name!r} is not run until its row is fixed: {job.problem}")

    def on_run(result: RunResult) -> None:
        print(result.line(), file=sys.stderr, flush=True)

    pool = RunnerPool(store, threads=1, poll=poll, name=f"run:{name}", job_id=job.id, hold=True)
    pool.on_run = on_run
    code = EXIT_FINISHED
    pool.start()
    try:
        pool.hold_ready.wait(30)
        if pool.hold_error is not None:
            raise pool.hold_error
        while True:
            time.sleep(min(0.2, poll))
            current = store.get_by_id(job.id)
            if current is None:
                code = EXIT_ABORTED
                break
            if current.running or pool.busy():
                continue
            if current.phase == "FINISHED":
                break
            if current.phase == "ABORTED" and not current.run_now:
                code = EXIT_ABORTED
                break
    except KeyboardInterrupt:
        code = EXIT_INTERRUPTED
        pool.stop(grace=0, abort=True)
    finally:
        pool.stop(grace=10.0, abort=True)
    return code


def main(argv: list[str] | None = None) -> int:
    """``python -m jobtui.core.runner``: a worker (or ``--run NAME``) without the CLI."""
    from jobtui.core.store import open_store

    parser = argparse.ArgumentParser(prog="python -m jobtui.core.runner")
    parser.add_argument("--db", default=None, help="database URL (default: $JOBTUI_DB)")
    parser.add_argument("--threads", type=int, default=DEFAULT_THREADS)
    parser.add_argument("--poll", type=float, default=DEFAULT_POLL)
    parser.add_argument("--name", default=None)
    parser.add_argument("--grace", type=float, default=10.0)
    parser.add_argument("--heartbeat-timeout", type=float, default=DEFAULT_HEARTBEAT_TIMEOUT)
    parser.add_argument(
        "--lead", type=float, default=DEFAULT_LEAD, help="seconds before a slot to claim it"
    )
    parser.add_argument(
        "--owner-share",
        type=float,
        default=DEFAULT_OWNER_SHARE,
        help="largest share of the threads one owner's jobs hold (0 < F <= 1)",
    )
    parser.add_argument("--run", metavar="JOB", default=None, help="run one job in the foreground")
    parser.add_argument("--keep-runs", type=int, default=None, help="runs kept per job")
    parser.add_argument("--keep-days", type=float, default=None, help="days ok runs are kept")
    parser.add_argument("--keep-error-days", type=float, default=None)
    parser.add_argument("--prune-interval", type=float, default=None, help="seconds")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(name)s %(levelname)s %(message)s",
    )
    try:
        store = open_store(args.db)
    except JobtuiError as exc:
        print(f"jobtui: {exc}", file=sys.stderr)
        return exc.exit_code
    try:
        retention = Retention(
            keep_runs=args.keep_runs if args.keep_runs is not None else store.retention.keep_runs,
            keep_days=args.keep_days if args.keep_days is not None else store.retention.keep_days,
            keep_error_days=(
                args.keep_error_days
                if args.keep_error_days is not None
                else store.retention.keep_error_days
            ),
            interval=args.prune_interval or store.retention.interval,
        )
        if args.run:
            return run_foreground(store, args.run, poll=args.poll)
        return worker_main(
            store,
            threads=args.threads,
            poll=args.poll,
            name=args.name,
            grace=args.grace,
            heartbeat_timeout=args.heartbeat_timeout,
            retention=retention,
            lead=args.lead,
            owner_share=args.owner_share,
        )
    except JobtuiError as exc:
        print(f"jobtui: {exc}", file=sys.stderr)
        return exc.exit_code
    finally:
        store.close()


if __name__ == "__main__":
    sys.exit(main())
