"""How the console writes times, durations and statuses (short enough for 80 columns)."""

from __future__ import annotations

from datetime import datetime, timedelta

import humanize
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from jobtui.core.model import Job, Outcome, Status
from jobtui.core.showtime import show_time, shown_next_run
from jobtui.core.transitions import status_marks

DASH = "—"

# Theme variable behind each status: every built-in theme defines these.
STATUS_VARIABLE: dict[Status, str] = {
    Status.ENABLED: "success",
    Status.SLEEPING: "success",
    Status.RESUMED: "success",
    Status.RUNNING: "accent",
    Status.PAUSED: "warning",
    Status.ABORTED: "warning",
    Status.DISABLED: "foreground-muted",
    Status.FINISHED: "foreground-muted",
    Status.ERROR: "error",
    Status.BROKEN: "error",
}

OUTCOME_VARIABLE: dict[Outcome, str] = {
    Outcome.OK: "success",
    Outcome.RUNNING: "accent",
    Outcome.FAILED: "error",
    Outcome.LOST: "error",
    Outcome.ABORTED: "warning",
    Outcome.SKIPPED: "foreground-muted",
}

_UNITS = (
    (" seconds", " s"),
    (" second", " s"),
    (" minutes", " min"),
    (" minute", " min"),
    (" hours", " h"),
    (" hour", " h"),
    (" days", " d"),
    (" day", " d"),
    (" months", " mo"),
    (" month", " mo"),
    (" years", " y"),
    (" year", " y"),
)


def short_delta(seconds: float) -> str:
    """A compact human duration: 0.42 s, 3 s, 2 min, 5 h, 3 d (humanize, abbreviated)."""
    seconds = abs(seconds)
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms" if seconds else "0 s"
    if seconds < 60:
        return f"{int(seconds)} s"
    text = humanize.naturaldelta(timedelta(seconds=seconds))
    text = text.replace("an ", "1 ").replace("a ", "1 ")
    for long, short in _UNITS:
        text = text.replace(long, short)
    return text


def duration(seconds: float | None) -> str:
    """A run's duration, or a dash."""
    if seconds is None:
        return DASH
    return short_delta(seconds)


def age(when: datetime | None, now: datetime) -> str:
    """ "5 s ago" (or "just now"), or a dash."""
    if when is None:
        return DASH
    delta = (now - when).total_seconds()
    if delta < 0:
        return f"in {short_delta(-delta)}"
    if delta < 1:
        return "just now"
    return f"{short_delta(delta)} ago"


def until(when: datetime | None, now: datetime) -> str:
    """ "in 3 s", "now" when due, or a dash."""
    if when is None:
        return DASH
    delta = (when - now).total_seconds()
    if delta <= 0:
        return "due now"
    if delta < 1:
        return "in <1 s"
    return f"in {short_delta(delta)}"


def next_run_text(job: Job, now: datetime) -> str:
    """The next-run column: a dash when nothing will run on schedule (a halted job:
    paused, broken, disabled, aborted, finished, or running with one of those decided)."""
    if job.run_now and not job.running:
        return "run now"
    return until(shown_next_run(job), now)


def last_run_text(job: Job, now: datetime) -> tuple[str, Outcome | None]:
    """The last-run column (age of the last finished run) and its outcome.

    While a job runs, its last cycle start is the run in flight's: the previous run
    is told by when it ended, so the age never belongs to another run than the outcome.
    """
    outcome = job.last_outcome
    if job.running:
        ended = job.last_cycle_finish
        started = job.this_run or job.last_cycle_start
        if ended is None or outcome is None or (started is not None and ended > started):
            return DASH, None
        return f"ended {age(ended, now)} {outcome.value}", outcome
    when = job.last_cycle_start or job.last_run
    if when is None or outcome is None:
        return DASH, None
    return f"{age(when, now)} {outcome.value}", outcome


def failures_text(job: Job) -> str:
    """The Fail column: ``1/3`` (failures in a row / the limit) up to the limit; past
    it, ``4, max 3`` (failures count on past the limit, e.g. run-now runs of a broken
    job: ``4/3`` would read as a contradiction)."""
    if job.failures <= job.max_failures:
        return f"{job.failures}/{job.max_failures}"
    return f"{job.failures}, max {job.max_failures}"


def failures_detail(job: Job) -> str:
    """The details screen's failures line, honest past the limit."""
    failures, limit = job.failures, job.max_failures
    if failures < limit:
        return f"{failures} in a row (BROKEN at {limit})"
    return f"{failures} in a row, limit {limit} reached: BROKEN until cleared (b)"


def runner_text(job: Job, now: datetime) -> str:
    """Who runs the job now and for how long (ticks every second), or a dash."""
    if not job.running:
        return DASH
    started = job.this_run or job.runner_start
    who = short_runner(job.runner_id)
    if job.runner_connection_id is not None:
        who += f" conn {job.runner_connection_id}"
    if started is None:
        return who
    return f"{short_delta((now - started).total_seconds())} on {who}"


