"""Recording ended runs: the run-log rows' outcomes and the job rows' bookkeeping.

A ``Recorder`` writes a batch's outcomes in one transaction through the backend
(``Backend.record_batch``) and computes here, the same way on every database,
what each job row becomes (``bookkeeping.finish_values``); the batch's named
locks are released inside that transaction.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from datetime import datetime
from typing import Any

from sqlalchemy.engine import Connection

from jobtui.core import bookkeeping, dberrors
from jobtui.core.backends import Backend
from jobtui.core.model import Job, Outcome
from jobtui.core.runner.claiming import BUSY_WHY, ClaimedRun
from jobtui.core.runner.config import RECONNECT_CAP
from jobtui.core.runner.session import Session
from jobtui.core.timeutil import to_db

log = logging.getLogger("jobtui.runner")

#: A run that ended: (the run, its outcome, the error text or None, when it finished).
Ended = tuple[ClaimedRun, Outcome, "str | None", datetime]


def run_outcome(
    run: ClaimedRun, outcome: Outcome, error: str | None, finished: datetime
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


class Recorder:
    """Records the runs of one runner (``runner_id``) through ``backend``. ``hold``:
    foreground mode, whose job stays held (its lock or lease) after each run."""

    def __init__(self, backend: Backend, *, runner_id: str, hold: bool = False) -> None:
        self.backend = backend
        self.runner_id = runner_id
        self.hold = hold

    def record(self, conn: Connection, items: list[Ended]) -> None:
        """Record ``items`` in one transaction on ``conn`` (the runs' own connection)."""
        release = [] if self.hold else [run.lock_name for run, *_ in items if run.lock_name]
        outcomes = [
            (item[0].job.id, to_db(item[0].slot), run_outcome(*item), item) for item in items
        ]
        self.backend.record_batch(
            conn, self.runner_id, outcomes, self.finished_job, release=release
        )

    def record_retrying(
        self, session: Session, items: list[Ended], *, give_up: threading.Event
    ) -> bool:
        """Record ``items`` on ``session`` (the runs' own), retrying until the database
        answers; False when ``give_up`` was set meanwhile (the pool is stopping)."""
        names = ", ".join(run.job.name for run, *_ in items)
        delay = 0.2
        for attempt in itertools.count():
            try:
                conn = session.get()
                self.record(conn, items)
                return True
            except Exception as exc:
                if dberrors.is_interrupt(exc) and attempt < 3:
                    continue  # a KILL QUERY that arrived late; the connection is fine
                busy = dberrors.error_code(exc) == dberrors.LOCK_WAIT_TIMEOUT
                log.warning(
                    "could not record the run of %s (retrying in %.1f s): %s%s",
                    names,
                    delay,
                    dberrors.describe(exc),
                    f": its row or run-log row is locked and {BUSY_WHY}" if busy else "",
                )
                if not busy:  # a lock wait ends the statement only: the connection is fine
                    session.discard()
                if give_up.is_set():
                    log.error("giving up recording the run of %s", names)
                    return False
                time.sleep(delay)
                delay = min(delay * 2, RECONNECT_CAP)
        return False  # not reached: the loop ends by a return

    def finished_job(self, row: Any, job: Job | None, item: Ended) -> dict[str, Any] | None:
        """The job row's new values once the run ended (``finish_values``), or None when
        the locked row is not ours any more."""
        if row is None or job is None or not row.running or row.runner_id != self.runner_id:
            return None  # removed, or reaped while we were away: the row is not ours now
        run, outcome, error, finished = item
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
        if not self.hold:
            values.update(locked_by=None, locked_until=None)
        return values
