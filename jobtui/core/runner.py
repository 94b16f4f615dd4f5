"""Runner pools: execute due jobs on time, exactly once, and obey the operator.

A ``RunnerPool`` is DBMS_JOB's job queue processes in one process:

- a scheduler thread finds due jobs with one query, sleeps until the earliest
  next run (bounded by ``poll``) and hands job ids to idle worker threads;
- each worker thread owns one connection on which it claims the job
  (``GET_LOCK`` + row update on MySQL/MariaDB, a lease inside ``BEGIN
  IMMEDIATE`` on SQLite), executes it, and records the outcome;
- a monitor thread heartbeats, renews leases, watches ``abort_requested``
  (interrupting the statement in flight) and reaps dead runners.

Registration, heartbeats and reaping are the pool's ``Reaper`` (reaping.py);
``jobtui worker`` and ``jobtui run NAME`` run a pool (worker.py).
docs/runners.md describes the protocol.
"""

from __future__ import annotations

import itertools
import logging
import os
import random
import secrets
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, bindparam, delete, func, insert, or_, select, text, update
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DBAPIError, SQLAlchemyError

from jobtui.core import batchsql, bookkeeping, claims, executor, routines, schema
from jobtui.core.db import mask_text, reset_mysql_session
from jobtui.core.dberrors import translate_db_error
from jobtui.core.errors import InvalidInput, JobLocked, JobtuiError
from jobtui.core.model import Intent, Job, Outcome, Status
from jobtui.core.reaping import Reaper
from jobtui.core.retention import Retention
from jobtui.core.rowmap import job_from_row
from jobtui.core.runresult import OnRun, RunResult
from jobtui.core.schedules import next_slot
from jobtui.core.store import JobStore
from jobtui.core.timeutil import Clock, aware, from_db, iso, to_db
from jobtui.core.transitions import PHASES, derive_status, is_due_for_schedule

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
# What a run claimed ahead re-reads at its slot.
RECHECK_COLUMNS = ("id", "intent", "broken", "abort_requested", "remove_requested")
BURST_WAIT = 0.2  # seconds: the longest a batch's recording waits for a slot's other batches
SHORT_RUN = 0.1  # seconds: a job whose last run took less may be batched
RECONNECT_CAP = 5.0
PRUNE_MAX_BATCHES = 20  # per housekeeping pass; the rest goes in the next one


@dataclass(eq=False)
class _Session:
    """One worker thread's connection (it claims, executes and records on it)."""

    engine: Engine
    mysql: bool
    conn: Connection | None = None
    cid: int | None = None
    dirty: bool = False  # a run executed on it since it was connected or last reset

    def get(self) -> Connection:
        if self.conn is not None and (self.conn.closed or self.conn.invalidated):
            self.discard()
        if self.conn is None:
            conn = self.engine.connect()
            try:
                if self.mysql:
                    self.cid = claims.connection_id(conn)
                    conn.commit()
            except Exception:
                conn.close()
                raise
            self.conn = conn
        return self.conn

    def reset(self) -> None:
        """MySQL/MariaDB: back to a new connection's session (``db.reset_mysql_session``),
        so nothing a run set (time zone, sql_mode, user variables, named locks, ...)
        reaches the next owner's claim or run. A connection that cannot be reset is
        closed: the next one is new."""
        conn = self.conn
        if conn is None:
            self.dirty = False
            return
        try:
            if conn.in_transaction():
                conn.rollback()
            reset_mysql_session(executor.dbapi_connection(conn))
            self.dirty = False
        except Exception as exc:
            log.warning("could not reset a runner session (reconnecting): %s", _describe(exc))
            self.discard()

    def discard(self) -> None:
        conn, self.conn, self.cid = self.conn, None, None
        self.dirty = False
        if conn is None:
            return
        try:
            conn.invalidate()
        except Exception as exc:  # already broken: nothing more to release
            log.debug("invalidate failed: %s", exc)
        try:
            conn.close()
        except Exception as exc:
            log.debug("close failed: %s", exc)


@dataclass(frozen=True)
class _ExprFailure:
    """Why a job's expression gave no next run at the claim. ``final``: the expression's
    own fault (error, timeout, not a date, routine refused): ERROR with no next run;
    else (the runner could not check, the connection broke) an ordinary retry."""

    reason: str
    final: bool


