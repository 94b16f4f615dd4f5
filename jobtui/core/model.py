"""The things jobtui talks about: statuses, what a job runs, its schedule, jobs and runs.

Plain dataclasses with no database or UI behind them. The store turns rows
into these and back; the console and the command line only ever see these.
"""

from __future__ import annotations

import enum
import json
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from jobtui.core.errors import InvalidInput
from jobtui.core.timeutil import aware, iso


class Status(enum.StrEnum):
    """The status column: what a stored-procedure job runner shows (ENABLED to
    FINISHED) plus DBMS_JOB's BROKEN.

    Operator intent (``Job.intent``: ENABLED, DISABLED, PAUSED) and what a
    runner is doing (``Job.running``) are separate columns; ``status`` is the
    one word that combines them for people. docs/architecture.md lists every
    transition.
    """

    ENABLED = "ENABLED"  # submitted or enabled, waiting for its first run
    DISABLED = "DISABLED"  # operator switched it off; keeps no runner busy
    SLEEPING = "SLEEPING"  # ran at least once, waiting for the next slot
    RUNNING = "RUNNING"  # a runner is executing it now
    PAUSED = "PAUSED"  # operator paused it; no new runs start
    RESUMED = "RESUMED"  # operator resumed it; back on schedule from the next slot
    ABORTED = "ABORTED"  # operator aborted it; no runs until resume/enable/run-now
    ERROR = "ERROR"  # the last run failed; a retry is scheduled (backoff)
    FINISHED = "FINISHED"  # the schedule has no further slot (once, window over, expr NULL)
    BROKEN = "BROKEN"  # failed max_failures times, or marked broken; not run until cleared


class Intent(enum.StrEnum):
    """What the operator wants (the ``intent`` column)."""

    ENABLED = "ENABLED"
    DISABLED = "DISABLED"
    PAUSED = "PAUSED"


class Outcome(enum.StrEnum):
    """A run-log row's outcome. ``running`` only while the run is in flight."""

    RUNNING = "running"
    OK = "ok"
    FAILED = "failed"
    ABORTED = "aborted"
    SKIPPED = "skipped"
    LOST = "lost"


WhatKind = Literal["call", "sql", "action"]
ScheduleKind = Literal["every", "cron", "expr", "once"]

IDENTIFIER_RE = re.compile(r"[A-Za-z0-9_$]{1,64}")
JOB_NAME_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]{0,63}")
ACTION_NAME_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.:\-]{0,127}")
MAX_SQL_LENGTH = 16_000
MAX_DESCRIPTION_LENGTH = 2_000
MAX_ARGS = 32
MAX_ARG_LENGTH = 4_000


# DBMS_JOB passes the job's number as the parameter `job` in WHAT ('p(job);'). jobtui
# binds no such parameter, so a CALL naming it would fail every run; submit refuses it.
# The test: a CALL's arguments without their quoted strings hold `job` as a bare word
# (not qualified, not a function's name). The SQL interface applies the same (sqltext).
QUOTED_RE = "'(?:[^'\\\\]|\\\\.|'')*'|\"(?:[^\"\\\\]|\\\\.|\"\")*\""
JOB_PARAM_RE = r"(?i)(^|[^A-Za-z0-9_$.@`])job([^A-Za-z0-9_$(`]|$)"
_CALL_ARGS_RE = re.compile(r"^\s*call\s+[^(]*\((.*)\)\s*;?\s*$", re.IGNORECASE | re.DOTALL)
JOB_PARAM_MESSAGE = (
    "what passes job, DBMS_JOB's job number: jobtui does not bind such a parameter. "
    "Write the number as a literal once the job exists, e.g. CALL submit(@j, 'CALL app.p(0)', "
    "...) then CALL what(@j, CONCAT('CALL app.p(', @j, ')'))"
)


def passes_job_number(statement: str) -> bool:
    """Whether ``statement`` is a CALL passing DBMS_JOB's ``job`` as an argument."""
    found = _CALL_ARGS_RE.match(statement)
    if found is None:
        return False
    bare = re.sub(QUOTED_RE, "''", found.group(1))
    return re.search(JOB_PARAM_RE, bare) is not None


def check_job_name(name: str) -> str:
    """Return ``name`` if it is an acceptable job name, else raise InvalidInput."""
    if not isinstance(name, str) or not JOB_NAME_RE.fullmatch(name):
        raise InvalidInput(
            f"invalid job name {name!r}: use 1-64 characters from A-Z a-z 0-9 _ . -, "
            "starting with a letter, digit or underscore"
        )
    return name


def check_identifier(value: str, what: str) -> str:
    """Validate one SQL identifier (schema or procedure name) as the design fixes it."""
    if not isinstance(value, str) or not IDENTIFIER_RE.fullmatch(value):
        raise InvalidInput(
            f"invalid {what} {value!r}: identifiers are 1-64 characters from A-Z a-z 0-9 _ $"
        )
    return value


