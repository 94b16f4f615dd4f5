"""How jobtui shows a job's times to people: the next run of a halted job, and zones.

Two decisions every display follows (the SQL views, ``jobtui list/show``, the
console):

- A halted job shows no next run. Halted means no scheduled run will start
  until an operator acts: the job is BROKEN, DISABLED, PAUSED, ABORTED or
  FINISHED, or it is running now with one of those already decided (paused or
  disabled while running, marked broken, an abort pending). The stored
  ``next_run`` is kept; only what is shown is empty.
- A time is shown with its zone label: in the job's own zone where it has one
  (``2026-12-05 03:00:00 CET`` for Europe/Paris), else in UTC
  (``2026-12-05 02:00:00 UTC``).

Pure functions: no database, no UI.
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from jobtui.core.model import Intent, Status
from jobtui.core.timeutil import aware

HALTED_STATUSES = frozenset(
    {Status.BROKEN, Status.DISABLED, Status.PAUSED, Status.ABORTED, Status.FINISHED}
)
# phases after which no scheduled run starts until an operator acts
HALTED_PHASES = frozenset({"ABORTED", "FINISHED"})
TIME_FORMAT = "%Y-%m-%d %H:%M:%S"
NO_TIME = "-"


class _Halting(Protocol):
    """What ``halted`` reads from a job (``jobtui.core.model.Job`` has all of it)."""

    status: Status
    intent: Intent
    broken: bool
    phase: str
    abort_requested: bool


class _NextRun(_Halting, Protocol):
    next_run: datetime | None


def halted(job: _Halting) -> bool:
    """Whether no scheduled run of ``job`` will start until an operator acts.

    True for the statuses BROKEN, DISABLED, PAUSED, ABORTED and FINISHED, and for a
    RUNNING job whose operator already paused, disabled, broke or aborted it (the
    status says RUNNING until that run ends; the next run will not come).
    """
    if job.status in HALTED_STATUSES:
        return True
    return (
        job.intent != Intent.ENABLED
        or bool(job.broken)
        or job.phase in HALTED_PHASES
        or bool(job.abort_requested)
    )


def shown_next_run(job: _NextRun) -> datetime | None:
    """The next run to show: None for a halted job, else the stored next run."""
    if halted(job):
        return None
    return job.next_run


def zone_of(zone: str | None) -> ZoneInfo | None:
    """The zone named ``zone``, or None (meaning UTC) when it is empty or unknown.

    Rows are untrusted: an unknown name never raises here, the time is shown in UTC
    with its UTC label, so what is shown never claims a zone it was not computed in.
    """
    if not zone or not isinstance(zone, str):
        return None
    try:
        return ZoneInfo(zone)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        return None


def show_time(dt: datetime | None, zone: str | None = None) -> str:
    """``dt`` as ``YYYY-MM-DD HH:MM:SS LABEL`` in ``zone`` (an IANA name), else UTC.

    The label is the zone's abbreviation at that instant (``CET``, ``CEST``,
    ``EST``); where the zone has only a numeric one (``+04``), the zone's name is
    shown instead (``Asia/Dubai``). A naive ``dt`` is UTC, as stored. ``None`` is
    shown as ``-``.
    """
    if dt is None:
        return NO_TIME
    value = aware(dt)
    tz = zone_of(zone)
    if tz is None:
        return f"{value.strftime(TIME_FORMAT)} UTC"
    local = value.astimezone(tz)
    label = local.tzname() or ""
    if not label or label[0] in "+-" or label[0].isdigit():
        label = str(zone)
    return f"{local.strftime(TIME_FORMAT)} {label}"
