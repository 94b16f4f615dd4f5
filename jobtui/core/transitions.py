"""Status transitions, as pure functions over a job's state columns.

Four columns hold the truth; ``status`` is derived from them on every write
(under the row lock), so operator intent and runner activity stay
distinguishable in the data while people read one word:

- ``intent``  what the operator wants: ENABLED, DISABLED, PAUSED;
- ``broken``  DBMS_JOB's flag (too many failures, or set by the operator);
- ``running`` a runner is executing the job now;
- ``phase``   where the schedule stands: ENABLED (never ran), SLEEPING,
  ERROR (last run failed, a retry is due), RESUMED, ABORTED, FINISHED.

docs/architecture.md has the full table of transitions.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from jobtui.core.model import Intent, Job, Status

PHASES = ("ENABLED", "SLEEPING", "ERROR", "RESUMED", "ABORTED", "FINISHED")
_PHASE_STATUS = {phase: Status(phase) for phase in PHASES}
BACKOFF_BASE = timedelta(minutes=1)
BACKOFF_CAP = timedelta(days=1)


def derive_status(*, intent: str, broken: bool, running: bool, phase: str) -> Status:
    """The one word shown for a job. Precedence: RUNNING, FINISHED, intent, BROKEN, phase."""
    if running:
        return Status.RUNNING
    if phase == "FINISHED":
        return Status.FINISHED
    if intent == Intent.DISABLED:
        return Status.DISABLED
    if intent == Intent.PAUSED:
        return Status.PAUSED
    if broken:
        return Status.BROKEN
    # A phase outside PHASES (a row written by hand) never raises: such a job is BROKEN.
    return _PHASE_STATUS.get(phase, Status.BROKEN)


def status_after(current: Any, values: Mapping[str, Any]) -> str:
    """The ``status`` column once ``values`` are written over ``current`` (a job row or a
    Job): intent, broken, running and phase from ``values`` where given, else as they are.
    Every write that may move one of them sets status through this."""

    def field(name: str) -> Any:
        return values[name] if name in values else getattr(current, name)

    return derive_status(
        intent=field("intent"),
        broken=bool(field("broken")),
        running=bool(field("running")),
        phase=field("phase"),
    ).value


def is_due_for_schedule(
    *,
    intent: str,
    broken: bool,
    running: bool,
    phase: str,
    next_run: datetime | None,
    now: datetime,
) -> bool:
    """Whether a runner may start a scheduled (not run-now) run."""
    return (
        intent == Intent.ENABLED
        and not broken
        and not running
        and phase not in ("ABORTED", "FINISHED")
        and next_run is not None
        and next_run <= now
    )


def halted_reason(*, intent: str, broken: bool, phase: str) -> str | None:
    """Why no scheduled run will start (None when the schedule is live).

    The same conditions as ``is_due_for_schedule``, worded for an operator who
    asks for the next runs of a job that has none until someone acts.
    """
    if phase == "FINISHED":
        return "FINISHED: the schedule has no further slot"
    if intent == Intent.DISABLED:
        return "DISABLED: no run starts until enable"
    if intent == Intent.PAUSED:
        return "PAUSED: no run starts until resume"
    if broken:
        return "BROKEN: no run starts until broken --off (or a successful run-now)"
    if phase == "ABORTED":
        return "ABORTED: no run starts until resume, enable or run-now"
    return None


def backoff_delay(failures: int) -> timedelta:
    """DBMS_JOB's retry delay after the ``failures``-th failure in a row: 1, 2, 4 ... minutes."""
    if failures <= 0:
        return timedelta(0)
    delay = BACKOFF_BASE * (2 ** min(failures - 1, 20))
    return min(delay, BACKOFF_CAP)


def retry_time(failures: int, finished: datetime, next_regular: datetime | None) -> datetime:
    """When a failed job is tried again: after the backoff, but never after its next slot."""
    retry = finished + backoff_delay(failures)
    if next_regular is not None and next_regular < retry:
        return next_regular
    return retry


def status_marks(job: Job) -> tuple[str, ...]:
    """What the one status word hides and an operator must see, as plain words.

    While a job runs its status is RUNNING whatever the operator asked
    meanwhile; and PAUSED or DISABLED win over BROKEN. The words, in this
    order: ``paused`` or ``disabled`` (running: the run in flight finishes,
    then no new run starts), ``broken`` (the flag set while another status
    shows), ``removing`` (removed while running: the run is being aborted and
    the job is deleted when it ends) or else ``aborting`` (an abort is on its
    way to the run in flight). The console appends them to the status cell;
    ``jobtui list`` names them under its table.
    """
    marks: list[str] = []
    if job.running and job.intent == Intent.PAUSED:
        marks.append("paused")
    elif job.running and job.intent == Intent.DISABLED:
        marks.append("disabled")
    if job.broken and job.status is not Status.BROKEN:
        marks.append("broken")
    if job.running and job.remove_requested:
        marks.append("removing")
    elif job.running and job.abort_requested:
        marks.append("aborting")
    return tuple(marks)