def quote_identifier(value: str) -> str:
    """Backtick-quote an identifier that ``check_identifier`` accepted."""
    check_identifier(value, "identifier")
    return f"`{value}`"


def split_procedure(target: str) -> tuple[str, str]:
    """Split ``schema.proc`` into its validated parts."""
    if not isinstance(target, str) or target.count(".") != 1:
        raise InvalidInput(
            f"invalid procedure {target!r}: expected SCHEMA.PROC, each part 1-64 characters "
            "from A-Z a-z 0-9 _ $"
        )
    schema, proc = target.split(".")
    return check_identifier(schema, "schema name"), check_identifier(proc, "procedure name")


@dataclass(frozen=True)
class What:
    """What a job runs: a stored procedure call, one SQL statement, or a registered action."""

    kind: WhatKind
    target: str
    args: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in ("call", "sql", "action"):
            raise InvalidInput(f"invalid what kind {self.kind!r}: accepted are call, sql, action")
        if self.kind == "call":
            split_procedure(self.target)
        elif self.kind == "sql":
            # stored as checked: trimmed, without the tolerated trailing semicolon
            object.__setattr__(self, "target", check_sql(self.target))
        else:
            if not isinstance(self.target, str) or not ACTION_NAME_RE.fullmatch(self.target):
                raise InvalidInput(
                    f"invalid action name {self.target!r}: 1-128 characters from "
                    "A-Z a-z 0-9 _ . : -"
                )
        if self.args and self.kind == "sql":
            # actions take arguments too (demo.sleep SECONDS, demo.export_csv TABLE PATH)
            raise InvalidInput("--arg is only accepted with --call or --action, not with --sql")
        if len(self.args) > MAX_ARGS:
            raise InvalidInput(f"too many arguments ({len(self.args)}): at most {MAX_ARGS}")
        for arg in self.args:
            if not isinstance(arg, str) or len(arg) > MAX_ARG_LENGTH or "\x00" in arg:
                raise InvalidInput(
                    f"invalid argument {arg!r}: text of at most {MAX_ARG_LENGTH} characters "
                    "without NUL"
                )

    def describe(self) -> str:
        if self.kind == "call":
            args = ", ".join(repr(a) for a in self.args)
            return f"call {self.target}({args})"
        if self.kind == "sql":
            return f"sql {self.target}"
        if self.args:
            return f"action {self.target} " + " ".join(repr(a) for a in self.args)
        return f"action {self.target}"

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "target": self.target, "args": list(self.args)}

    def args_json(self) -> str:
        return json.dumps(list(self.args))


def check_sql(statement: str) -> str:
    """Accept exactly one SQL statement (a trailing semicolon is tolerated and dropped)."""
    if not isinstance(statement, str) or not statement.strip():
        raise InvalidInput("empty SQL statement: --sql takes one SQL statement")
    if "\x00" in statement:
        raise InvalidInput("invalid SQL statement: it contains a NUL character")
    if len(statement) > MAX_SQL_LENGTH:
        raise InvalidInput(f"SQL statement too long: at most {MAX_SQL_LENGTH} characters")
    body = strip_trailing_semicolon(statement)
    if not body:
        raise InvalidInput("empty SQL statement: --sql takes one SQL statement")
    if _has_unquoted_semicolon(body):
        raise InvalidInput(
            "more than one SQL statement: --sql takes exactly one (wrap several in a "
            "stored procedure and use --call)"
        )
    return body


def strip_trailing_semicolon(statement: str) -> str:
    body = statement.strip()
    while body.endswith(";"):
        body = body[:-1].rstrip()
    return body


def _has_unquoted_semicolon(text: str) -> bool:
    quote: str | None = None
    i = 0
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\" and quote != "`":
                i += 2
                continue
            if ch == quote:
                quote = None
        elif ch in ("'", '"', "`"):
            quote = ch
        elif ch == ";":
            return True
        i += 1
    return False


@dataclass(frozen=True)
class Schedule:
    """When a job runs. Times are timezone-aware (UTC in storage)."""

    kind: ScheduleKind
    every: float | None = None
    cron: str | None = None
    tz: str | None = None
    expr: str | None = None
    start: datetime | None = None
    finish: datetime | None = None

    def describe(self) -> str:
        """The schedule in words, as the console and ``list`` show it."""
        return describe_schedule(self)

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "every": self.every,
            "cron": self.cron,
            "tz": self.tz,
            "expr": self.expr,
            "start": iso(self.start),
            "finish": iso(self.finish),
            "text": self.describe(),
        }


# The schedule of a job whose schedule columns could not be read (jobtui.core.row_checks):
# no slot ever (a "once" without window, and no runner claims such a job).
UNREADABLE = Schedule("once")


