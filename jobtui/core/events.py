"""The server's own Event Scheduler events beside jobtui's jobs: list them, switch them
on or off, adopt one as a jobtui job (MySQL/MariaDB; SQLite has none). docs/events.md.

The statements are the backend's (``Backend.read_events``, ``event_scheduler``,
``set_event_enabled``); here: what an event is, its next run, and adoption.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta, tzinfo
from typing import TYPE_CHECKING, Any

from jobtui.core import event_times as et
from jobtui.core.dberrors import db_errors
from jobtui.core.errors import InvalidInput, JobNotFound, PermissionDenied
from jobtui.core.jobdefs import JobSpec
from jobtui.core.model import IDENTIFIER_RE, JOB_NAME_RE, Job, Schedule, What, check_sql
from jobtui.core.schedules import MAX_EVERY
from jobtui.core.timeutil import aware, iso

if TYPE_CHECKING:
    from jobtui.core.store import JobStore

MAX_NAME = 64
# A body takes a named lock when it calls GET_LOCK (its author's overlap guard).
_GET_LOCK = re.compile(r"\bGET_LOCK\s*\(", re.IGNORECASE)
_COMPOUND = re.compile(r"^\s*(?:[A-Za-z0-9_$]+\s*:\s*)?BEGIN\b", re.IGNORECASE)
_IDENT = r"(?:`(?:[^`]|``)+`|[A-Za-z0-9_$]+)"
_CALL = re.compile(
    rf"\s*CALL\s+(?:(?P<schema>{_IDENT})\s*\.\s*)?(?P<proc>{_IDENT})\s*"
    r"(?:\((?P<args>.*)\))?\s*;?\s*\Z",
    re.IGNORECASE | re.DOTALL,
)
_LITERAL = re.compile(
    r"\s*(?:(?P<num>[+-]?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)|'(?P<str>(?:[^'\\]|\\.|'')*)')\s*(?:,|\Z)",
    re.DOTALL,
)
_ESCAPES = {"0": "\0", "n": "\n", "r": "\r", "t": "\t", "Z": "\x1a", "b": "\b"}


@dataclass(frozen=True)
class Event:
    """One Event Scheduler event, as information_schema.EVENTS shows it (times in UTC)."""

    schema: str
    name: str
    definer: str  # 'user@host' as information_schema shows it
    # ENABLED | DISABLED | SLAVESIDE_DISABLED (a replica's copy; on a Galera cluster: made
    # or last enabled on another node, where it runs; enabling it here moves it here)
    status: str
    kind: str  # "every" (RECURRING) | "at" (ONE TIME)
    interval_value: str | None  # as the server shows it: '5', '1:30'
    interval_field: str | None  # SECOND, MINUTE, ..., HOUR_MINUTE, YEAR_MONTH, ...
    execute_at: datetime | None
    starts: datetime | None
    ends: datetime | None
    on_completion: str  # PRESERVE | NOT PRESERVE
    last_executed: datetime | None
    body: str
    time_zone: str
    next_run: datetime | None  # None: no slot left, or not enabled
    overlap_guard: bool  # the body, or the procedure it CALLs, takes a named lock (GET_LOCK)
    # its TIME_ZONE keeps one UTC offset (no daylight saving), so its wall-clock slots
    # are a fixed grid in UTC too
    fixed_zone: bool = True
    # the body CALLs a procedure whose text this account may not read: whether that
    # procedure takes a named lock is unknown
    guard_unknown: str | None = None

    @property
    def full_name(self) -> str:
        return f"{self.schema}.{self.name}"

    @property
    def recurring(self) -> bool:
        return self.kind == "every"

    @property
    def schedule(self) -> str:
        """ "every 5 MINUTE starts ... ends ..." or "at ..." (UTC)."""
        if self.kind == "at":
            return f"at {_short(self.execute_at)}"
        value = (self.interval_value or "").strip("'")
        text = f"every {value} {self.interval_field or ''}".rstrip()
        if self.starts is not None:
            text += f" starts {_short(self.starts)}"
        if self.ends is not None:
            text += f" ends {_short(self.ends)}"
        return text

    @property
    def overlap_warning(self) -> str | None:
        """Why a recurring event without a named lock may overlap itself (None otherwise)."""
        if not self.recurring or self.overlap_guard:
            return None
        if self.guard_unknown is not None:
            return (
                f"{self.full_name} calls {self.guard_unknown}, whose text this account may not "
                "read: unless it takes a named lock (GET_LOCK), a run that outlasts the "
                "event's interval overlaps the next"
            )
        return (
            f"{self.full_name} takes no named lock (GET_LOCK): a run that outlasts its "
            "interval overlaps the next"
        )

    def to_dict(self) -> dict[str, Any]:
        """The ``--json`` row (docs/cli.md lists its fields)."""
        return {
            "schema": self.schema,
            "name": self.name,
            "definer": self.definer,
            "status": self.status,
            "schedule": self.schedule,
            "next_run": iso(self.next_run),
            "last_executed": iso(self.last_executed),
            "body": self.body,
            "overlap_guard": self.overlap_guard,
            "on_completion": self.on_completion,
            "time_zone": self.time_zone,
        }


@dataclass(frozen=True)
class EventList:
    """The events an account sees, and whether the server runs them at all."""

    scheduler: str  # @@global.event_scheduler: ON | OFF | DISABLED
    events: list[Event]

    @property
    def running(self) -> bool:
        return self.scheduler == "ON"


@dataclass(frozen=True)
class Adoption:
    """What ``adopt`` did: the new job, the event as it left it, and what to tell."""

    job: Job
    event: Event
    notes: tuple[str, ...]


def _short(when: datetime | None) -> str:
    return "-" if when is None else aware(when).strftime("%Y-%m-%d %H:%M:%S UTC")


# ---------------------------------------------------------------------- names


def check_schema(schema: str) -> str:
    """A schema name to filter by: 1-64 characters, no NUL."""
    if not isinstance(schema, str) or not 0 < len(schema) <= MAX_NAME or "\x00" in schema:
        raise InvalidInput(f"invalid schema {schema!r}: expected a schema name of 1-64 characters")
    return schema


def split_name(full_name: str) -> tuple[str, str]:
    """``SCHEMA.NAME`` -> (schema, name): each 1-64 characters, neither containing a dot."""
    parts = full_name.split(".") if isinstance(full_name, str) else []
    if len(parts) != 2 or not all(
        0 < len(p) <= MAX_NAME and "\x00" not in p and p.strip() == p for p in parts
    ):
        raise InvalidInput(
            f"invalid event {full_name!r}: expected SCHEMA.NAME, e.g. shop.purge_sessions "
            "(each part 1-64 characters, without dots; `jobtui events list` shows the names)"
        )
    return parts[0], parts[1]


# ---------------------------------------------------------------------- listing


def called_procedure(body: str, event_schema: str) -> tuple[str, str] | None:
    """(schema, procedure) when the body is one ``CALL [schema.]proc(...)``, else None."""
    call = _CALL.match(body)
    if call is None:
        return None
    schema = _unquote(call.group("schema")) if call.group("schema") else event_schema
    return schema, _unquote(call.group("proc"))


def _guard(
    body: str, schema: str, procedures: dict[tuple[str, str], str | None]
) -> tuple[bool, str | None]:
    """(whether the body takes a named lock, itself or in the one procedure it CALLs,
    as docs/events.md recommends; the procedure's name when its text is unreadable)."""
    if _GET_LOCK.search(body):
        return True, None
    called = called_procedure(body, schema)
    # routine names are case-insensitive: CALL Purge() calls purge
    known = {(s, n.lower()): text for (s, n), text in procedures.items()}
    if called is None or (called[0], called[1].lower()) not in known:
        return False, None  # no CALL, or no such procedure: nothing guards it
    text = known[(called[0], called[1].lower())]
    if text is None:
        return False, ".".join(called)
    return bool(_GET_LOCK.search(text)), None


def _from_row(
    row: dict[str, Any],
    system_zone: str,
    now: datetime,
    procedures: dict[tuple[str, str], str | None] | None = None,
) -> Event:
    time_zone = str(row["time_zone"] or "SYSTEM")
    tz = et.zone(time_zone, system_zone)
    fallback = _server_offset(row)

    def utc(column: str) -> datetime | None:
        local = row[column]
        if local is None:
            return None
        converted = row.get(f"{column}_utc")
        if converted is not None:
            return converted.replace(tzinfo=UTC)
        return et.to_utc(local, tz, fallback)

    kind = "at" if str(row["event_type"]).upper() == "ONE TIME" else "every"
    body = str(row["body"] or "")
    status = str(row["status"] or "").upper()
    guarded, unknown = _guard(body, str(row["schema"]), procedures or {})
    event = Event(
        schema=str(row["schema"]),
        name=str(row["name"]),
        definer=str(row["definer"] or ""),
        status=status,
        kind=kind,
        interval_value=None if row["interval_value"] is None else str(row["interval_value"]),
        interval_field=None if row["interval_field"] is None else str(row["interval_field"]),
        execute_at=utc("execute_at"),
        starts=utc("starts"),
        ends=utc("ends"),
        on_completion=str(row["on_completion"] or ""),
        last_executed=utc("last_executed"),
        body=body,
        time_zone=time_zone,
        next_run=None,
        overlap_guard=guarded,
        fixed_zone=et.fixed_offset(tz, now.year),  # a zone Python does not know: False
        guard_unknown=unknown,
    )
    if status != "ENABLED":
        return event
    return replace(event, next_run=_next_run(event, row, tz, fallback, now))


def _server_offset(row: dict[str, Any]) -> timedelta | None:
    """The event zone's offset (local minus UTC) as the server converted one of its times."""
    for column in ("starts", "execute_at", "ends", "last_executed"):
        local, utc = row.get(column), row.get(f"{column}_utc")
        if local is not None and utc is not None:
            return local - utc
    return None


def _next_run(
    event: Event,
    row: dict[str, Any],
    tz: tzinfo | None,
    fallback: timedelta | None,
    now: datetime,
) -> datetime | None:
    """The event's next slot at or after ``now`` (UTC), or None when it has none left."""
    if event.kind == "at":
        if event.execute_at is None or event.last_executed is not None:
            return None
        return event.execute_at if event.execute_at >= now else None
    interval = event_interval(event)
    if interval is None or row["starts"] is None:
        return None
    local = et.first_slot_at_or_after(row["starts"], interval, et.to_local(now, tz, fallback))
    if row["ends"] is not None and local > row["ends"]:
        return None
    return et.to_utc(local, tz, fallback)


def event_interval(event: Event) -> et.Interval | None:
    """The event's EVERY, or None (a one-time event, or a value the server would not show)."""
    if event.interval_value is None or event.interval_field is None:
        return None
    try:
        return et.parse_interval(event.interval_value, event.interval_field)
    except ValueError:
        return None


def available(store: JobStore) -> bool:
    """Whether the store's database has events at all (False on SQLite: every function
    here raises InvalidInput there, with ``store.backend.no_events`` as the reason)."""
    return store.backend.has_events


_Read = tuple[str, str, list[Any], dict[tuple[str, str], str | None]]


def _read(store: JobStore, schema: str | None, *, poll: bool) -> _Read:
    def query(conn: Any) -> _Read:
        scheduler, system_zone = store.backend.event_scheduler(conn)
        rows = store.backend.read_events(conn, schema)
        called = {called_procedure(str(r["body"] or ""), str(r["schema"])) for r in rows}
        names = sorted(c for c in called if c is not None)
        return scheduler, system_zone, rows, store.backend.read_procedure_texts(conn, names)

    if poll:
        return store.poll(query)
    with store.read() as conn:
        return query(conn)


@db_errors
def list_events(
    store: JobStore,
    *,
    schema: str | None = None,
    now: datetime | None = None,
    poll: bool = False,
) -> EventList:
    """The events this account sees (EVENT privilege on their schema), of ``schema`` only
    when given, with their next run as at ``now``. ``poll``: on the store's polling
    connection (the console, again and again). InvalidInput on SQLite."""
    if schema is not None:
        check_schema(schema)
    now = aware(now or store.now())
    scheduler, system_zone, rows, procedures = _read(store, schema, poll=poll)
    return EventList(scheduler, [_from_row(row, system_zone, now, procedures) for row in rows])


@db_errors
def get_event(store: JobStore, full_name: str, *, now: datetime | None = None) -> Event:
    """One event by ``SCHEMA.NAME``; InvalidInput when the account sees no such event."""
    schema, name = split_name(full_name)
    for event in list_events(store, schema=schema, now=now).events:
        if event.name == name:
            return event
    raise InvalidInput(
        f"no event {full_name}: `jobtui events list` shows the events this account sees "
        f"(it needs the EVENT privilege on schema {schema} to see its events)"
    )


# ---------------------------------------------------------------------- switching


@db_errors
def set_enabled(store: JobStore, full_name: str, enabled: bool) -> Event:
    """ALTER EVENT ... ENABLE/DISABLE, keeping the event's definer; the event after."""
    store.check_writable()
    event = get_event(store, full_name)
    wanted = "ENABLED" if enabled else "DISABLED"
    if event.status == wanted:
        return event
    if enabled and event.status == "SLAVESIDE_DISABLED" and not store.backend.cluster:
        raise InvalidInput(
            f"event {full_name} is SLAVESIDE_DISABLED: it is a replica's copy of a primary's "
            "event, which runs on the primary; enable it here only after a failover, with "
            "ALTER EVENT yourself"
        )
    _alter(store, event, enabled)
    return get_event(store, full_name)


def _alter(store: JobStore, event: Event, enabled: bool) -> None:
    with store.engine.connect() as conn:
        store.backend.set_event_enabled(conn, event.schema, event.name, event.definer, enabled)
        conn.commit()


# ---------------------------------------------------------------------- adopting


@db_errors
def adopt(store: JobStore, full_name: str, *, keep_event: bool = False) -> Adoption:
    """Make event ``SCHEMA.NAME`` a jobtui job (docs/events.md).

    Everything is checked first (definer, schedule, body, name); then the event is
    disabled, its LAST_EXECUTED read, and the job created with its first run at the
    event's first slot after that (a slot missed meanwhile runs at once); if the job
    cannot be created the event is enabled again. ``keep_event``: the event is left
    alone and the job created DISABLED. A disabled event gives a disabled job.

    The job runs with exactly the event's rights: its owner is the event's definer (only
    the definer's own session adopts) and its routines set no role, whatever role the
    adopting session has (an event runs with its definer's own grants, no role).
    """
    store.check_writable()
    now = store.now()
    event = get_event(store, full_name, now=now)
    check_adopter(event, store.owner)
    if event.status == "SLAVESIDE_DISABLED" and not store.backend.cluster:
        raise InvalidInput(
            f"event {full_name} is SLAVESIDE_DISABLED (a replica's copy of a primary's "
            "event): adopt it on the primary"
        )
    schedule = adopted_schedule(event, now)
    what = adopted_what(event, store.schema_name)
    job_name, notes = _job_name(store, event)
    store.check_what(what)
    # the job runs with exactly the event's rights: its routines set no role
    spec = JobSpec(
        job_name,
        what,
        schedule,
        description=f"adopted from event {full_name}",
        session_role=False,
    )
    enabled = event.status == "ENABLED"
    if keep_event or not enabled:
        job = store.submit(replace(spec, disabled=True))
        if keep_event and enabled:
            notes.append(
                f"the event is left enabled and job {job_name} was created DISABLED, so that "
                f"both never run one slot: disable or drop the event, then `jobtui enable "
                f"{job_name}`"
            )
        else:
            notes.append(
                f"the event was DISABLED, so job {job_name} was created DISABLED: "
                f"`jobtui enable {job_name}` to start it"
            )
        return Adoption(job, event, tuple(notes))
    _alter(store, event, False)
    try:
        listed = list_events(store, schema=event.schema, now=now)
        disabled = next(e for e in listed.events if e.name == event.name)
        first = first_after(disabled, store.now(), scheduler_on=listed.running)
        job = store.submit(replace(spec, first=first))
    except BaseException as exc:
        try:
            _alter(store, event, True)
        except Exception as again:
            raise InvalidInput(
                f"adopting event {full_name} failed ({exc}) and enabling it again failed too "
                f"({again}): it is DISABLED now; `jobtui events enable {full_name}`"
            ) from exc
        raise
    notes.append(
        f"event {full_name} is DISABLED now (kept: drop it once the job runs well); a run of "
        "it in flight, if any, still finishes (DISABLE stops no run)"
    )
    if event.kind == "at" and event.on_completion == "NOT PRESERVE":
        notes.append(
            "the event is ON COMPLETION NOT PRESERVE: disabled, it never runs, so the server "
            "keeps it until you drop it"
        )
    return Adoption(job, disabled, tuple(notes))


def check_adopter(event: Event, owner: str) -> None:
    """PermissionDenied unless ``owner`` (the adopting account, ``user@host``) is the
    event's definer: the job then runs with exactly the event's rights. Not a role
    definer (``DEFINER = CURRENT_ROLE``: shown as ``role@``), whose rights no account's
    job has; not another account, an admin included (the job would run as the adopter)."""
    full = event.full_name
    if event.definer.endswith("@"):
        role = event.definer[:-1]
        raise PermissionDenied(
            f"event {full} runs with the rights of the role {role} (its definer is a role), "
            "and a jobtui job runs with its owner account's own grants, so adopting it would "
            "change its rights: give it an account as definer (ALTER DEFINER = "
            f"'user'@'host' EVENT {full} ...), then adopt it connected as that account"
        )
    if owner != event.definer:
        raise PermissionDenied(
            f"event {full} runs with the rights of its definer {event.definer}; a jobtui "
            f"job runs with its owner's, and this account is {owner}: only the definer "
            f"adopts its own event (an admin does not adopt on its behalf); connect as "
            f"{event.definer} to adopt it"
        )


def adopted_schedule(event: Event, now: datetime) -> Schedule:
    """The job's schedule: EVERY (fixed length) -> every N seconds on the event's grid
    (STARTS the window start, ENDS its finish); AT -> once. InvalidInput otherwise."""
    full = event.full_name
    if event.kind == "at":
        if event.execute_at is None:
            raise InvalidInput(f"event {full} has no EXECUTE_AT: nothing to adopt")
        if event.last_executed is not None:
            raise InvalidInput(
                f"event {full} ran once already (at {_short(event.last_executed)}) and has no "
                "run left: nothing to adopt"
            )
        return Schedule("once", start=event.execute_at)
    interval = event_interval(event)
    if interval is None or event.starts is None:
        raise InvalidInput(f"event {full} has a schedule jobtui cannot read: {event.schedule}")
    if not interval.fixed:
        raise InvalidInput(
            f"event {full} runs every {event.interval_value} {event.interval_field}: months, "
            "quarters and years have no fixed length and jobtui's --every takes seconds; "
            'submit it yourself with --cron or --expr (e.g. --expr "NOW() + INTERVAL 1 MONTH")'
        )
    if not event.fixed_zone:
        raise InvalidInput(
            f"event {full} counts its slots in time zone {event.time_zone}, whose offset "
            "changes (daylight saving) or which jobtui cannot resolve; jobtui's --every counts "
            "in UTC, so the slots would drift: submit it yourself with --cron and --tz"
        )
    if interval.seconds > MAX_EVERY:
        raise InvalidInput(f"event {full} runs every {interval.seconds} s: too long for --every")
    if event.ends is not None and event.ends <= now:
        raise InvalidInput(
            f"event {full} ended at {_short(event.ends)}: it has no slot left to adopt"
        )
    return Schedule("every", every=float(interval.seconds), start=event.starts, finish=event.ends)


def first_after(event: Event, now: datetime, *, scheduler_on: bool) -> datetime | None:
    """The adopted job's first run: the event's first slot after its LAST_EXECUTED, even
    if past (a slot the event would have run meanwhile: the job runs it at once); its
    first at or after now when it never ran or the server's scheduler is not ON (then
    the event would have run nothing since)."""
    if event.kind == "at":
        return event.execute_at
    interval = event_interval(event)
    assert interval is not None and interval.fixed and event.starts is not None
    base = now
    if scheduler_on and event.last_executed is not None:
        base = min(now, event.last_executed + timedelta(seconds=1))
    # whole seconds on a fixed-offset zone: UTC arithmetic is the server's wall-clock one
    slot = et.first_slot_at_or_after(
        event.starts.replace(tzinfo=None), interval, base.astimezone(UTC).replace(tzinfo=None)
    ).replace(tzinfo=UTC)
    if event.ends is not None and slot > event.ends:
        return None
    return slot


def adopted_what(event: Event, jobtui_schema: str) -> What:
    """The job's What: ``CALL [s.]p(literals)`` -> ``call s.p`` (the event's schema when
    none is named); one statement -> ``sql`` when the event lives in jobtui's own schema.
    InvalidInput with the reason otherwise."""
    full = event.full_name
    body = event.body.strip()
    if _COMPOUND.match(body):
        raise InvalidInput(
            f"event {full}'s body is a compound statement (BEGIN ... END): a jobtui job runs "
            f"one statement or one procedure; move the body into a procedure in {event.schema} "
            "(CREATE PROCEDURE ... BEGIN ... END), make the event CALL it, and adopt that"
        )
    call = _CALL.match(body)
    if call:
        args = _literals(call.group("args") or "")
        schema = _unquote(call.group("schema")) if call.group("schema") else event.schema
        proc = _unquote(call.group("proc"))
        if args is not None and IDENTIFIER_RE.fullmatch(schema) and IDENTIFIER_RE.fullmatch(proc):
            return What("call", f"{schema}.{proc}", tuple(args))
    try:
        statement = check_sql(body)
    except InvalidInput as exc:
        raise InvalidInput(f"event {full}'s body cannot be a job's statement: {exc}") from None
    if event.schema != jobtui_schema:
        raise InvalidInput(
            f"event {full}'s body runs with {event.schema} as its default schema, and a "
            f"jobtui job's statement runs in jobtui's schema {jobtui_schema!r}, where its "
            "unqualified names would mean other tables; put the body in a procedure in "
            f"{event.schema} and make the event CALL it (literal arguments), then adopt that"
        )
    return What("sql", statement)


def _unquote(identifier: str) -> str:
    if identifier.startswith("`"):
        return identifier[1:-1].replace("``", "`")
    return identifier


def _literals(text: str) -> list[str] | None:
    """A CALL's arguments when every one is a number or a quoted string, else None."""
    args: list[str] = []
    rest = text.strip()
    while rest:
        match = _LITERAL.match(rest)
        if not match:
            return None
        if match.group("num") is not None:
            args.append(match.group("num"))
        else:
            raw = match.group("str")
            raw = re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(1)), raw)
            args.append(raw.replace("''", "'"))
        rest = rest[match.end() :].strip()
        if match.group(0).rstrip().endswith(",") and not rest:
            return None
    return args


def _job_name(store: JobStore, event: Event) -> tuple[str, list[str]]:
    """The event's name, else ``<schema>_<name>`` when that is taken or not a job name."""
    tried: list[str] = []
    for candidate in (event.name, f"{event.schema}_{event.name}"):
        if not JOB_NAME_RE.fullmatch(candidate):
            tried.append(f"{candidate!r} is not a job name")
            continue
        try:
            store.get(candidate)
        except JobNotFound:
            notes = []
            if candidate != event.name:
                notes.append(f"job named {candidate} ({'; '.join(tried)})")
            return candidate, notes
        tried.append(f"job {candidate!r} exists already")
    raise InvalidInput(
        f"cannot name a job after event {event.full_name}: {'; '.join(tried)}; rename or "
        "remove the job in the way, or submit the job yourself"
    )
