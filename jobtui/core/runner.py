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
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, case, func, or_, select
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import SQLAlchemyError

from jobtui.core import bookkeeping, claims, dberrors, schema
from jobtui.core.claiming import BUSY_WHY, Claimer, Run
from jobtui.core.db import mask_text
from jobtui.core.dberrors import describe as _describe
from jobtui.core.dberrors import translate_db_error
from jobtui.core.errors import JobLocked, JobtuiError
from jobtui.core.model import Job, Outcome
from jobtui.core.reaping import Reaper
from jobtui.core.recording import Ended, Recorder
from jobtui.core.retention import Retention
from jobtui.core.running import abort_run, execute_run, find_aborts
from jobtui.core.runresult import OnRun, PoolObserver, RunResult
from jobtui.core.session import Session, transaction, write_transaction
from jobtui.core.sharing import DEFAULT_GRACE, Share
from jobtui.core.store import JobStore
from jobtui.core.timeutil import Clock, aware, from_db, to_db

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
FRESH_GUESS = SHORT_RUN  # seconds a job never run yet counts for in a batch's budget
# seconds past its slot: while the first of its kind runs (a probe), the other new jobs of
# that kind (one owner's jobs with the same kind and target, never run yet) wait at most
# this long to learn whether they may be batched; then they are taken one at a time
PROBE_WAIT = 0.5
RECONNECT_CAP = 5.0
PRUNE_MAX_BATCHES = 20  # per housekeeping pass; the rest goes in the next one


_Item = tuple[str, list[int]] | None  # ("run" | "hold", job ids); None: a thread's stop


