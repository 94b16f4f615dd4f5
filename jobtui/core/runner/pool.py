"""Runner pools: execute due jobs on time, exactly once, and obey the operator.

A ``RunnerPool`` is DBMS_JOB's job queue processes in one process:

- a scheduler thread finds due jobs with one query, sleeps until the earliest
  next run (bounded by ``poll``) and hands job ids to idle worker threads;
- each worker thread owns one connection on which it claims the job
  (``GET_LOCK`` + row update on MySQL/MariaDB, a lease inside ``BEGIN
  IMMEDIATE`` on SQLite) and records the outcome, and executes it there or,
  on MySQL/MariaDB, on its executor connection (session.py);
- a monitor thread heartbeats, renews leases, watches ``abort_requested``
  (interrupting the statement in flight) and reaps dead runners.

Its settings are a ``PoolConfig`` (config.py); a pass's plan is planning.py's;
registration, heartbeats and reaping are the pool's ``Reaper`` (reaping.py);
``jobtui worker`` and ``jobtui run NAME`` run a pool (jobtui/core/worker.py).
docs/runners.md describes the protocol.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import secrets
import socket
import threading
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.engine import Engine
from sqlalchemy.exc import SQLAlchemyError

from jobtui.core import accounts, bookkeeping, dberrors, lock_names
from jobtui.core.db import mask_text
from jobtui.core.dberrors import describe as _describe
from jobtui.core.dberrors import translate_db_error
from jobtui.core.errors import JobLocked, JobtuiError
from jobtui.core.model import Job, Outcome
from jobtui.core.retention import Retention
from jobtui.core.runner import planning, queries, reporting
from jobtui.core.runner.claiming import ClaimedRun, Claimer
from jobtui.core.runner.config import (
    ABORT_CHECK_INTERVAL,
    BURST_WAIT,
    DEFAULTS,
    MIN_PASS,
    RECONNECT_CAP,
    PoolConfig,
)
from jobtui.core.runner.holdings import Holdings
from jobtui.core.runner.housekeeping import Housekeeper
from jobtui.core.runner.owners import OwnerQueue, owner_cap
from jobtui.core.runner.reaping import Beats, PoolHandle, Reaper
from jobtui.core.runner.recording import Ended, Recorder
from jobtui.core.runner.running import abort_run, execute_run, find_aborts
from jobtui.core.runner.runresult import OnRun, PoolObserver
from jobtui.core.runner.session import Session
from jobtui.core.runner.sharing import Share
from jobtui.core.store import JobStore
from jobtui.core.timeutil import Clock, aware, from_db, to_db

log = logging.getLogger("jobtui.runner")


class RunnerPool:
    """N worker threads executing due jobs from one database (job queue processes)."""

    def __init__(
        self,
        store: JobStore,
        config: PoolConfig | None = None,
        *,
        clock: Clock | None = None,
        on_run: OnRun | None = None,
        observer: PoolObserver | None = None,
        retention: Retention | None = None,
        **settings: Any,
    ) -> None:
        """A pool on ``store``'s database, set up by ``config`` (the defaults without
        one); a setting may also be given by its name (``threads=2``) over ``config``."""
        cfg = config or DEFAULTS
        if settings:
            cfg = dataclasses.replace(cfg, **settings)
        self.config = cfg
        threads, hold, job_id = cfg.threads, cfg.hold, cfg.job_id
        self.store = store
        self.threads = int(threads)
        self.poll = float(cfg.poll)
        # One owner's runs hold at most this many threads at once (see OwnerQueue).
        self.owner_share = float(cfg.owner_share)
        self.owner_cap = owner_cap(self.threads, self.owner_share)
        # Claiming takes round trips; done this much before a slot, only the execution
        # itself is left for the slot. Not in hold mode: run NAME claims at the slot.
        self._lead = timedelta(seconds=0.0 if hold else float(cfg.lead))
        self.name = (cfg.name or "runner")[:64]
        self.heartbeat_timeout = float(cfg.heartbeat_timeout)
        self.heartbeat_interval = max(0.2, min(2.0, self.heartbeat_timeout / 4))
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
            grace=0.0 if hold or job_id is not None else float(cfg.takeover_grace),
            cap=self.heartbeat_timeout,
        )
        self.running = False
        self.hold_error: JobLocked | None = None
        self.hold_ready = threading.Event()
        self._engine: Engine | None = None
        self._schema = ""
        self._lock_key = ""  # the store's jobtui_secret key: lock names operators cannot compute
        self._lock_names: dict[int, str] = {}  # job id -> its lock name (made with the key)
        self._held = Holdings()  # the jobs taken, claimed and running here
        # Batches claimed ahead of their slot that are executing now: their recording
        # waits for the others' executions (BURST_WAIT at most), so a slot's burst of
        # runs is not slowed down by the bookkeeping of the batches that ended first.
        self._burst = threading.Condition()
        self._bursting = 0
        self._cooldown: dict[int, float] = {}
        # What runs of each kind (owner, what kind, target) took here; the kinds probed.
        self._kinds = planning.Kinds()
        self._queue = OwnerQueue(self.owner_cap, self.threads - 1)
        self._wake = threading.Event()
        # When the scheduler's next pass is planned (monotonic), and whether its last pass
        # left due jobs behind: a worker that ends a batch wakes it only when it must.
        self._next_pass = 0.0
        self._backlog = True
        self._stopping = threading.Event()
        self._stopped = threading.Event()
        self._give_up = threading.Event()
        self._threads: list[threading.Thread] = []
        self.runs_done = 0
        # Run-log retention (store.prune_runs), pruned by a housekeeping thread.
        self.retention: Retention = retention if retention is not None else store.retention
        self._housekeeper = Housekeeper(store, self.now)
        # Our row in the runner table; dead runners' jobs back. It knows us by a handle.
        self._reaper = Reaper(self._handle())
        self._beats = Beats(
            self._reaper, interval=self.heartbeat_interval, timeout=self.heartbeat_timeout
        )
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

    def _handle(self) -> PoolHandle:
        """What the reaper may know and ask of this pool."""
        return PoolHandle(
            runner_id=self.runner_id,
            name=self.name,
            host=self.host,
            threads=self.threads,
            heartbeat_timeout=self.heartbeat_timeout,
            backend=self.backend,
            share=self.share,
            engine=lambda: self.engine,
            now=self.now,
            stopping=self._stopping.is_set,
            taken=self._held.taken,
            lock_name=self._lock_name,
        )

    # ------------------------------------------------------------------ public

    @property
    def engine(self) -> Engine:
        assert self._engine is not None, "start() the pool first"
        return self._engine

    def now(self) -> datetime:
        return aware(self.clock())

    def in_flight(self) -> list[str]:
        """Names of the jobs this pool is executing now."""
        return self._held.names_in_flight()

    def busy(self) -> bool:
        """Whether a job is being claimed or executed here now."""
        return self._held.has_runs()

    def threads_busy(self) -> int:
        """How many of the worker threads are claiming, executing or recording now."""
        return self._held.working()

    @property
    def last_beat(self) -> float:
        """When (``time.monotonic()``) the last heartbeat reached the database."""
        return self._beats.last_beat

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
        while self._held.has_runs() and (not abort or time.monotonic() < deadline):
            time.sleep(0.05)
        if self._held.has_runs():
            for run in self._held.runs():
                run.abort_reason = run.abort_reason or "shutdown"
                self._abort(run)
        # Recording may wait for a lost database; do not wait for ever.
        deadline = time.monotonic() + max(10.0, self.heartbeat_timeout)
        while self._held.has_runs() and time.monotonic() < deadline:
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
        """Queue due jobs for the worker threads; return how long to sleep.

        The reads are here, the decisions planning.py's (pure functions)."""
        now = self.now()
        soon = now + self._lead
        busy = self._held.taken()
        long_cap, capacity, limit = planning.limits(self.threads, len(busy))
        query, later = queries.due(to_db(soon), limit, self.only_job)
        with self.engine.connect() as conn:
            rows = conn.execute(query).all()
            first_later = from_db(conn.execute(later).scalar())
            conn.rollback()
        mono = time.monotonic()
        found = planning.sort_due(
            rows,
            now=now,
            soon=soon,
            mono=mono,
            first_later=first_later,
            busy=busy,
            cooldown=self._cooldown,
            like=self._kinds.like,
            probes=self._kinds.probes,
            leased_elsewhere=lambda row: self.backend.leased_elsewhere(row, self.runner_id, now),
            share_wait=self.share.wait,
        )
        taken = planning.take(
            found.due,
            short=found.short,
            owners=found.owners,
            capacity=capacity,
            long_cap=long_cap,
            # One owner's long jobs fill at most its share of the backlog: the others'
            # jobs are still taken when one owner has many due (fairness; OwnerQueue).
            owner_long_cap=max(self.owner_cap, int(long_cap * self.owner_share)),
            owner_long=self._held.long_by_owner(),
        )
        jids = [jid for _, jid in taken]
        self._held.take(jids, owners=found.owners, short=found.short, guessed=found.guessed)
        self._dispatch(jids, found.short, found.owners, found.fresh)
        if len(self._cooldown) > 1000:
            self._cooldown = {k: v for k, v in self._cooldown.items() if v > mono}
        # A worker that ends a batch wakes the loop when due jobs were left behind here;
        # otherwise only when its jobs' next runs come before the pass planned below.
        self._backlog = (
            len(found.due) > len(taken) or len(rows) >= limit or found.elsewhere or found.held
        )
        return planning.next_wait(
            backlog=self._backlog,
            poll=self.poll,
            cooling=found.cooling,
            earliest=found.earliest,
            lead=self._lead,
            clock=self.now,
        )

    def _dispatch(
        self,
        jids: list[int],
        short: dict[int, float],
        owners: dict[int, str],
        fresh: set[int] | frozenset[int] = frozenset(),
    ) -> None:
        """Queue the jobs: one by one, except short ones when there are many (batches
        of one owner, ``planning.batches``)."""
        for ids, owner, is_short in planning.batches(
            jids, short=short, owners=owners, fresh=fresh, short_cap=self._queue.short_cap
        ):
            self._queue.put(("run", ids), owner, short=is_short)

    def _worker_loop(self) -> None:
        session = Session(self.engine, self.backend, role=accounts.executor_role(self._schema))
        try:
            while True:
                item, owner, short = self._queue.get()
                if item is None:
                    break
                kind, jids = item
                if kind == "run":
                    self._held.begin_batch(jids, threading.get_ident())
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
                        self._held.end_batch()
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
        self._held.release(jids, threading.get_ident())
        self._wake.set()

    def _monitor_loop(self) -> None:
        """Aborts, heartbeats and the reaping of dead runners (``reaping.Beats``)."""
        beats = self._beats
        beats.start(time.monotonic())
        while not self._stopped.wait(ABORT_CHECK_INTERVAL):
            mono = time.monotonic()
            try:
                if self._held.has_runs():
                    self._check_aborts()
                beats.tick(mono, stopping=self._stopping.is_set)
            except Exception as exc:
                beats.cut_off()
                log.warning("monitor: %s", _describe(exc))

    def _housekeeping_loop(self) -> None:
        """Prune the run log by ``retention`` (housekeeping.py) until the pool stops."""
        self._housekeeper.run(self.retention, self._stopping)

    @property
    def pruned(self) -> int:
        """Run-log rows this pool's housekeeping deleted."""
        return self._housekeeper.pruned

    # ------------------------------------------------------------------ claiming

    def _lock_name(self, job_id: int) -> str:
        name = self._lock_names.get(job_id)
        if name is None:  # an HMAC a claim: made once per job (the key and schema stay)
            key = self._lock_key or self.store.lock_key()  # read at start(); once per store
            name = lock_names.lock_name(key, self._schema, job_id)
            if len(self._lock_names) >= 100_000:
                self._lock_names.clear()
            self._lock_names[job_id] = name
        return name

    def _take_hold(self, session: Session, job_id: int) -> None:
        """Foreground mode: hold the job's lock (or lease) from now until stop."""
        try:
            held = self._claimer.take_hold(session, job_id)
            if held is not None:
                name, holder = held
                self.hold_error = JobLocked(name or self._job_label(job_id), holder)
        finally:
            self.hold_ready.set()

    def _job_label(self, job_id: int) -> str:
        job = self.store.get_by_id(job_id)
        return job.name if job else str(job_id)

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
        self._held.claimed(runs)
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

    def _claim(self, session: Session, job_ids: list[int]) -> list[ClaimedRun]:
        """Claim what is still eligible of ``job_ids`` (``Claimer.claim``); the others
        are left alone for a moment (the scheduler's cooldown)."""
        return self._claim_runs(session, job_ids)[0]

    def _claim_runs(
        self, session: Session, job_ids: list[int]
    ) -> tuple[list[ClaimedRun], list[int]]:
        began = time.monotonic()
        runs, declined = self._claimer.claim(session, job_ids, lead=self._lead)
        if self.observer is not None:
            reporting.observe(self.observer.claimed, time.monotonic() - began, len(runs))
        if declined:
            until = time.monotonic() + min(self.poll, 0.5)
            for jid in declined:
                self._cooldown[jid] = until
        return runs, declined

    def _run_batch(self, runs: list[ClaimedRun]) -> list[Ended] | None:
        """Execute claimed runs one after the other (each at its slot), then record them:
        what ended, or None when recording gave up."""
        done: list[Ended] = []
        ended: list[Ended] = []  # recorded ahead of a job never run yet
        checked = False
        # never run yet, and batched as others of its kind (no probe)
        guessed = self._held.guessed_among(run.job.id for run in runs)

        def new(run: ClaimedRun) -> bool:  # never run yet, nor any of its kind: may be long
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

    def _learn_claimed(self, runs: list[ClaimedRun]) -> None:
        """What the claimed jobs' last runs took, as ``_learn`` (before they run again)."""
        for run in runs:
            last = run.job.last_duration
            if isinstance(last, (float, int)):
                self._like_took(run.job, float(last))

    def _like_took(self, job: Job, seconds: float) -> None:
        self._kinds.took((job.owner, job.what.kind, job.what.target), seconds)

    def _verify(self, runs: list[ClaimedRun]) -> None:
        self._claimer.verify(runs, self._schema)

    def _wait_for_slot(self, run: ClaimedRun) -> None:
        """A run claimed ahead of its slot (``lead``) starts at the slot, or when aborted."""
        early = (run.slot - self.now()).total_seconds()
        if early > 0:
            # Bounded by the lead: an injected clock that stands still does not stall us.
            run.abort_event.wait(min(early, self._lead.total_seconds()))

    # ------------------------------------------------------------------ executing

    def _execute(self, run: ClaimedRun) -> tuple[Outcome, str | None]:
        return execute_run(
            run, self.backend, schema_name=self._schema, now=self.now, runner_id=self.runner_id
        )

    def _abort(self, run: ClaimedRun) -> None:
        """Stop a run in flight: the action's event, and the statement on its connection."""
        abort_run(run, self.backend, self.engine)

    def _check_aborts(self) -> None:
        runs = self._held.runs()
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
        began = time.monotonic()
        if not self._recorder.record_retrying(session, items, give_up=self._give_up):
            return False
        if reset and session.dirty and not self.hold:
            # Recorded, locks released: what the runs set in the session goes, before
            # this connection claims another owner's jobs (or evaluates their expr).
            session.reset()
        self.runs_done += len(items)
        self._learn(items)
        observer = self.observer
        if observer is not None:
            reporting.observe(observer.recorded, time.monotonic() - began, len(items))
        reporting.tell(items, on_run=self.on_run, observer=observer)
        return True
