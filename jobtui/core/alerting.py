"""The alert dispatcher: a thread of ``jobtui worker`` that turns failed and lost runs
(and jobs they turned BROKEN) into alerts, each sent once, by one runner, outside every
job's path.

Each pass (every ``interval`` seconds):

1. **Enqueue.** Read the run log's ``failed`` and ``lost`` runs that finished in the
   last ``lookback`` seconds, with their jobs' ``alert`` columns (and the database's
   default); insert one ``jobtui_alert`` row per event. Its key (``failed:<run id>``,
   ``lost:<run id>``, ``broken:<job id>:<run id>``) is the table's primary key: every
   runner sees the same runs, the database keeps one row.
2. **Claim.** For each unsent row: ``UPDATE ... SET claimed_by = me, claimed_until =
   now + lease WHERE key = ? AND sent IS NULL AND (claimed_until IS NULL OR
   claimed_until < now)``. The one runner whose update matched sends it.
3. **Send** on a thread of its own (``alerts.send``: every target at once, each with a
   timeout), then record ``sent`` and the result per target.

A runner that dies while sending leaves its claim to expire (``lease``, longer than any
send may take); another runner then sends the event again: at least once in that case,
never twice otherwise. Events older than ``lookback`` when no worker ran are not sent.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, or_, select, update
from sqlalchemy.exc import DBAPIError, IntegrityError

from jobtui.core import alerts, schema
from jobtui.core.actions import granted_patterns, is_granted
from jobtui.core.alerts import Event
from jobtui.core.timeutil import from_db, iso, to_db

LOG = logging.getLogger("jobtui.alerts")

DEFAULT_INTERVAL = 1.0
DEFAULT_LOOKBACK = 600.0  # seconds: older failed runs are not alerted
DEFAULT_LEAD_LEASE = 120.0  # a claim's lease: longer than any send may take
OVERLAP = 30.0  # seconds each pass looks back past the previous one
CONFIG_EVERY = 5.0  # seconds between looks at whether any alert is configured


def read_default(conn: Any) -> list[str]:
    """The database's default targets (``jobtui_setting`` alert_default), validated."""
    s = schema.setting
    text = conn.execute(select(s.c.value).where(s.c.key == schema.ALERT_DEFAULT)).scalar()
    targets, _bad = alerts.decode(text)
    return targets or []


