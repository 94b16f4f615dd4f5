"""Claiming due jobs: which of them a pool may run now, taken so that nobody else does.

A ``Claimer`` claims a batch of jobs on a worker thread's own connection
(``Session``) through the backend (``Backend.claim_batch``: named locks on
MySQL/MariaDB, row leases on SQLite) and plans each run here, the same way on
every database: the slot (missed ones coalesced), the next run, the job row's
new values and its run-log rows. It also re-checks runs claimed ahead at their
slot, verifies a batch's routines and marks rows with a problem BROKEN.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.engine import Connection

from jobtui.core import bookkeeping, owner_code, statements
from jobtui.core.backends import Backend
from jobtui.core.dberrors import (
    LOCK_WAIT_TIMEOUT,
    describe,
    error_code,
    is_disconnect,
    is_duplicate,
)
from jobtui.core.errors import InvalidInput
from jobtui.core.model import Intent, Job, Outcome, Status
from jobtui.core.rowmap import job_from_row
from jobtui.core.runner import queries
from jobtui.core.runner.session import Session, transaction, write_transaction
from jobtui.core.schedules import next_slot
from jobtui.core.timeutil import iso, to_db
from jobtui.core.transitions import PHASES, is_due_for_schedule, status_after

log = logging.getLogger("jobtui.runner")

# A job whose row (or run-log range) another transaction holds locked is skipped by the
# claim, never waited for; once it has been so for this long it is reported: one warning
# and one run-log row per such stretch (``Claimer.note_busy``).
BUSY_REPORT_AFTER = timedelta(seconds=2)
BUSY_WHY = (
    "another transaction holds it locked: its owner's (an open SELECT ... FOR UPDATE or "
    "LOCK IN SHARE MODE through jobtui_user_job, jobtui_user_run, user_jobs or "
    "user_jobs_running, in a client or inside one of the owner's own runs) or an admin's"
)

# What a run claimed ahead re-reads at its slot.
RECHECK_COLUMNS = ("id", "intent", "broken", "abort_requested", "remove_requested")


@dataclass(frozen=True)
class ExprFailure:
    """Why a job's expression gave no next run at the claim. ``final``: the expression's
    own fault (error, timeout, not a date, routine refused): ERROR with no next run;
    else (the runner could not check, the connection broke) an ordinary retry."""

    reason: str
    final: bool


@dataclass(eq=False)
class ClaimedRun:
    """A run this pool has claimed and not yet recorded."""

    job: Job
    slot: datetime
    manual: bool
    skipped: int
    started: datetime
    session: Session
    lock_name: str | None
    abort_event: threading.Event = field(default_factory=threading.Event)
    abort_reason: str | None = None  # operator | removed | shutdown | withdrawn
    guard: threading.Lock = field(default_factory=threading.Lock)
    executing: bool = False
    exec_start: datetime | None = None
    ahead: bool = False  # claimed before its slot (lead): it waits for the slot
    routine: owner_code.Verdict | None = None  # MySQL/MariaDB: the verified routine to call
    expr_error: ExprFailure | None = None  # its expression failed at the claim: not executed
    next_run: datetime | None = None  # the job's next run as the claim planned it


def run_log_rows(
    job: Job,
    runner_id: str,
    *,
    first: datetime | None,
    slot: datetime,
    started: Any,
    skipped: int,
    manual: bool,
) -> list[dict[str, Any]]:
    """The run-log rows of a claim: the ``skipped`` slots from ``first`` coalesced into one
    row (when any were missed), then the run of ``slot``, ``running`` since ``started``."""
    common = {
        "job_id": job.id,
        "job_name": job.name,
        "owner": job.owner,
        "runner": runner_id,
    }
    rows: list[dict[str, Any]] = []
    if skipped:
        assert first is not None
        rows.append(
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
    rows.append(
        {
            **common,
            "scheduled_for": to_db(slot),
            "started": started,
            "outcome": Outcome.RUNNING.value,
            "error": None,
            "skipped": 0,
            "manual": manual,
        }
    )
    return rows


class Claimer:
    """Claims jobs for one runner (``runner_id``) through ``backend``.

    ``clock``: now; ``lease``: how long a claim holds a row without a heartbeat
    (SQLite); ``lock_name``: a job's named lock (MySQL/MariaDB); ``evaluate_expr``:
    the store's, for expr schedules; ``hold``: foreground mode (``jobtui run``), whose
    job stays held between runs.
    """

    def __init__(
        self,
        backend: Backend,
        *,
        runner_id: str,
        clock: Callable[[], datetime],
        lease: timedelta,
        lock_name: Callable[[int], str],
        evaluate_expr: Callable[..., datetime | None],
        hold: bool = False,
    ) -> None:
        self.backend = backend
        self.runner_id = runner_id
        self.now = clock
        self.lease = lease
        self.lock_name = lock_name
        self.evaluate_expr = evaluate_expr
        self.hold = hold
        self.problems_told: dict[int, str] = {}  # job id -> the problem last logged for it
        self.busy_since: dict[int, datetime] = {}  # job id -> first claim that found it locked
        self.busy_told: dict[int, bool] = {}  # reported busy: run-log row written yet?

    # ------------------------------------------------------------------ claiming

    def claim(
        self, session: Session, job_ids: list[int], *, lead: timedelta
    ) -> tuple[list[ClaimedRun], list[int]]:
        """Claim what is still eligible of ``job_ids`` on the session's connection:
        (the runs, the ids a claim looked at and did not take). A slot due within
        ``lead`` is claimed now and executed at its time."""
        conn = session.get()
        locked: list[str] = []
        problems: dict[int, str] = {}
        now = self.now()

        def plan(c: Connection, row: Any, job: Job, name: str | None) -> Any:
            return self._plan(c, session, row, job, name, now, lead)

        busy: dict[int, Any] = {}
        try:
            runs = self.backend.claim_batch(
                conn,
                job_ids,
                lock_name=self.lock_name,
                plan=plan,
                runner_id=self.runner_id,
                now=now,
                lease_until=now + self.lease,
                locked=locked,
                problems=problems,
                busy=busy,
            )
        except Exception as exc:
            self.release_names(session, locked)
            if error_code(exc) == LOCK_WAIT_TIMEOUT:  # their run-log range is held locked
                self.note_busy(session, dict.fromkeys(job_ids), now, "its run log")
                return [], list(job_ids)
            if not is_duplicate(exc):
                raise
            if len(job_ids) > 1:  # one of them hit the slot guard: claim them one by one
                runs, declined = [], []
                for jid in job_ids:
                    one, no = self.claim(session, [jid], lead=lead)
                    runs.extend(one)
                    declined.extend(no)
                return runs, declined
            self.skip_taken_slot(conn, job_ids[0])
            return [], []
        claimed = {run.job.id for run in runs}
        if busy or self.busy_since:
            self.note_busy(session, busy, now, "its row", looked_at=job_ids)
        if problems:
            self.mark_problems(session, problems)
        return runs, [jid for jid in job_ids if jid not in claimed]

    def note_busy(
        self,
        session: Session,
        busy: dict[int, Any],
        now: datetime,
        what: str,
        *,
        looked_at: list[int] | None = None,
    ) -> None:
        """Jobs a claim skipped because ``what`` (their row, their run log) was locked by
        another transaction. Once one has been so for BUSY_REPORT_AFTER: a warning, and a
        run-log row (outcome ``skipped``, the claim's time as its slot), written as soon
        as its owner's run log lets it (at the latest when the stretch ends). A job of
        ``looked_at`` that is not busy any more ends its stretch."""
        told = self.busy_told  # job id -> whether its run-log row is written
        pending: list[tuple[int, str, bool]] = []  # (job id, message, stretch still on)
        for jid in looked_at or ():
            if jid in busy or (since := self.busy_since.pop(jid, None)) is None:
                continue
            state = told.pop(jid, None)
            if state is False:
                pending.append((jid, self._busy_text(since, now, what, ended=True), False))
            elif state is True:
                log.info("job id %s: no longer locked by another transaction", jid)
        if len(self.busy_since) > 10_000:
            self.busy_since.clear()
            told.clear()
        for jid in busy:
            since = self.busy_since.setdefault(jid, now)
            if jid not in told and now - since >= BUSY_REPORT_AFTER:
                told[jid] = False
                log.warning("job id %s %s", jid, self._busy_text(since, now, what))
            if told.get(jid) is False:
                pending.append((jid, self._busy_text(since, now, what), True))
        if pending:
            self._write_busy(session, pending, now)

    @staticmethod
    def _busy_text(since: datetime, now: datetime, what: str, *, ended: bool = False) -> str:
        when = f"from {iso(since)} to {iso(now)}" if ended else f"since {iso(since)}"
        return (
            f"not claimed {when}: {what} is locked and {BUSY_WHY}; the claim skips it "
            "(never waits), so the job runs late, once the lock is released"
        )

    def _write_busy(
        self, session: Session, pending: list[tuple[int, str, bool]], now: datetime
    ) -> None:
        try:
            with write_transaction(self.backend, session.engine) as c:
                query = queries.job_names([p[0] for p in pending])
                found = {int(r.id): r for r in c.execute(query)}
            for jid, message, still in pending:
                row = found.get(jid)
                if row is not None:
                    self.backend.note_run(
                        session.engine,
                        {
                            "job_id": jid,
                            "job_name": row.name,
                            "owner": row.owner,
                            "scheduled_for": to_db(now),
                            "started": None,
                            "outcome": Outcome.SKIPPED.value,
                            "error": message,
                            "runner": self.runner_id,
                            "skipped": 0,
                            "manual": False,
                        },
                    )
                if still:
                    self.busy_told[jid] = True
        except Exception as exc:  # the warning stands; the row is written later
            log.debug("run-log row of a busy job not written yet: %s", describe(exc))

    def _plan(
        self,
        c: Connection,
        session: Session,
        row: Any,
        job: Job,
        lock_name: str | None,
        now: datetime,
        lead: timedelta,
    ) -> tuple[ClaimedRun, dict[str, Any], list[dict[str, Any]]] | None:
        """Plan the claim of one locked job row if it is eligible.

        Returns the run, the job row's new values and its run-log rows, or None.
        A slot due within ``lead`` is claimed as if it were due now (the run then
        waits for its slot before it executes). Never a job whose row has a
        problem (jobtui.core.row_checks): the backend puts those aside to be marked BROKEN.
        """
        if job.problem is not None or job.running:
            return None
        next_run = job.next_run
        at = now
        if next_run is not None and now < next_run <= now + lead:
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
                nxt, expr_error = self._eval_expr(c, session, job, at)
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
            "runner_connection_id": session.running_cid(job.what.kind),
            "runner_start": start_db,
            "runner_finish": None,
            "last_cycle_start": start_db,
            "run_now": False,
            "abort_requested": False,
            "updated": to_db(now),
        }
        run_rows = run_log_rows(
            job,
            self.runner_id,
            first=first,
            slot=slot,
            started=start_db,
            skipped=skipped,
            manual=not due,
        )
        job.running = True
        run = ClaimedRun(
            job=job,
            slot=slot,
            manual=not due,
            skipped=skipped,
            started=start,
            session=session,
            lock_name=lock_name,
            ahead=due and at > now,
            expr_error=expr_error,
            next_run=nxt,
        )
        return run, values, run_rows

    def _eval_expr(
        self, conn: Connection, session: Session, job: Job, now: datetime
    ) -> tuple[datetime | None, ExprFailure | None]:
        """The next run from the job's expression: (next, None), or (None, why not).

        MySQL/MariaDB: the owner's own FUNCTION, verified first, run with the owner's
        rights and at most ``owner_code.EXPR_TIMEOUT`` seconds (never the runner's
        rights, never a thread held), on the session's executor where the backend runs
        owner code apart (verified on ``conn``). A failure fails the run; when the expression
        itself is at fault the job goes to ERROR with no next run, until its owner
        changes it.
        """
        sched = job.schedule
        assert sched.expr is not None
        try:
            run_conn = None
            if session.backend.separate_executor:
                run_conn = session.executor()
                session.dirty = True  # owner code ran there: reset after the batch
            nxt = self.evaluate_expr(sched.expr, now, conn=conn, job=job, run_conn=run_conn)
        except Exception as exc:
            log.warning("job %s: expr failed at run start: %s", job.name, describe(exc))
            final = isinstance(exc, InvalidInput)
            what = "so the job has no next run" if final else "it is tried again later"
            return None, ExprFailure(
                f"the schedule's expression failed, {what}: {describe(exc)}", final
            )
        if nxt is not None and sched.finish is not None and nxt > sched.finish:
            return None, None
        return nxt, None

    def skip_taken_slot(self, conn: Connection, job_id: int) -> None:
        """The run log already has this slot (UNIQUE guard): move on to the next slot."""
        now = self.now()
        with transaction(self.backend, conn) as c:
            row = c.execute(queries.lock_job_unless_locked(job_id)).first()
            if row is None or row.running:
                return  # gone, taken, or held by another transaction: the next claim sees
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
                queries.set_job(
                    job_id,
                    {
                        "next_run": to_db(nxt),
                        "run_now": False,
                        "phase": phase,
                        "status": status_after(row, {"running": False, "phase": phase}),
                        "updated": to_db(now),
                    },
                )
            )

    def mark_problems(self, session: Session, problems: dict[int, str]) -> None:
        """Mark BROKEN, with the problem as the reason, the jobs whose rows the claim found
        invalid (jobtui.core.row_checks): in one short transaction of their own after the
        claim's (the batch's claims stand whatever happens here), each row re-read under
        its lock and marked only while it still has a problem. Logged once per job and
        problem, not at every pass."""
        now = self.now()
        told = self.problems_told
        marked: list[tuple[int, str, str]] = []
        try:
            with write_transaction(self.backend, session.engine) as c:
                for row in c.execute(queries.lock_jobs_unless_locked(list(problems))).all():
                    job = job_from_row(row)
                    if job.problem is None or job.running:
                        continue  # fixed meanwhile, or claimed by another pool since
                    reason = job.problem[: bookkeeping.MAX_ERROR_LENGTH]
                    marked.append((job.id, job.name, reason))
                    if row.broken and row.broken_reason == reason and not row.run_now:
                        continue  # marked before (a pool with a stale view of the row)
                    valid = row.intent in Intent.__members__ and row.phase in PHASES
                    status = (
                        status_after(row, {"broken": True, "running": False})
                        if valid
                        else Status.BROKEN.value
                    )
                    values = {
                        "broken": True,
                        "broken_reason": reason,
                        "run_now": False,  # run-now runs even a broken job: not this one
                        "status": status,
                        "updated": to_db(now),
                    }
                    statements.update_job(c, job.id, values, only_idle=True)
        except Exception as exc:
            text_ = describe(exc)
            if told.get(0) != text_:  # ids start at 1: 0 is this warning
                told[0] = text_
                log.warning("could not mark jobs %s broken: %s", sorted(problems), text_)
            return
        if len(told) > 10_000:
            told.clear()
        for jid, name, reason in marked:
            if told.get(jid) != reason:
                told[jid] = reason
                log.warning("job %s (id %s) is not run, marked BROKEN: %s", name, jid, reason)

    def release_names(self, session: Session, names: list[str]) -> None:
        """Release named locks a failed claim took (a held job's stays held)."""
        conn = session.conn
        if not names or self.hold or conn is None:
            return
        try:
            if conn.in_transaction():
                conn.rollback()
            self.backend.release_locks(conn, names)
            conn.commit()
        except Exception as exc:
            log.warning("could not release locks %s: %s", names, describe(exc))
            session.discard()  # closing the connection frees its locks

    def take_hold(self, session: Session, job_id: int) -> tuple[str | None, str] | None:
        """Foreground mode: hold the job's lock (or lease) from now until the pool stops.
        None when held (or the job is gone); else who holds it (``Backend.take_hold``)."""
        now = self.now()
        return self.backend.take_hold(
            session.get(),
            job_id,
            lock_name=self.lock_name,
            runner_id=self.runner_id,
            now=now,
            lease_until=now + self.lease,
        )

    # ------------------------------------------------------------------ before executing

    def verify(self, runs: list[ClaimedRun], schema_name: str) -> None:
        """The routines of a batch's call/sql jobs (MySQL/MariaDB), verified on the
        batch's own connection before any of them runs (``backends/mysql/routines.verify``)."""
        jobs = [run.job for run in runs if run.job.what.kind in ("call", "sql")]
        if not jobs:
            return
        session = runs[0].session
        try:
            verdicts = self.backend.verify_routines(session.get, schema_name, jobs)
        except Exception as exc:  # each run then fails with the reason, nothing executes
            if is_disconnect(exc):
                session.discard()
            problem = f"the runner could not verify the job's routine: {describe(exc)}"
            verdicts = {job.id: owner_code.Verdict(None, problem) for job in jobs}
        if verdicts:
            for run in runs:
                run.routine = verdicts.get(run.job.id)

    def withdraw(self, runs: list[ClaimedRun]) -> None:
        """At the slot, drop runs claimed ahead whose job was paused, disabled, broken,
        aborted or removed meanwhile: they are recorded as aborted, never started.

        A pause that returned before the slot stops it, as it would have without the
        lead; one statement per batch (``Backend.recheck``).
        """
        session = runs[0].session
        try:
            rows = self.backend.recheck(
                session.get, session.engine, [run.job.id for run in runs], RECHECK_COLUMNS
            )
        except Exception as exc:  # the runs go ahead as claimed; the monitor still aborts
            log.warning("could not re-check jobs claimed ahead: %s", describe(exc))
            if is_disconnect(exc):
                session.discard()
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