@dataclass(eq=False)
class _Run:
    """A run this pool has claimed and not yet recorded."""

    job: Job
    slot: datetime
    manual: bool
    skipped: int
    started: datetime
    session: _Session
    lock_name: str | None
    abort_event: threading.Event = field(default_factory=threading.Event)
    abort_reason: str | None = None  # operator | removed | shutdown
    guard: threading.Lock = field(default_factory=threading.Lock)
    executing: bool = False
    exec_start: datetime | None = None
    ahead: bool = False  # claimed before its slot (lead): it waits for the slot
    routine: routines.Verdict | None = None  # MySQL/MariaDB: the verified routine to call
    expr_error: _ExprFailure | None = None  # its expression failed at the claim: not executed


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
        self.backend = store.backend
        # The claim and record paths' switch, until they speak to the backend.
        self.mysql = self.backend.named_locks
        self.running = False
        self.hold_error: JobLocked | None = None
        self.hold_ready = threading.Event()
        self._engine: Engine | None = None
        self._schema = ""
        self._lock_key = ""  # the store's jobtui_secret key: lock names operators cannot compute
        self._lock = threading.Lock()
        self._active: dict[int, _Run | None] = {}  # job id -> run (None while claiming)
        # Batches claimed ahead of their slot that are executing now: their recording
        # waits for the others' executions (BURST_WAIT at most), so a slot's burst of
        # runs is not slowed down by the bookkeeping of the batches that ended first.
        self._burst = threading.Condition()
        self._bursting = 0
        self._cooldown: dict[int, float] = {}
        self._problems_told: dict[int, str] = {}  # job id -> the problem last logged for it
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
        self._reaper = Reaper(self)  # our row in the runner table; dead runners' jobs back

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
        self._engine = self.backend.pool_engine(url, self.threads + 3)
        try:
            self._schema, self._lock_key = self.backend.lock_scope(self.engine, self.store.lock_key)
            self._reaper.register()
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
            self._reaper.deregister()
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

    def _runs(self) -> list[_Run]:
        with self._lock:
            return [r for r in self._active.values() if r is not None]

    def _taken(self) -> set[int]:
        """Ids of the jobs this pool is claiming or executing now."""
        with self._lock:
            return set(self._active)

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
        busy = self._taken()
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
            if self.backend.leased_elsewhere(row, self.runner_id, now):
                continue
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
        reset after each batch (``_Session.reset``). An owner's short jobs are spread
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
        session = _Session(self.engine, self.mysql)
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
                    self._reaper.heartbeat()
                    if back_since is None:
                        back_since = mono
                        log.info(
                            "runner %s reaches the database again; reaping others in %g s",
                            self.runner_id,
                            self.heartbeat_timeout,
                        )
                if mono >= next_reap and not self._stopping.is_set():
                    next_reap = mono + self.heartbeat_interval
                    self._reaper.reap(
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
        if conn.in_transaction():
            conn.rollback()
        if write and not self.mysql:
            conn.execution_options(immediate=True)
            try:
                trans = conn.begin()
            finally:
                conn.execution_options(immediate=False)
        else:
            trans = conn.begin()
        with trans:
            yield conn

    @contextmanager
    def _write(self) -> Iterator[Connection]:
        with self.engine.connect() as conn, self._txn(conn) as c:
            yield c

    def _lock_row(self, conn: Connection, job_id: int) -> Any:
        j = schema.job
        return conn.execute(select(j).where(j.c.id == job_id).with_for_update()).first()

    # ------------------------------------------------------------------ claiming

    def _lock_name(self, job_id: int) -> str:
        key = self._lock_key or self.store.lock_key()  # read at start(); once per store
        return claims.lock_name(key, self._schema, job_id)

    def _take_hold(self, session: _Session, job_id: int) -> None:
        """Foreground mode: hold the job's lock (or lease) from now until stop."""
        try:
            conn = session.get()
            if self.mysql:
                name = self._lock_name(job_id)
                if not claims.get_lock(conn, name):
                    holder = claims.lock_holder(conn, name)
                    self.hold_error = JobLocked(self._job_label(job_id), f"connection {holder}")
                conn.commit()
                return
            now = self.now()
            j = schema.job
            with self._txn(conn) as c:
                row = self._lock_row(c, job_id)
                if row is None:
                    return
                leased = (
                    row.locked_by
                    and row.locked_by != self.runner_id
                    and (from_db(row.locked_until) or now) > now
                )
                if row.running or leased:
                    holder = row.locked_by or row.runner_id
                    self.hold_error = JobLocked(row.name, f"runner {holder}")
                    return
                c.execute(
                    update(j)
                    .where(j.c.id == job_id)
                    .values(locked_by=self.runner_id, locked_until=to_db(self._lease_end(now)))
                )
        finally:
            self.hold_ready.set()

    def _job_label(self, job_id: int) -> str:
        job = self.store.get_by_id(job_id)
        return job.name if job else str(job_id)

    def _lease_end(self, now: datetime) -> datetime:
        return now + timedelta(seconds=self.heartbeat_timeout)

    def _process(self, session: _Session, job_ids: list[int]) -> None:
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

    def _run_batch(self, runs: list[_Run]) -> None:
        """Execute claimed runs one after the other (each at its slot), then record them."""
        done: list[tuple[_Run, Outcome, str | None, datetime]] = []
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
                        self._withdraw([r for r in runs if r.ahead])
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

    def _verify(self, runs: list[_Run]) -> None:
        """MySQL/MariaDB: the routines of a batch's call/sql jobs, verified in one query on
        the batch's own connection before any of them runs (``routines.verify``)."""
        jobs = [run.job for run in runs if run.job.what.kind in ("call", "sql")]
        if not self.mysql or not jobs:
            return
        session = runs[0].session
        try:
            # No transaction of its own (no COMMIT to pay): the first run's transaction
            # starts with this read of mysql.proc, a non-transactional table.
            verdicts = routines.verify(session.get(), self._schema, jobs)
        except Exception as exc:  # each run then fails with the reason, nothing executes
            if claims.is_disconnect(exc):
                session.discard()
            problem = f"the runner could not verify the job's routine: {_describe(exc)}"
            verdicts = {job.id: routines.Verdict(None, problem) for job in jobs}
        for run in runs:
            run.routine = verdicts.get(run.job.id)

    def _wait_for_slot(self, run: _Run) -> None:
        """A run claimed ahead of its slot (``lead``) starts at the slot, or when aborted."""
        early = (run.slot - self.now()).total_seconds()
        if early > 0:
            # Bounded by the lead: an injected clock that stands still does not stall us.
            run.abort_event.wait(min(early, self._lead.total_seconds()))

    def _withdraw(self, runs: list[_Run]) -> None:
        """At the slot, drop runs claimed ahead whose job was paused, disabled, broken,
        aborted or removed meanwhile: they are recorded as aborted, never started.

        A pause that returned before the slot stops it, as it would have without the
        lead; one statement per batch (on MySQL/MariaDB on the batch's own connection).
        """
        j = schema.job
        ids = [run.job.id for run in runs]
        rows: dict[int, Any]
        try:
            if self.mysql:
                # On the batch's own (idle) connection, in a transaction of its own:
                # no pool checkout at the slot, when every thread re-checks at once.
                session = runs[0].session
                with self._raw_txn(session.get(), "re-check") as cur:
                    found = batchsql.read_rows(cur, RECHECK_COLUMNS, ids, lock=False)
                rows = {int(row.id): row for row in found}
            else:
                query = select(*(j.c[name] for name in RECHECK_COLUMNS)).where(j.c.id.in_(ids))
                with self.engine.connect() as conn:
                    rows = {int(row.id): row for row in conn.execute(query)}
                    conn.rollback()
        except Exception as exc:  # the runs go ahead as claimed; the monitor still aborts
            log.warning("could not re-check jobs claimed ahead: %s", _describe(exc))
            if claims.is_disconnect(exc):
                runs[0].session.discard()
            return
        for run in runs:
            row = rows.get(run.job.id)
            if row is None or row.remove_requested:
                reason = "removed"
            elif row.abort_requested:
                reason = "operator"
            elif row.intent != "ENABLED" or row.broken:
                reason = "withdrawn"
            else:
                continue
            run.abort_reason = run.abort_reason or reason
            run.abort_event.set()

    def _claim(self, session: _Session, job_ids: list[int]) -> list[_Run]:
        conn = session.get()
        locked: list[str] = []
        problems: dict[int, str] = {}
        try:
            runs = self._claim_txn(session, conn, job_ids, locked, problems)
        except Exception as exc:
            self._release_names(session, locked)
            if not claims.is_duplicate(exc):
                raise
            if len(job_ids) > 1:  # one of them hit the slot guard: claim them one by one
                return [run for jid in job_ids for run in self._claim(session, [jid])]
            self._skip_taken_slot(conn, job_ids[0])
            return []
        claimed = {run.job.id for run in runs}
        for jid in job_ids:
            if jid not in claimed:
                self._cooldown[jid] = time.monotonic() + min(self.poll, 0.5)
        if problems:
            self._mark_problems(problems)
        return runs

    def _mark_problems(self, problems: dict[int, str]) -> None:
        """Mark BROKEN, with the problem as the reason, the jobs whose rows the claim found
        invalid (jobtui.core.rows): in one short transaction of their own after the
        claim's (the batch's claims stand whatever happens here), each row re-read under
        its lock and marked only while it still has a problem. Logged once per job and
        problem, not at every pass."""
        now = self.now()
        j = schema.job
        marked: list[tuple[int, str, str]] = []
        try:
            with self._write() as c:
                query = select(j).where(j.c.id.in_(sorted(problems))).order_by(j.c.id)
                for row in c.execute(query.with_for_update()).all():
                    job = job_from_row(row)
                    if job.problem is None or job.running:
                        continue  # fixed meanwhile, or claimed by another pool since
                    reason = job.problem[: bookkeeping.MAX_ERROR_LENGTH]
                    marked.append((job.id, job.name, reason))
                    if row.broken and row.broken_reason == reason and not row.run_now:
                        continue  # marked before (a pool with a stale view of the row)
                    valid = row.intent in Intent.__members__ and row.phase in PHASES
                    status = (
                        derive_status(
                            intent=row.intent, broken=True, running=False, phase=row.phase
                        )
                        if valid
                        else Status.BROKEN
                    )
                    values = {
                        "broken": True,
                        "broken_reason": reason,
                        "run_now": False,  # run-now runs even a broken job: not this one
                        "status": status.value,
                        "updated": to_db(now),
                    }
                    update_job(c, job.id, values, only_idle=True)
        except Exception as exc:
            text_ = _describe(exc)
            if self._problems_told.get(0) != text_:  # ids start at 1: 0 is this warning
                self._problems_told[0] = text_
                log.warning("could not mark jobs %s broken: %s", sorted(problems), text_)
            return
        if len(self._problems_told) > 10_000:
            self._problems_told.clear()
        for jid, name, reason in marked:
            if self._problems_told.get(jid) != reason:
                self._problems_told[jid] = reason
                log.warning("job %s (id %s) is not run, marked BROKEN: %s", name, jid, reason)

    def _release_names(self, session: _Session, names: list[str]) -> None:
        conn = session.conn
        if not names or self.hold or conn is None:
            return
        try:
            if conn.in_transaction():
                conn.rollback()
            claims.release_locks(conn, names)
            conn.commit()
        except Exception as exc:
            log.warning("could not release locks %s: %s", names, _describe(exc))
            session.discard()  # closing the connection frees its locks

    def _claim_txn(
        self,
        session: _Session,
        conn: Connection,
        job_ids: list[int],
        locked: list[str],
        problems: dict[int, str],
    ) -> list[_Run]:
        """Claim the jobs that are still eligible, in one transaction.

        A row with a problem (jobtui.core.rows) is not claimed: it goes into
        ``problems`` (job id -> problem), for ``_mark_problems``.
        """
        if self.mysql and not self.hold:
            return self._claim_batch(session, conn, job_ids, locked, problems)
        now = self.now()
        j, r = schema.job, schema.run
        runs: list[_Run] = []
        names: dict[int, str] = {}
        with self._txn(conn) as c:
            ids = list(job_ids)
            if self.mysql:
                # Named locks are not transactional: they outlive a rollback (we release them).
                wanted = {jid: self._lock_name(jid) for jid in job_ids}
                got = claims.get_locks(c, list(wanted.values()))
                names = {jid: n for jid, n in wanted.items() if got.get(n)}
                locked.extend(names.values())
                ids = list(names)
            rows = (
                c.execute(select(j).where(j.c.id.in_(ids)).order_by(j.c.id).with_for_update()).all()
                if ids
                else []
            )
            run_rows: list[dict[str, Any]] = []
            for row in rows:
                job = job_from_row(row)
                if job.problem is not None:
                    if not job.running:
                        problems[job.id] = job.problem
                    continue
                plan = self._claim_row(c, session, row, now, job)
                if plan is None:
                    continue
                claimed, values, rows_ = plan
                if update_job(c, claimed.job.id, values, only_idle=True).rowcount != 1:
                    continue
                claimed.lock_name = names.get(claimed.job.id)
                runs.append(claimed)
                run_rows.extend(rows_)
            if run_rows:
                c.execute(insert(r), run_rows)
            unused = [n for jid, n in names.items() if jid not in {x.job.id for x in runs}]
            if unused and not self.hold:
                claims.release_locks(c, unused)
                for n in unused:
                    locked.remove(n)
        return runs

    @contextmanager
    def _raw_txn(self, conn: Connection, what: str) -> Iterator[Any]:
        """A DB-API cursor on ``conn`` for one transaction of raw statements (batchsql):
        committed when the block ends, rolled back when it raises."""
        if conn.in_transaction():
            conn.rollback()
        cur = executor.dbapi_connection(conn).cursor()
        try:
            yield cur
            executor.commit(conn)
        except BaseException:
            try:
                executor.rollback(conn)
            except Exception as exc:
                log.debug("rollback after a failed %s: %s", what, _describe(exc))
            raise
        finally:
            cur.close()

    def _claim_batch(
        self,
        session: _Session,
        conn: Connection,
        job_ids: list[int],
        locked: list[str],
        problems: dict[int, str],
    ) -> list[_Run]:
        """MySQL/MariaDB: claim a batch in five statements (batchsql), in one transaction.

        The same protocol as one job at a time: the named lock of each job on this
        (the executing) connection, each row re-checked under FOR UPDATE, the
        run-log rows (UNIQUE slot) written in the claim's transaction.
        """
        now = self.now()
        with self._raw_txn(conn, "claim") as cur:
            wanted = [(jid, self._lock_name(jid)) for jid in job_ids]
            got = batchsql.get_locks(cur, [n for _, n in wanted])
            names = {jid: n for (jid, n), ok in zip(wanted, got, strict=True) if ok}
            locked.extend(names.values())
            rows = batchsql.lock_rows(cur, batchsql.CLAIM_COLUMNS, list(names))
            jobs = batchsql.jobs(batchsql.CLAIM_COLUMNS, rows)
            runs: list[_Run] = []
            values: dict[int, dict[str, Any]] = {}
            run_rows: list[dict[str, Any]] = []
            for row, job in zip(rows, jobs, strict=True):
                if job.problem is not None:  # never claimed: marked BROKEN after the claim
                    if not job.running:
                        problems[job.id] = job.problem
                    continue
                plan = self._claim_row(conn, session, row, now, job)
                if plan is None:
                    continue
                claimed, vals, rows_ = plan
                claimed.lock_name = names[claimed.job.id]
                runs.append(claimed)
                values[claimed.job.id] = vals
                run_rows.extend(rows_)
            if runs:
                # Every row is locked and was seen idle: all of them must match.
                matched = batchsql.update_jobs(cur, values, only_idle=True)
                if matched != len(runs):
                    raise RuntimeError(f"claim matched {matched} of {len(runs)} locked rows")
                batchsql.insert_runs(cur, run_rows)
            claimed_ids = {run.job.id for run in runs}
            unused = [n for jid, n in names.items() if jid not in claimed_ids]
            batchsql.release_locks(cur, unused)
        for n in unused:
            locked.remove(n)
        return runs

    def _claim_row(
        self,
        c: Connection,
        session: _Session,
        row: Any,
        now: datetime,
        job: Job | None = None,
    ) -> tuple[_Run, dict[str, Any], list[dict[str, Any]]] | None:
        """Plan the claim of one locked job row if it is eligible.

        Returns the run, the job row's new values and its run-log rows, or None.
        A slot due within ``lead`` seconds is claimed as if it were due now
        (the run then waits for its slot before it executes). ``job``: the row
        as a Job, when the caller built the batch's at once. Never a job whose row has
        a problem (jobtui.core.rows): the callers mark those BROKEN instead.
        """
        if job is None:
            job = job_from_row(row)
        if job.problem is not None or job.running:
            return None
        if (
            not self.mysql
            and row.locked_by
            and row.locked_by != self.runner_id
            and (bookkeeping.row_time(row.locked_until) or now) > now
        ):
            return None
        next_run = job.next_run
        at = now
        if next_run is not None and now < next_run <= now + self._lead:
            at = next_run
        due = is_due_for_schedule(
            intent=row.intent,
            broken=bool(row.broken),
            running=False,
            phase=row.phase,
            next_run=next_run,
            now=at,
        )
        if not due and not row.run_now:
            return None
        sched = job.schedule
        anchor = bookkeeping.anchor(job)
        skipped = 0
        first = next_run
        expr_error = None
        if due:
            assert first is not None
            slot, skipped = bookkeeping.coalesce(sched, first, at, anchor)
            if sched.kind in ("every", "cron"):
                nxt = next_slot(sched, max(at, slot), anchor)
            elif sched.kind == "once":
                nxt = None
            else:
                nxt, expr_error = self._eval_expr(c, job, at)
        else:
            slot, nxt = now, next_run  # run-now leaves the schedule alone
        start = at if due else now  # a slot claimed ahead starts at the slot
        start_db = to_db(start)
        values: dict[str, Any] = {
            "running": True,
            "status": Status.RUNNING.value,
            "this_run": start_db,
            "next_run": to_db(nxt),
            "runner_id": self.runner_id,
            "runner_connection_id": session.cid,
            "runner_start": start_db,
            "runner_finish": None,
            "last_cycle_start": start_db,
            "run_now": False,
            "abort_requested": False,
            "updated": to_db(now),
        }
        if not self.mysql:
            values["locked_by"] = self.runner_id
            values["locked_until"] = to_db(self._lease_end(now))
        common = {
            "job_id": job.id,
            "job_name": job.name,
            "owner": job.owner,
            "runner": self.runner_id,
        }
        run_rows: list[dict[str, Any]] = []
        if skipped:
            assert first is not None
            run_rows.append(
                {
                    **common,
                    "scheduled_for": to_db(first),
                    "started": None,
                    "outcome": Outcome.SKIPPED.value,
                    "error": (
                        f"{skipped} slot(s) from {iso(first)} missed (no runner up, or the "
                        f"job still busy): coalesced into the run of {iso(slot)}"
                    ),
                    "skipped": skipped,
                    "manual": False,
                }
            )
        run_rows.append(
            {
                **common,
                "scheduled_for": to_db(slot),
                "started": start_db,
                "outcome": Outcome.RUNNING.value,
                "error": None,
                "skipped": 0,
                "manual": not due,
            }
        )
        job.running = True
        run = _Run(
            job=job,
            slot=slot,
            manual=not due,
            skipped=skipped,
            started=start,
            session=session,
            lock_name=None,
            ahead=due and at > now,
            expr_error=expr_error,
        )
        return run, values, run_rows

    def _eval_expr(
        self, conn: Connection, job: Job, now: datetime
    ) -> tuple[datetime | None, _ExprFailure | None]:
        """The next run from the job's expression: (next, None), or (None, why not).

        MySQL/MariaDB: the owner's own FUNCTION, verified first, run with the owner's
        rights and at most ``routines.EXPR_TIMEOUT`` seconds (never the runner's
        rights, never a thread held). A failure fails the run; when the expression
        itself is at fault the job goes to ERROR with no next run, until its owner
        changes it.
        """
        sched = job.schedule
        assert sched.expr is not None
        try:
            nxt = self.store.evaluate_expr(sched.expr, now, conn=conn, job=job)
        except Exception as exc:
            log.warning("job %s: expr failed at run start: %s", job.name, _describe(exc))
            final = isinstance(exc, InvalidInput)
            what = "so the job has no next run" if final else "it is tried again later"
            return None, _ExprFailure(
                f"the schedule's expression failed, {what}: {_describe(exc)}", final
            )
        if nxt is not None and sched.finish is not None and nxt > sched.finish:
            return None, None
        return nxt, None

    def _skip_taken_slot(self, conn: Connection, job_id: int) -> None:
        """The run log already has this slot (UNIQUE guard): move on to the next slot."""
        now = self.now()
        j = schema.job
        with self._txn(conn) as c:
            row = self._lock_row(c, job_id)
            if row is None or row.running:
                return
            job = job_from_row(row)
            if job.problem is not None:
                return  # the next claim marks it BROKEN
            if job.schedule.kind in ("every", "cron") and job.next_run is not None:
                nxt = next_slot(job.schedule, max(now, job.next_run), bookkeeping.anchor(job))
                phase = row.phase if nxt is not None else "FINISHED"
            else:
                nxt, phase = None, "FINISHED"
            log.warning("job %s: slot %s already in the run log; skipping it", job.name, now)
            c.execute(
                update(j)
                .where(j.c.id == job_id)
                .values(
                    next_run=to_db(nxt),
                    run_now=False,
                    phase=phase,
                    status=derive_status(
                        intent=row.intent, broken=bool(row.broken), running=False, phase=phase
                    ).value,
                    updated=to_db(now),
                )
            )

    # ------------------------------------------------------------------ executing

    def _execute(self, run: _Run) -> tuple[Outcome, str | None]:
        session = run.session
        if run.expr_error is not None:
            return Outcome.FAILED, run.expr_error.reason  # nothing ran (docs/runners.md)
        try:
            conn = session.get()
            with run.guard:
                if run.abort_event.is_set():
                    raise executor.RunAborted("aborted before it started")
                run.executing = True
            run.exec_start = self.now()
            session.dirty = self.mysql
            try:
                executor.execute(
                    conn, run.job, run.abort_event, routine=run.routine, schema_name=self._schema
                )
            finally:
                with run.guard:
                    run.executing = False
            if run.abort_event.is_set():
                raise executor.RunAborted("aborted")
            executor.commit(conn)
            return Outcome.OK, None
        except Exception as exc:
            if claims.is_disconnect(exc):
                session.discard()
            elif session.conn is not None:
                try:
                    executor.rollback(session.conn)
                except Exception as exc2:
                    log.warning("rollback failed: %s", _describe(exc2))
                    session.discard()
            if run.abort_event.is_set() or isinstance(exc, executor.RunAborted):
                return Outcome.ABORTED, self._abort_text(run)
            return Outcome.FAILED, _describe(exc)

    def _abort_text(self, run: _Run) -> str:
        if run.abort_reason == "shutdown":
            return f"aborted: runner {self.runner_id} stopped and its grace period ran out"
        if run.abort_reason == "removed":
            return "aborted: the job was removed while it ran"
        if run.abort_reason == "withdrawn":
            return (
                "not started: the job was paused, disabled or marked broken between "
                "the claim of this slot and the slot"
            )
        return "aborted by operator"

    def _abort(self, run: _Run) -> None:
        """Stop a run in flight: the action's event, and the statement on its connection."""
        run.abort_event.set()
        with run.guard:
            if not run.executing:
                return
            conn = run.session.conn
            try:
                if self.mysql:
                    cid = run.session.cid
                    if cid is not None:
                        with self.engine.connect() as other:
                            other.execute(text(f"KILL QUERY {int(cid)}"))  # an int we read
                elif conn is not None:
                    executor.dbapi_connection(conn).interrupt()
            except Exception as exc:
                log.warning("could not interrupt job %s: %s", run.job.name, _describe(exc))

    def _check_aborts(self) -> None:
        runs = self._runs()
        if not runs:
            return
        j = schema.job
        ids = [run.job.id for run in runs]
        with self.engine.connect() as conn:
            rows = {
                int(r.id): r
                for r in conn.execute(
                    select(j.c.id, j.c.abort_requested, j.c.remove_requested, j.c.runner_id).where(
                        j.c.id.in_(ids)
                    )
                )
            }
            conn.rollback()
        for run in runs:
            if run.abort_event.is_set():
                continue
            row = rows.get(run.job.id)
            if row is None or (row.remove_requested and row.runner_id == self.runner_id):
                run.abort_reason = "removed"
            elif row.abort_requested and row.runner_id == self.runner_id:
                run.abort_reason = "operator"
            else:
                continue
            log.info("aborting job %s (%s)", run.job.name, run.abort_reason)
            self._abort(run)

    # ------------------------------------------------------------------ recording

    def _finish(self, done: list[tuple[_Run, Outcome, str | None, datetime]]) -> None:
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
                self._finish_txn(conn, items)
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

    def _finish_txn(
        self,
        conn: Connection,
        items: list[tuple[_Run, Outcome, str | None, datetime]],
    ) -> None:
        j = schema.job
        release = [] if self.hold else [run.lock_name for run, *_ in items if run.lock_name]
        if self.mysql and not self.hold:
            self._record_batch(conn, items, release)
            return
        with self._txn(conn) as c:
            try:
                for run, outcome, error, finished in items:
                    self._record_run(c, run, outcome, error, finished)
                ids = [run.job.id for run, *_ in items]
                rows = {
                    int(row.id): row
                    for row in c.execute(select(j).where(j.c.id.in_(ids)).with_for_update())
                }
                for run, outcome, error, finished in items:
                    self._record_job(c, rows.get(run.job.id), run, outcome, error, finished)
            finally:
                # Inside the transaction: the job rows stay locked until the commit, so a
                # runner that takes a named lock now still waits for the row.
                if release:
                    claims.release_locks(c, release)

    def _record_batch(
        self,
        conn: Connection,
        items: list[tuple[_Run, Outcome, str | None, datetime]],
        release: list[str],
    ) -> None:
        """MySQL/MariaDB: record a batch's outcomes in five statements (batchsql)."""
        with self._raw_txn(conn, "recording") as cur:
            outcomes = []
            for run, outcome, error, finished in items:
                values = _run_outcome(run, outcome, error, finished)
                outcomes.append((run.job.id, to_db(run.slot), values))
            batchsql.record_runs(cur, self.runner_id, outcomes)
            locked = batchsql.lock_rows(
                cur, batchsql.RECORD_COLUMNS, [run.job.id for run, *_ in items]
            )
            rows = {
                int(row.id): (row, job)
                for row, job in zip(
                    locked, batchsql.jobs(batchsql.RECORD_COLUMNS, locked), strict=True
                )
            }
            updates: dict[int, dict[str, Any]] = {}
            removed: list[int] = []
            for run, outcome, error, finished in items:
                row, job = rows.get(run.job.id, (None, None))
                new = self._finished_job(row, job, run, outcome, error, finished)
                if new is not None and row is not None and row.remove_requested:
                    removed.append(run.job.id)  # removed while it ran: now its name is free
                elif new is not None:
                    new.update(locked_by=None, locked_until=None)
                    updates[run.job.id] = new
            batchsql.update_jobs(cur, updates)
            batchsql.delete_jobs(cur, removed)
            # Inside the transaction: the job rows stay locked until the commit, so a
            # runner that takes a named lock now still waits for the row.
            batchsql.release_locks(cur, release)

    def _record_run(
        self, c: Connection, run: _Run, outcome: Outcome, error: str | None, finished: datetime
    ) -> None:
        values = _run_outcome(run, outcome, error, finished)
        c.execute(
            _run_update_stmt(),
            {
                "w_job_id": run.job.id,
                "w_slot": to_db(run.slot),
                "w_runner": self.runner_id,
                **{f"v_{k}": v for k, v in values.items()},
            },
        )

    def _record_job(
        self,
        c: Connection,
        row: Any,
        run: _Run,
        outcome: Outcome,
        error: str | None,
        finished: datetime,
    ) -> None:
        job = job_from_row(row) if row is not None else None
        values = self._finished_job(row, job, run, outcome, error, finished)
        if values is None:
            return
        if row.remove_requested:  # removed while it ran: now its name is free
            c.execute(delete(schema.job).where(schema.job.c.id == run.job.id))
            return
        if not self.hold:
            values.update(locked_by=None, locked_until=None)
        update_job(c, run.job.id, values)

    def _finished_job(
        self,
        row: Any,
        job: Job | None,
        run: _Run,
        outcome: Outcome,
        error: str | None,
        finished: datetime,
    ) -> dict[str, Any] | None:
        """The job row's new values once ``run`` ended (``finish_values``), or None when
        the locked row is not ours any more."""
        if row is None or job is None or not row.running or row.runner_id != self.runner_id:
            return None  # removed, or reaped while we were away: the row is not ours now
        values = bookkeeping.finish_values(
            job,
            row.phase,
            outcome=outcome,
            error=error,
            started=run.exec_start or run.started,
            finished=finished,
            manual=run.manual,
            shutdown=run.abort_reason in ("shutdown", "withdrawn"),
        )
        if run.expr_error is not None and run.expr_error.final:
            values["next_run"] = None  # ERROR with no next run: its owner changes the expr
        return values


# ---------------------------------------------------------------------- bookkeeping

# Hot-path statements are built once and executed with parameters: building an
# UPDATE with literal values costs more Python time than the round trip.
_statements: dict[Any, Any] = {}


def update_job(
    c: Connection, job_id: int, values: dict[str, Any], *, only_idle: bool = False
) -> Any:
    """``UPDATE jobtui_job SET <values> WHERE id = job_id [AND running = 0]``."""
    keys = tuple(sorted(values))
    key = ("job", keys, only_idle)
    stmt = _statements.get(key)
    if stmt is None:
        j = schema.job
        where = [j.c.id == bindparam("w_id", type_=j.c.id.type)]
        if only_idle:
            where.append(j.c.running.is_(False))
        stmt = (
            update(j)
            .where(*where)
            .values({k: bindparam(f"v_{k}", type_=j.c[k].type) for k in keys})
        )
        _statements[key] = stmt
    params = {f"v_{k}": v for k, v in values.items()}
    params["w_id"] = job_id
    return c.execute(stmt, params)


def _run_outcome(
    run: _Run, outcome: Outcome, error: str | None, finished: datetime
) -> dict[str, Any]:
    """A run-log row's columns once the run ended (``started`` None: it never executed)."""
    started = run.exec_start
    return {
        "outcome": outcome.value,
        "started": to_db(started),
        "finished": to_db(finished),
        "duration": None if started is None else max(0.0, (finished - started).total_seconds()),
        "error": error,
    }


def _run_update_stmt() -> Any:
    """``UPDATE jobtui_run SET outcome, started, finished, duration, error`` of one run."""
    stmt = _statements.get("run")
    if stmt is None:
        r = schema.run
        stmt = (
            update(r)
            # A reaper may have called it lost while we were cut off: we know better.
            .where(
                r.c.job_id == bindparam("w_job_id", type_=r.c.job_id.type),
                r.c.scheduled_for == bindparam("w_slot", type_=r.c.scheduled_for.type),
                r.c.runner == bindparam("w_runner", type_=r.c.runner.type),
                r.c.outcome.in_([Outcome.RUNNING.value, Outcome.LOST.value]),
            )
            .values(
                outcome=bindparam("v_outcome", type_=r.c.outcome.type),
                started=bindparam("v_started", type_=r.c.started.type),
                finished=bindparam("v_finished", type_=r.c.finished.type),
                duration=bindparam("v_duration", type_=r.c.duration.type),
                error=bindparam("v_error", type_=r.c.error.type),
            )
        )
        _statements["run"] = stmt
    return stmt


def _describe(exc: BaseException) -> str:
    """One readable line for an error (driver errors without SQLAlchemy's noise)."""
    orig: Any = getattr(exc, "orig", None) if isinstance(exc, DBAPIError) else None
    if orig is None and type(exc).__module__.startswith(("pymysql", "sqlite3")):
        orig = exc  # raw driver errors from the executor's own cursor
    if orig is not None:
        args: tuple[Any, ...] = tuple(getattr(orig, "args", ()))
        if len(args) >= 2 and isinstance(args[0], int):
            return mask_text(f"({args[0]}) {args[1]}")
        return mask_text(f"{type(orig).__name__}: {orig}")
    text_ = str(exc) or type(exc).__name__
    if not isinstance(exc, executor.RunAborted) and type(exc).__name__ not in text_:
        text_ = f"{type(exc).__name__}: {text_}"
    return mask_text(text_)
