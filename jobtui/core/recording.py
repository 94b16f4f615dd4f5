"""Recording ended runs: the run-log rows' outcomes and the job rows' bookkeeping.

A ``Recorder`` writes a batch's outcomes in one transaction through the backend
(``Backend.record_batch``) and computes here, the same way on every database,
what each job row becomes (``bookkeeping.finish_values``); the batch's named
locks are released inside that transaction.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy.engine import Connection

from jobtui.core import bookkeeping
from jobtui.core.backends import Backend
from jobtui.core.claiming import Run
from jobtui.core.model import Job, Outcome
from jobtui.core.timeutil import to_db

#: A run that ended: (the run, its outcome, the error text or None, when it finished).
Ended = tuple[Run, Outcome, "str | None", datetime]


def run_outcome(
    run: Run, outcome: Outcome, error: str | None, finished: datetime
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