def describe_schedule(schedule: Schedule) -> str:
    """The schedule in words: "every 5 s", "cron */5 * * * * UTC", "expr NOW() + ..."."""
    if schedule is UNREADABLE:
        return "invalid (see the job's problem)"
    if schedule.kind == "every":
        assert schedule.every is not None
        text = f"every {format_seconds(schedule.every)}"
    elif schedule.kind == "cron":
        text = f"cron {schedule.cron} {schedule.tz or 'UTC'}"
    elif schedule.kind == "expr":
        text = f"expr {schedule.expr}"
    else:
        text = "once" if not schedule.start else f"once at {_short(schedule.start)}"
    if schedule.kind != "once" and schedule.start:
        text += f" from {_short(schedule.start)}"
    if schedule.finish:
        text += f" until {_short(schedule.finish)}"
    return text


def format_seconds(seconds: float) -> str:
    """5 -> "5 s", 0.5 -> "0.5 s", 300 -> "5 min", 7200 -> "2 h", 86400 -> "1 d"."""
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)} {unit}"
    if seconds == int(seconds):
        return f"{int(seconds)} s"
    return f"{seconds:g} s"


def _short(when: datetime) -> str:
    return aware(when).strftime("%Y-%m-%d %H:%M:%S UTC")


@dataclass(slots=True)
class Job:
    """One row of the job table, as the store reads it."""

    id: int
    owner: str
    name: str
    description: str
    what: What
    schedule: Schedule
    status: Status
    intent: Intent
    broken: bool
    failures: int
    max_failures: int
    cycles: int
    created: datetime
    last_run: datetime | None = None  # DBMS_JOB LAST_DATE: start of the last successful run
    this_run: datetime | None = None  # DBMS_JOB THIS_DATE: start of the run in flight
    next_run: datetime | None = None  # DBMS_JOB NEXT_DATE
    total_time: float = 0.0  # seconds spent running, all runs
    last_outcome: Outcome | None = None
    last_error: str | None = None
    last_duration: float | None = None
    last_cycle_start: datetime | None = None
    last_cycle_finish: datetime | None = None
    runner_id: str | None = None
    runner_connection_id: int | None = None
    runner_start: datetime | None = None
    runner_finish: datetime | None = None
    run_now: bool = False
    abort_requested: bool = False
    broken_reason: str | None = None
    updated: datetime | None = None
    phase: str = "ENABLED"  # see jobtui.core.transitions
    running: bool = False
    anchor: datetime | None = None  # grid origin of an every-N schedule
    remove_requested: bool = False  # removed while running: deleted when that run ends
    # The first thing wrong with the row as read (column, value, what is accepted), or
    # None: such a job shows BROKEN with placeholders for what could not be read, and
    # no runner claims it (jobtui.core.row_checks).
    problem: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The stable ``--json`` shape (docs/cli.md documents every field)."""
        return {
            "id": self.id,
            "owner": self.owner,
            "name": self.name,
            "description": self.description,
            "status": self.status.value,
            "intent": self.intent.value,
            "phase": self.phase,
            "running": self.running,
            "broken": self.broken,
            "broken_reason": self.broken_reason,
            "failures": self.failures,
            "max_failures": self.max_failures,
            "cycles": self.cycles,
            "created": iso(self.created),
            "last_run": iso(self.last_run),
            "this_run": iso(self.this_run),
            "next_run": iso(self.next_run),
            "total_time": round(self.total_time, 6),
            "last_outcome": self.last_outcome.value if self.last_outcome else None,
            "last_error": self.last_error,
            "last_duration": self.last_duration,
            "runner": self.runner_id,
            "runner_connection_id": self.runner_connection_id,
            "run_now": self.run_now,
            "abort_requested": self.abort_requested,
            "remove_requested": self.remove_requested,
            "schedule": self.schedule.to_dict(),
            "what": self.what.to_dict(),
            "problem": self.problem,
        }


@dataclass
class Run:
    """One row of the run log."""

    id: int
    job_id: int
    job: str
    owner: str
    scheduled_for: datetime
    started: datetime | None
    finished: datetime | None
    outcome: Outcome
    error: str | None = None
    runner: str | None = None
    skipped: int = 0
    manual: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def duration(self) -> float | None:
        if self.started is None or self.finished is None:
            return None
        return (self.finished - self.started).total_seconds()

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "job_id": self.job_id,
            "job": self.job,
            "owner": self.owner,
            "scheduled_for": iso(self.scheduled_for),
            "started": iso(self.started),
            "finished": iso(self.finished),
            "duration": None if self.duration is None else round(self.duration, 6),
            "outcome": self.outcome.value,
            "error": self.error,
            "runner": self.runner,
            "skipped": self.skipped,
            "manual": self.manual,
        }