class _OwnerQueue:
    """The worker threads' queue: first in, first out, except that the items of an owner
    whose runs already hold their share of the threads wait (without a thread) and the
    others pass.

    Each "run" item is one owner's (batches never mix owners). An owner's long items (a
    job run alone: long, or of unknown duration) hold at most ``cap`` threads at once, so
    a few endless jobs of one owner leave the pool's other threads to the others
    (docs/runners.md, "Between owners"). Its batches of short jobs, which end within
    their budget, may also take the threads its long ones leave, all but one
    (``short_cap`` in all): one owner's burst of short jobs is not slowed down by a share
    meant for endless ones, and another owner's job still finds a thread.
    """

    def __init__(self, cap: int, short_cap: int | None = None) -> None:
        self.cap = cap
        self.short_cap = max(cap, short_cap if short_cap is not None else cap)
        self._items: deque[tuple[str | None, bool, _Item]] = deque()
        self._long: dict[str, int] = {}  # owner -> long items taken by threads, not done
        self._all: dict[str, int] = {}  # owner -> items taken by threads, not done
        self._cond = threading.Condition()

    def put(self, item: _Item, owner: str | None = None, *, short: bool = False) -> None:
        with self._cond:
            self._items.append((owner, short, item))
            self._cond.notify()

    def _may(self, owner: str | None, short: bool) -> bool:
        if owner is None:
            return True
        if self._all.get(owner, 0) >= self.short_cap:
            return False
        return short or self._long.get(owner, 0) < self.cap

    def get(self) -> tuple[_Item, str | None, bool]:
        """The first item a thread may take now (blocking): (item, owner, short);
        ``done(owner, short)`` when finished."""
        with self._cond:
            while True:
                for i, (owner, short, item) in enumerate(self._items):
                    if self._may(owner, short):
                        del self._items[i]
                        if owner is not None:
                            self._all[owner] = self._all.get(owner, 0) + 1
                            if not short:
                                self._long[owner] = self._long.get(owner, 0) + 1
                        return item, owner, short
                self._cond.wait()

    def done(self, owner: str | None, short: bool = False) -> None:
        if owner is None:
            return
        with self._cond:
            for counts in (self._all,) if short else (self._all, self._long):
                left = counts.get(owner, 0) - 1
                if left > 0:
                    counts[owner] = left
                else:
                    counts.pop(owner, None)
            self._cond.notify_all()

    def runnable(self) -> int:
        """How many queued items a thread could take now."""
        with self._cond:
            return sum(1 for owner, short, _ in self._items if self._may(owner, short))


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
        observer: PoolObserver | None = None,
        job_id: int | None = None,
        hold: bool = False,
        retention: Retention | None = None,
        lead: float = DEFAULT_LEAD,
        owner_share: float = DEFAULT_OWNER_SHARE,
        takeover_grace: float = DEFAULT_GRACE,
    ) -> None:
        if threads < 1:
            raise ValueError("threads must be at least 1")
        if not 0 < owner_share <= 1:
            raise ValueError("owner_share must be a fraction above 0 and at most 1")
        if poll <= 0:
            raise ValueError("poll must be a positive number of seconds")
        if not 0 <= lead <= 5:
            raise ValueError("lead must be between 0 and 5 seconds")
        if not 0 <= takeover_grace <= 3600:
            raise ValueError("takeover_grace must be between 0 and 3600 seconds")
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
        self.last_beat = float("-inf")  # time.monotonic() of the last heartbeat written
        self.clock: Clock = clock or store.clock
        self.on_run = on_run
        self.observer = observer  # told of claims, recordings and runs (metrics)
        self.only_job = job_id
        self.hold = hold
        self.host = socket.gethostname()[:255]
        self.runner_id = f"{self.host}:{os.getpid()}:{self.name}:{secrets.token_hex(3)}"[:190]
        self.backend = store.backend
        # Our share of the jobs among the live pools (sharing.py); the Reaper reads the
        # membership with each heartbeat. A foreground pool (one job, held) shares nothing.
        self.share = Share(
            self.runner_id,
            grace=0.0 if hold or job_id is not None else float(takeover_grace),
            cap=self.heartbeat_timeout,
        )
        self.running = False
        self.hold_error: JobLocked | None = None
        self.hold_ready = threading.Event()
        self._engine: Engine | None = None
        self._schema = ""
        self._lock_key = ""  # the store's jobtui_secret key: lock names operators cannot compute
        self._lock_names: dict[int, str] = {}  # job id -> its lock name (made with the key)
        self._lock = threading.Lock()
        self._active: dict[int, Run | None] = {}  # job id -> run (None while claiming)
        # Batches claimed ahead of their slot that are executing now: their recording
        # waits for the others' executions (BURST_WAIT at most), so a slot's burst of
        # runs is not slowed down by the bookkeeping of the batches that ended first.
        self._burst = threading.Condition()
        self._bursting = 0
        self._cooldown: dict[int, float] = {}
        self._long_taken: set[int] = set()  # taken jobs that are not batched (guarded by _lock)
        # Jobs never run yet, batched on the duration of their kind (_like): guarded by _lock
        self._guessed: set[int] = set()
        # (owner, what kind, target) -> the last duration of such a run here, in seconds;
        # and the kinds whose first new job runs now (probe), since when (monotonic).
        self._like: dict[tuple[str, str, str], float] = {}
        self._probes: dict[tuple[str, str, str], float] = {}
        self._owner_of: dict[int, str] = {}  # taken job id -> its owner (guarded by _lock)
        # taken job id -> the worker thread that has it (None: queued, no thread yet); a
        # thread releases only its own (``_release``). Guarded by _lock.
        self._taker: dict[int, int | None] = {}
        self._queue = _OwnerQueue(self.owner_cap, self.threads - 1)
        self._wake = threading.Event()
        # When the scheduler's next pass is planned (monotonic), and whether its last pass
        # left due jobs behind: a worker that ends a batch wakes it only when it must.
        self._next_pass = 0.0
        self._backlog = True
        self._stopping = threading.Event()
        self._stopped = threading.Event()
        self._give_up = threading.Event()
        self._threads: list[threading.Thread] = []
        self._working = 0  # worker threads with a batch in hand (guarded by _lock)
        self.runs_done = 0
        # Run-log retention (store.prune_runs), pruned by a housekeeping thread.
        self.retention: Retention = retention if retention is not None else store.retention
        self.pruned = 0
        self._reaper = Reaper(self)  # our row in the runner table; dead runners' jobs back
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

    def threads_busy(self) -> int:
        """How many of the worker threads are claiming, executing or recording now."""
        with self._lock:
            return self._working

    def healthy(self) -> bool:
        """Running, and its last heartbeat reached the database less than a heartbeat
        timeout ago (what ``jobtui worker`` tells systemd's watchdog)."""
        return self.running and time.monotonic() - self.last_beat < self.heartbeat_timeout

    def start(self) -> None:
        """Register in the runner table and start the threads."""
        if self.running:
            return
        url = self.store.url
        dberrors.quiet_lost_resets()
        self._engine = self.backend.pool_engine(url, self.threads + 3)
        try:
            self._schema, self._lock_key = self.backend.lock_scope(self.engine, self.store.lock_key)
            self._lock_names.clear()
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

    def _runs(self) -> list[Run]:
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
            # Until this pass has planned the next one, a worker ending a batch wakes it.
            self._next_pass = float("inf")
            try:
                wait = self._schedule_once()
                backoff = 0.2
            except Exception as exc:
                log.warning("scheduler: %s (retrying in %.1f s)", _describe(exc), backoff)
                wait = backoff
                backoff = min(backoff * 2, RECONNECT_CAP)
                self._backlog = True
            self._next_pass = time.monotonic() + wait
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
                # what a job never run yet is like (its owner's, same kind and target):
                # for the others not read, as targets may be long statements
                case((j.c.last_duration.is_(None), j.c.what_kind), else_=None).label("kind"),
                case((j.c.last_duration.is_(None), j.c.what_target), else_=None).label("target"),
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
        cooling: float | None = None  # the first cooldown to end among due jobs (monotonic)
        elsewhere = False  # a due job is leased by another runner (SQLite)
        due: list[tuple[float, int]] = []
        short: dict[int, float] = {}  # job id -> its last run's duration (or its kind's)
        fresh: set[int] = set()  # never run yet: one at the end of a batch, or alone
        guessed: set[int] = set()  # never run yet, batched as short ones of their kind
        unknown: dict[int, tuple[str, str, str]] = {}  # never run yet, nor any of its kind
        held = False  # new jobs left for the next pass: the first of their kind runs
        owners: dict[int, str] = {}
        for row in rows:
            jid = int(row.id)
            owners[jid] = str(row.owner)
            if jid in busy:
                continue
            cool = self._cooldown.get(jid, 0.0)
            if cool > mono:
                cooling = cool if cooling is None else min(cooling, cool)
                continue
            if self.backend.leased_elsewhere(row, self.runner_id, now):
                elsewhere = True
                continue
            # A next_run that is no date (a zero date written through the view) sorts
            # first in SQL: due now, and the claim finds the row's problem.
            nxt = bookkeeping.row_time(row.next_run, now)
            duration = row.last_duration
            if type(duration) in (float, int) and 0.0 <= duration < SHORT_RUN:
                short[jid] = float(duration)
            elif duration is None:
                like = (owners[jid], str(row.kind), str(row.target))
                guess = self._like.get(like)
                if guess is not None and guess < SHORT_RUN:
                    short[jid] = guess
                    guessed.add(jid)
                else:
                    fresh.add(jid)
                    if guess is None:
                        unknown[jid] = like
            if row.run_now:  # any pool, at once: an operator waits for it
                due.append((0.0, jid))
            elif (
                nxt is not None
                and nxt <= soon
                and (wait := self.share.wait(jid)) > 0
                and (takeover := nxt + timedelta(seconds=wait)) > soon
            ):
                # Another pool's job (sharing.py): ours only once overdue by our grace.
                if earliest is None or takeover < earliest:
                    earliest = takeover
            elif nxt is not None and nxt <= soon:
                ahead = (nxt - now).total_seconds()
                # its slot in monotonic time, for a new job whose kind is not known yet
                if jid in unknown and self._probing(unknown[jid], mono + max(0.0, ahead)):
                    held = True  # the first of its kind tells whether it may be batched
                    continue
                # 0.1 s buckets, shuffled inside: pools sharing a database start on
                # different jobs instead of all fighting over the same first one.
                due.append((1.0 + ahead // 0.1 + random.random(), jid))
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
                self._taker[jid] = None
                self._owner_of[jid] = owners[jid]
                if jid not in short:
                    self._long_taken.add(jid)
                elif jid in guessed:
                    self._guessed.add(jid)
        self._dispatch([jid for _, jid in taken], short, owners, fresh)
        if len(self._cooldown) > 1000:
            self._cooldown = {k: v for k, v in self._cooldown.items() if v > mono}
        # A worker that ends a batch wakes the loop when due jobs were left behind here;
        # otherwise only when its jobs' next runs come before the pass planned below.
        self._backlog = len(due) > len(taken) or len(rows) >= limit or elsewhere or held
        if self._backlog:
            return self.poll  # more are due: a worker running low on work wakes the loop
        wait = self.poll
        if cooling is not None:  # declined a moment ago: look again when that ends
            wait = min(wait, max(MIN_PASS, cooling - time.monotonic()))
        if earliest is None:
            return wait
        return max(0.002, min(wait, (earliest - self._lead - self.now()).total_seconds()))

    def _probing(self, like: tuple[str, str, str], slot: float) -> bool:
        """Whether a new job of kind ``like`` (due at ``slot``, monotonic), none of which
        ran here yet, waits for the first of its kind (the probe); if none is on its way,
        it becomes the probe. A probe that has not ended PROBE_WAIT after its slot holds
        up nothing more."""
        since = self._probes.get(like)
        if since is None:
            if len(self._probes) >= 1000:
                mono = time.monotonic()
                self._probes = {k: v for k, v in self._probes.items() if mono - v < PROBE_WAIT}
            self._probes[like] = slot
            return False
        return time.monotonic() - since < PROBE_WAIT

    def _dispatch(
        self,
        jids: list[int],
        short: dict[int, float],
        owners: dict[int, str],
        fresh: set[int] | frozenset[int] = frozenset(),
    ) -> None:
        """Queue the jobs: one by one, except short ones when there are many (batches).

        A batch holds one owner's jobs only: its runs share a connection, which is
        reset after each batch (``Session.reset``). An owner's short jobs are spread
        over the threads its batches may hold at once (all but one, ``_OwnerQueue``;
        one batch each), unless a batch's last durations would add up to more than
        BATCH_BUDGET: then more, smaller batches. (Not over the fewer threads an
        owner's long jobs may hold: larger batches' claims lock by a table scan once
        they name a large part of the table, and deadlocked in the benchmark.)

        A job never run yet (``fresh``: no known duration) joins a batch whose known
        durations leave room for FRESH_GUESS more, one a batch, last: the batch records
        the known runs before it starts (``_run_batch``), so a first run that turns out
        long (or endless) delays no other job. The others run alone. (Not batches of new
        jobs only: one long first run would hold up every new job behind it, for ever
        if it never ends.)
        """
        quick: dict[str, list[int]] = {}
        new: dict[str, list[int]] = {}
        for jid in jids:
            if jid in fresh:
                new.setdefault(owners[jid], []).append(jid)
            elif jid in short:
                quick.setdefault(owners[jid], []).append(jid)
            else:
                self._queue.put(("run", [jid]), owners[jid])
        for owner in {**quick, **new}:
            ids = quick.get(owner, [])
            batches: list[list[int]] = []
            if ids:
                # as many batches as threads the owner's batches may hold at once
                size = min(MAX_BATCH, max(1, -(-len(ids) // self._queue.short_cap)))
                mean = sum(short[jid] for jid in ids) / len(ids)
                size = max(1, min(size, int(BATCH_BUDGET / max(mean, 1e-4))))
                batches = [ids[i : i + size] for i in range(0, len(ids), size)]
            rest = new.get(owner, [])
            # Batches of short jobs only (known, or guessed from their kind) are "short"
            # for the owner's share of the threads; one with a new job, or a job alone, not.
            for batch in batches:
                with_new = False
                if rest:
                    room = BATCH_BUDGET - sum(short[jid] for jid in batch)
                    if room >= FRESH_GUESS - 1e-9 and len(batch) < MAX_BATCH:
                        batch.append(rest.pop(0))
                        with_new = True
                self._queue.put(("run", batch), owner, short=not with_new)
            for jid in rest:
                self._queue.put(("run", [jid]), owner)

    def _worker_loop(self) -> None:
        session = Session(self.engine, self.backend)
        try:
            while True:
                item, owner, short = self._queue.get()
                if item is None:
                    break
                kind, jids = item
                if kind == "run":
                    me = threading.get_ident()
                    with self._lock:
                        self._working += 1
                        for jid in jids:
                            self._taker[jid] = me
                look_again = True
                try:
                    if kind == "hold":
                        self._take_hold(session, jids[0])
                    elif not self._stopping.is_set():
                        look_again = self._process(session, jids)
                except Exception as exc:
                    log.warning("runner thread: %s", _describe(exc))
                    if dberrors.is_disconnect(exc):
                        session.discard()
                finally:
                    if kind == "run":
                        with self._lock:
                            self._working -= 1
                        self._release(jids)
                        self._queue.done(owner, short)
                        if self._queue.runnable() < self.threads and (look_again or self._backlog):
                            self._wake.set()
        finally:
            session.discard()

    def _release(self, jids: list[int]) -> None:
        """This thread is done with ``jids`` (recorded, or never claimed): the scheduler may
        take them again. A job released early (recorded ahead of a batch's first run) and
        already taken again by another thread is that thread's now: left alone here."""
        me = threading.get_ident()
        with self._lock:
            for jid in jids:
                if self._taker.get(jid, me) != me:
                    continue
                self._taker.pop(jid, None)
                self._active.pop(jid, None)
                self._long_taken.discard(jid)
                self._guessed.discard(jid)
                self._owner_of.pop(jid, None)
        self._wake.set()

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
                    self.last_beat = time.monotonic()
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
        name = self._lock_names.get(job_id)
        if name is None:  # an HMAC a claim: made once per job (the key and schema stay)
            key = self._lock_key or self.store.lock_key()  # read at start(); once per store
            name = claims.lock_name(key, self._schema, job_id)
            if len(self._lock_names) >= 100_000:
                self._lock_names.clear()
            self._lock_names[job_id] = name
        return name

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

    def _process(self, session: Session, job_ids: list[int]) -> bool:
        """Claim, execute and record a batch. Returns whether the scheduler should look
        at the due jobs again now (else its planned pass comes soon enough)."""
        if session.dirty and not self.hold:
            session.reset()  # not reset after its last batch (recording gave up): now
        try:
            runs, declined = self._claim_runs(session, job_ids)
        except Exception as exc:
            if not dberrors.is_disconnect(exc):
                raise
            # The held connection died while idle (server restart, KILL): once more on a
            # fresh one. Safe: a claim that did commit left running=1, so this finds it taken.
            session.discard()
            runs, declined = self._claim_runs(session, job_ids)
        if not runs:
            return True
        with self._lock:
            for run in runs:
                self._active[run.job.id] = run
        self._learn_claimed(runs)
        done = self._run_batch(runs)
        return bool(declined) or self._next_runs_early(done)

    def _next_runs_early(self, done: list[Ended] | None) -> bool:
        """Whether a run that ended may be due again before the scheduler's planned pass
        (its next run as claimed; a run that did not end well may have a retry sooner)."""
        if not done:
            return True  # not recorded (the database was lost): look again
        soonest: datetime | None = None
        for run, outcome, _error, _finished in done:
            if outcome is not Outcome.OK:
                return True
            nxt = run.next_run
            if nxt is not None and (soonest is None or nxt < soonest):
                soonest = nxt
        if soonest is None:
            return False  # none of them runs again (once jobs)
        delay = (soonest - self._lead - self.now()).total_seconds()
        return time.monotonic() + delay < self._next_pass

    def _claim(self, session: Session, job_ids: list[int]) -> list[Run]:
        """Claim what is still eligible of ``job_ids`` (``Claimer.claim``); the others
        are left alone for a moment (the scheduler's cooldown)."""
        return self._claim_runs(session, job_ids)[0]

    def _claim_runs(self, session: Session, job_ids: list[int]) -> tuple[list[Run], list[int]]:
        began = time.monotonic()
        runs, declined = self._claimer.claim(session, job_ids, lead=self._lead)
        if self.observer is not None:
            self._observe(self.observer.claimed, time.monotonic() - began, len(runs))
        if declined:
            until = time.monotonic() + min(self.poll, 0.5)
            for jid in declined:
                self._cooldown[jid] = until
        return runs, declined

    def _run_batch(self, runs: list[Run]) -> list[Ended] | None:
        """Execute claimed runs one after the other (each at its slot), then record them:
        what ended, or None when recording gave up."""
        done: list[Ended] = []
        ended: list[Ended] = []  # recorded ahead of a job never run yet
        checked = False
        with self._lock:  # never run yet, and batched as others of its kind (no probe)
            guessed = {run.job.id for run in runs if run.job.id in self._guessed}

        def new(run: Run) -> bool:  # never run yet, nor any of its kind: may be long
            return run.job.last_duration is None and run.job.id not in guessed

        runs.sort(key=new)  # last
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
                if done and new(run):
                    # A job never run yet may be long: what ran before it is recorded
                    # (locks released, no session reset: the rest are still held) first.
                    if burst:
                        burst = False
                        with self._burst:
                            self._bursting -= 1
                            self._burst.notify_all()
                    if self._finish(done, reset=False):
                        ended += done
                        # Recorded, their locks released: they are due again on their
                        # own schedule while this first run goes on, however long.
                        self._release([r.job.id for r, *_ in done])
                    done = []
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
        return ended + done if self._finish(done) else None

    def _learn(self, items: list[Ended]) -> None:
        """Remember how long a run of each kind (owner, what kind, target) took: the new
        jobs of that kind are batched when it was short (``_schedule_once``)."""
        for run, outcome, _error, finished in items:
            if run.exec_start is not None and outcome in (Outcome.OK, Outcome.FAILED):
                self._like_took(run.job, (finished - run.exec_start).total_seconds())

    def _learn_claimed(self, runs: list[Run]) -> None:
        """What the claimed jobs' last runs took, as ``_learn`` (before they run again)."""
        for run in runs:
            last = run.job.last_duration
            if isinstance(last, (float, int)):
                self._like_took(run.job, float(last))

    def _like_took(self, job: Job, seconds: float) -> None:
        like = self._like
        if len(like) >= 10_000:
            like.clear()
        kind = (job.owner, job.what.kind, job.what.target)
        like[kind] = max(0.0, seconds)
        self._probes.pop(kind, None)

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

    def _finish(self, done: list[Ended], *, reset: bool = True) -> bool:
        """Record the outcomes (retrying until the database answers), then report them.
        False: recording gave up (the pool is stopping). ``reset=False``: more runs of
        the batch, claimed on this session, are still to come."""
        items = []
        for run, outcome, error, finished in done:
            if error is not None:
                error = mask_text(error)[: bookkeeping.MAX_ERROR_LENGTH]
            items.append((run, outcome, error, finished))
        session = items[0][0].session
        names = ", ".join(run.job.name for run, *_ in items)
        delay = 0.2
        began = time.monotonic()
        for attempt in itertools.count():
            try:
                conn = session.get()
                self._recorder.record(conn, items)
                break
            except Exception as exc:
                if dberrors.is_interrupt(exc) and attempt < 3:
                    continue  # a KILL QUERY that arrived late; the connection is fine
                busy = dberrors.error_code(exc) == dberrors.LOCK_WAIT_TIMEOUT
                log.warning(
                    "could not record the run of %s (retrying in %.1f s): %s%s",
                    names,
                    delay,
                    _describe(exc),
                    f": its row or run-log row is locked and {BUSY_WHY}" if busy else "",
                )
                if not busy:  # a lock wait ends the statement only: the connection is fine
                    session.discard()
                if self._give_up.is_set():
                    log.error("giving up recording the run of %s", names)
                    return False
                time.sleep(delay)
                delay = min(delay * 2, RECONNECT_CAP)
        if reset and session.dirty and not self.hold:
            # Recorded, locks released: what the runs set in the session goes, before
            # this connection claims another owner's jobs (or evaluates their expr).
            session.reset()
        self.runs_done += len(items)
        self._learn(items)
        observer = self.observer
        if observer is not None:
            self._observe(observer.recorded, time.monotonic() - began, len(items))
        if self.on_run is None and observer is None:
            return True
        for run, outcome, error, finished in items:
            result = RunResult(
                job=run.job.name,
                job_id=run.job.id,
                slot=run.slot,
                outcome=outcome,
                started=run.exec_start or run.started,
                finished=finished,
                error=error,
                manual=run.manual,
                skipped=run.skipped,
                owner=run.job.owner,
                **_failure_count(run.job, outcome),
            )
            if observer is not None:
                self._observe(observer.finished, result)
            if self.on_run is None:
                continue
            try:
                self.on_run(result)
            except Exception as exc:
                log.warning("on_run callback failed: %s", exc)
        # A callback that buffers what it reports (the worker's log) writes it out once
        # per batch.
        flush = getattr(self.on_run, "flush", None)
        if flush is not None:
            try:
                flush()
            except Exception as exc:
                log.warning("on_run callback failed: %s", exc)
        return True

    def _observe(self, report: Callable[..., None], *args: Any) -> None:
        """Tell the observer; its failure is logged, never the pool's."""
        try:
            report(*args)
        except Exception as exc:
            log.warning("pool observer failed: %s", exc)


def _failure_count(job: Any, outcome: Outcome) -> dict[str, Any]:
    """A run's failures in a row, and whether it turned the job BROKEN (as
    ``bookkeeping.finish_values`` counts them), for ``on_run``."""
    if outcome is Outcome.OK:
        return {"failures": 0}
    if outcome is not Outcome.FAILED:
        return {"failures": job.failures}
    failures = job.failures + 1
    return {
        "failures": failures,
        "turned_broken": not job.broken and failures >= job.max_failures,
    }