class AlertDispatcher:
    """Enqueue, claim and send alerts for one runner (``runner_id``) of ``store``."""

    def __init__(
        self,
        store: Any,  # jobtui.core.store.JobStore
        runner_id: str,
        *,
        interval: float = DEFAULT_INTERVAL,
        lookback: float = DEFAULT_LOOKBACK,
        lease: float = DEFAULT_LEAD_LEASE,
        timeout: float = alerts.DEFAULT_TIMEOUT,
        on_sent: Callable[[Event, dict[str, str]], None] | None = None,
    ) -> None:
        self.store = store
        self.runner_id = runner_id
        self.interval = interval
        self.lookback = lookback
        self.lease = max(lease, timeout * 2 + 5)
        self.timeout = timeout
        self.on_sent = on_sent
        self._known: dict[str, datetime] = {}  # keys enqueued (by anyone) lately
        self._primed = False  # _known holds what the outbox had at the first pass
        self._since: datetime | None = None  # where the next pass's look at runs starts
        self._config = False
        self._config_until: datetime | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._senders = ThreadPoolExecutor(max_workers=4, thread_name_prefix="jobtui-alert")
        self._sending: set[str] = set()
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="jobtui-alerts", daemon=True)
        self._thread.start()

    def stop(self, wait: float = 2.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(wait)
        # sends in flight finish on their own (their threads have deadlines); a claim
        # not recorded as sent expires and another runner sends it
        self._senders.shutdown(wait=False, cancel_futures=True)

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.pass_once()
            except DBAPIError as exc:  # the database away: try again next pass
                LOG.warning("alert pass failed: %s", str(exc).splitlines()[0][:200])
            except Exception:
                LOG.exception("alert pass failed")
            self._stop.wait(self.interval)

    # ------------------------------------------------------------------ one pass

    def pass_once(self) -> int:
        """Enqueue new events, claim and start sending unsent ones; how many claimed."""
        now = self.store.now()
        self._enqueue(now)
        return self._claim(now)

    def _configured(self, conn: Any, now: datetime) -> bool:
        """Whether any job or the default names a target (re-read every CONFIG_EVERY
        seconds): a database without alerts costs one cheap look, not a scan."""
        if self._config_until is not None and now < self._config_until:
            return self._config
        j = schema.job
        self._config = bool(read_default(conn)) or (
            conn.execute(
                select(j.c.id).where(j.c.alert.is_not(None), j.c.alert != "[]").limit(1)
            ).first()
            is not None
        )
        conn.rollback()
        self._config_until = now + timedelta(seconds=CONFIG_EVERY)
        return self._config

    def _enqueue(self, now: datetime) -> None:
        # The first pass looks back `lookback`; later ones from the last pass, less an
        # overlap for runs recorded late (clock skew between hosts, long commits).
        oldest = now - timedelta(seconds=self.lookback)
        since = oldest if self._since is None else max(oldest, self._since)
        self._known = {k: t for k, t in self._known.items() if t >= oldest}
        r, j, a = schema.run, schema.job, schema.alert_outbox
        with self.store.engine.connect() as conn:
            if not self._configured(conn, now):
                return
            default = read_default(conn)
            if not self._primed:  # after a start: what others enqueued already
                self._primed = True
                for key, created in conn.execute(
                    select(a.c.event_key, a.c.created).where(a.c.created >= to_db(oldest))
                ):
                    self._known[str(key)] = from_db(created) or now
            rows = conn.execute(
                select(
                    r.c.id,
                    r.c.job_id,
                    r.c.job_name,
                    r.c.owner,
                    r.c.scheduled_for,
                    r.c.finished,
                    r.c.outcome,
                    r.c.error,
                    r.c.runner,
                    j.c.id.label("jid"),
                    j.c.alert,
                    j.c.broken,
                    j.c.failures,
                    j.c.max_failures,
                )
                .select_from(r.outerjoin(j, j.c.id == r.c.job_id))
                .where(r.c.outcome.in_(("failed", "lost")), r.c.finished >= to_db(since))
                .order_by(r.c.id)
            ).all()
            conn.rollback()
            self._since = now - timedelta(seconds=OVERLAP)
            latest: dict[int, int] = {}
            for row in rows:
                if row.outcome == "failed":
                    latest[int(row.job_id)] = int(row.id)
            patterns: dict[str, list[str]] = {}
            for row in rows:
                for event in self._events(row, latest):
                    if event.key in self._known:
                        continue
                    targets = self._targets(conn, row, default, patterns)
                    self._known[event.key] = now
                    if targets:
                        self._insert(conn, event, targets, now)

    def _events(self, row: Any, latest: dict[int, int]) -> list[Event]:
        database = self.store.schema_name
        base: dict[str, Any] = {
            "job_id": int(row.job_id),
            "job": str(row.job_name),
            "owner": str(row.owner),
            "run_id": int(row.id),
            "scheduled_for": iso(from_db(row.scheduled_for)),
            "finished": iso(from_db(row.finished)),
            "outcome": str(row.outcome),
            "error": row.error if isinstance(row.error, str) else None,
            "runner": row.runner if isinstance(row.runner, str) else None,
            "database": database,
        }
        if row.jid is not None and isinstance(row.failures, int):
            base["failures"] = int(row.failures)
            base["max_failures"] = int(row.max_failures)
        out = [Event(kind=str(row.outcome), key=f"{row.outcome}:{row.id}", **base)]
        # The run that turned the job BROKEN: its job is broken now, this is its latest
        # failed run, and the failures reached the limit exactly with it (a run-now of a
        # broken job fails on beyond it: no second BROKEN alert).
        if (
            row.outcome == "failed"
            and row.jid is not None
            and bool(row.broken)
            and latest.get(int(row.job_id)) == int(row.id)
            and row.failures == row.max_failures
        ):
            out.append(Event(kind="broken", key=f"broken:{row.job_id}:{row.id}", **base))
        return out

    def _targets(
        self, conn: Any, row: Any, default: list[str], patterns: dict[str, list[str]]
    ) -> list[dict[str, Any]]:
        """The event's targets, each with why it is refused (a command no admin allowed)."""
        own, _bad = alerts.decode(row.alert) if row.jid is not None else (None, [])
        if own is None:  # the database's default: an admin's choice, commands allowed
            return [{"target": t, "refused": None} for t in default]
        out = []
        for t in own:
            refused = None
            if alerts.is_command(t) and self.store.backend.action_allow_list:
                owner = str(row.owner)
                if owner not in patterns:
                    try:
                        patterns[owner] = [
                            p for p in granted_patterns(conn, owner) if p.startswith("alert:")
                        ]
                    except DBAPIError:
                        patterns[owner] = []
                    conn.rollback()
                if not is_granted(patterns[owner], alerts.grant_name(t)):
                    refused = (
                        f"no pattern in {schema.action_grant.name} allows {owner!r} the alert "
                        f"command {alerts.command_path(t)!r} (an admin allows it with "
                        f"`jobtui grant ACCOUNT --actions '{alerts.grant_name(t)}' --apply`)"
                    )
            out.append({"target": t, "refused": refused})
        return out

    def _insert(
        self, conn: Any, event: Event, targets: list[dict[str, Any]], now: datetime
    ) -> None:
        try:
            conn.execute(
                schema.alert_outbox.insert().values(
                    event_key=event.key,
                    kind=event.kind,
                    job_id=event.job_id,
                    job_name=event.job,
                    owner=event.owner,
                    run_id=event.run_id,
                    payload=event.to_json(),
                    targets=json.dumps(targets),
                    created=to_db(now),
                    attempts=0,
                )
            )
            conn.commit()
        except IntegrityError:  # another runner enqueued it first: one row per event
            conn.rollback()

    def _claim(self, now: datetime) -> int:
        a = schema.alert_outbox
        since = now - timedelta(seconds=self.lookback)
        free = or_(a.c.claimed_until.is_(None), a.c.claimed_until < to_db(now))
        claimed = 0
        with self.store.engine.connect() as conn:
            keys = [
                str(k)
                for k in conn.execute(
                    select(a.c.event_key)
                    .where(a.c.sent.is_(None), a.c.created >= to_db(since), free)
                    .order_by(a.c.created)
                    .limit(32)
                ).scalars()
            ]
            conn.rollback()
            for key in keys:
                with self._lock:
                    if key in self._sending:
                        continue
                got = conn.execute(
                    update(a)
                    .where(and_(a.c.event_key == key, a.c.sent.is_(None), free))
                    .values(
                        claimed_by=self.runner_id,
                        claimed_until=to_db(now + timedelta(seconds=self.lease)),
                        attempts=a.c.attempts + 1,
                    )
                ).rowcount
                conn.commit()
                if got != 1:
                    continue
                row = conn.execute(
                    select(a.c.payload, a.c.targets).where(a.c.event_key == key)
                ).one()
                conn.rollback()
                claimed += 1
                with self._lock:
                    self._sending.add(key)
                self._senders.submit(self._send, key, row.payload, row.targets)
        return claimed

    def _send(self, key: str, payload: str, targets_json: str) -> None:
        try:
            event = Event(**json.loads(payload))
            entries = json.loads(targets_json)
            refused = {e["target"]: e.get("refused") for e in entries}
            results = alerts.send(
                event, list(refused), timeout=self.timeout, refused=lambda t: refused.get(t)
            )
            a = schema.alert_outbox
            with self.store.engine.connect() as conn:
                conn.execute(
                    update(a)
                    .where(a.c.event_key == key, a.c.claimed_by == self.runner_id)
                    .values(sent=to_db(self.store.now()), result=json.dumps(results))
                )
                conn.commit()
            if self.on_sent is not None:
                self.on_sent(event, results)
        except Exception:
            LOG.exception("sending alert %s failed", key)
        finally:
            with self._lock:
                self._sending.discard(key)


def test_event(job: Any | None, database: str) -> Event:
    """The event ``jobtui alerts test`` sends: a failed run that never happened."""
    return Event(
        kind="failed",
        key="test",
        job_id=int(job.id) if job is not None else 0,
        job=str(job.name) if job is not None else "(test)",
        owner=str(job.owner) if job is not None else "",
        error="a test alert from `jobtui alerts test`: nothing failed",
        database=database,
        test=True,
    )