def stamp(when: datetime | None, zone: str | None = None) -> str:
    """A full time stamp with its zone label: in ``zone`` (a job's time zone) where given,
    else UTC (``jobtui.core.showtime.show_time``); a dash for none."""
    if when is None:
        return DASH
    return show_time(when, zone)


def job_zone(job: Job) -> str | None:
    """The zone a job's times are shown in: its schedule's, else None (UTC)."""
    zone = getattr(job.schedule, "tz", None)
    return zone if isinstance(zone, str) and zone else None


def short_url(url: str, limit: int = 36) -> str:
    """Which scheduler the console steers, for the status line: the whole (masked) URL
    when it fits, else without its scheme, then without the port and the account, and
    last the host (or a SQLite path's directories) shortened; the database name is kept
    whole. Never a password, whatever the URL holds."""
    try:
        parsed = make_url(url)
    except ArgumentError:
        return url if len(url) <= limit else url[: limit - 1] + "…"
    if parsed.password is None and len(url) <= limit:
        return url
    if parsed.get_backend_name() == "sqlite":
        path = parsed.database or ":memory:"
        full = f"sqlite:///{path}"
        for candidate in (full, path):
            if len(candidate) <= limit:
                return candidate
        return "…/" + path.rsplit("/", 1)[-1]
    host = parsed.host or "localhost"
    database = parsed.database or "(no database)"
    port = f":{parsed.port}" if parsed.port else ""
    user = f"{parsed.username}@" if parsed.username else ""
    full = parsed.render_as_string(hide_password=True)
    for candidate in (
        full,
        f"{user}{host}{port}/{database}",
        f"{host}{port}/{database}",
        f"{host}/{database}",
    ):
        if len(candidate) <= limit:
            return candidate
    room = max(1, limit - len(database) - 2)
    return f"{host[:room]}…/{database}"


def short_runner(runner_id: str | None) -> str:
    """Runner ids are host:pid:name:token; host:pid is what an operator looks for."""
    if not runner_id:
        return DASH
    return ":".join(runner_id.split(":")[:2])


# The server's Event Scheduler (jobtui.core.events): an event's status and the
# scheduler's state, by theme variable.
EVENT_STATUS_VARIABLE: dict[str, str] = {
    "ENABLED": "success",
    "DISABLED": "foreground-muted",
    "SLAVESIDE_DISABLED": "warning",
}

SCHEDULER_VARIABLE: dict[str, str] = {"ON": "success", "OFF": "warning", "DISABLED": "error"}


def event_schedule_text(
    kind: str, value: str | None, field: str | None, at: datetime | None
) -> str:
    """An event's schedule, short, for a column: ``every 5 MINUTE``, ``at 2026-12-03 14:00``
    (UTC, as every time in the console)."""
    if kind == "every":
        return f"every {(value or '?').strip(chr(39))} {field or '?'}"
    return f"at {at.strftime('%Y-%m-%d %H:%M')}" if at is not None else "at ?"


def status_words(job: Job) -> str:
    """The status as the table shows it: the word and what it hides (``RUNNING aborting``)."""
    marks = " ".join(("⏸ paused" if mark == "paused" else mark) for mark in status_marks(job))
    return f"{job.status.value} {marks}".strip()


def action_notice(verb: str, job: Job, now: datetime) -> str:
    """What an operator's action left (the row the store returned), in words: the state
    after it, never the one before (``aborting long-etl: its run in flight is being
    stopped``, not ``long-etl is RUNNING``)."""
    name = job.name
    running = job.running
    after = f"(now {status_words(job)})"
    if verb == "pause":
        if running:
            return f"paused {name}: the run in flight finishes, then none starts until resumed (p)"
        return f"paused {name}: no run starts until resumed (p)"
    if verb in ("resume", "enable"):
        return f"{verb}d {name}: next run {next_run_text(job, now)} {after}"
    if verb == "abort":
        if running:
            return f"aborting {name}: its run in flight is being stopped; none until resumed (p)"
        return f"aborted {name}: no run until resumed (p)"
    if verb == "run now":
        if running:
            return f"run now: {name} runs again once its run in flight ends"
        return f"run now requested for {name}: the next free runner starts it"
    if verb == "broken on":
        return f"marked {name} broken: no run on schedule until cleared (b) {after}"
    if verb == "broken off":
        return f"cleared broken on {name}: failures reset, next run {next_run_text(job, now)}"
    if verb == "removal pending":
        return f"removing {name}: its run in flight is aborted, then the job is deleted"
    if verb == "create":
        return f"created {name}: next run {next_run_text(job, now)} {after}"
    if verb == "change":
        return f"changed {name}: next run {next_run_text(job, now)} {after}"
    return f"{verb}: {name} {after}"
