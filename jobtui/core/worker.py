"""The runner pool's two commands: ``jobtui worker`` (``worker_main``, a headless pool
until SIGTERM/SIGINT) and ``jobtui run NAME`` (``run_foreground``, one job's schedule
in the foreground, like a stored-procedure runner's job$run loop), with their exit
codes."""

from __future__ import annotations

import dataclasses
import logging
import signal
import sys
import threading
import time
from typing import Any

from jobtui.core import oplog, sdnotify
from jobtui.core.alerting import AlertDispatcher
from jobtui.core.alerts import DEFAULT_TIMEOUT as DEFAULT_ALERT_TIMEOUT
from jobtui.core.alerts import Event
from jobtui.core.errors import InvalidInput
from jobtui.core.metrics import Metrics
from jobtui.core.retention import Retention
from jobtui.core.runner.config import DEFAULTS, PoolConfig
from jobtui.core.runner.pool import RunnerPool
from jobtui.core.runner.runresult import RunResult
from jobtui.core.store import JobStore
from jobtui.core.timeutil import iso

WORKER_LOG = logging.getLogger("jobtui.worker")

# run_foreground's exit codes (``jobtui run NAME``)
EXIT_FINISHED = 0  # the schedule has no more slots
EXIT_ABORTED = 3  # the job was aborted or removed
EXIT_INTERRUPTED = 130  # Ctrl-C


def run_event(result: RunResult) -> list[tuple[int, str, dict[str, Any]]]:
    """The log events of one finished run: ``run.<outcome>``, and ``job.broken`` when
    this failure turned the job BROKEN."""
    outcome = result.outcome.value
    level = {
        "failed": logging.ERROR,
        "aborted": logging.WARNING,
        "lost": logging.WARNING,
    }.get(outcome, logging.INFO)
    fields: dict[str, Any] = {
        "job": result.job,
        "job_id": result.job_id,
        "slot": iso(result.slot),
        "outcome": outcome,
        "duration": round(result.duration, 6),
        "manual": result.manual or None,
        "skipped": result.skipped or None,
        "error": result.error.splitlines()[0][:300] if result.error else None,
    }
    events = [(level, f"run.{outcome}", fields)]
    if result.turned_broken:
        events.append(
            (
                logging.ERROR,
                "job.broken",
                {
                    "job": result.job,
                    "job_id": result.job_id,
                    "failures": result.failures,
                    "slot": iso(result.slot),
                    "error": fields["error"],
                },
            )
        )
    return events


class _RunLog:
    """``jobtui worker``'s log of runs, one line per run (and per job turned BROKEN): a
    batch's lines are written together (the pool calls ``flush`` after each batch), one
    write instead of one per run."""

    def __init__(self, formatter: logging.Formatter | None = None) -> None:
        self._lines: list[str] = []
        self._lock = threading.Lock()
        self._formatter = formatter or oplog.Formatter("text")

    def __call__(self, result: RunResult) -> None:
        lines = []
        for level, name, fields in run_event(result):
            record = logging.LogRecord(WORKER_LOG.name, level, __file__, 0, name, None, None)
            record.event = name
            record.fields = fields
            lines.append(self._formatter.format(record))
        with self._lock:
            self._lines.extend(lines)

    def flush(self) -> None:
        with self._lock:
            lines, self._lines = self._lines, []
        if lines:
            sys.stderr.write("\n".join(lines) + "\n")
            sys.stderr.flush()


def worker_main(
    store: JobStore,
    config: PoolConfig = DEFAULTS,
    *,
    grace: float = 10.0,
    retention: Retention | None = None,
    log_format: str = "text",
    alerts: bool = True,
    alert_timeout: float = DEFAULT_ALERT_TIMEOUT,
    metrics: Metrics | None = None,
) -> int:
    """Run a pool headless until SIGTERM/SIGINT (``jobtui worker``): one log line per run
    and per state change (``oplog``), alerts sent (``alerting``), systemd told when it is
    ready, alive and stopping (``sdnotify``); ``metrics`` (already serving) observe the
    pool. ``config``: the pool's settings (named ``worker`` when it names none)."""
    stop = threading.Event()
    config = dataclasses.replace(config, name=config.name or "worker")
    threads, heartbeat_timeout, lead = config.threads, config.heartbeat_timeout, config.lead

    def on_signal(signum: int, _frame: Any) -> None:
        stop.set()

    handler = oplog.configure(log_format)
    pool = RunnerPool(
        store, config, on_run=_RunLog(handler.formatter), observer=metrics, retention=retention
    )
    notifier = sdnotify.Notifier.from_env()
    dispatcher: AlertDispatcher | None = None
    previous = {}
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGINT):
            previous[sig] = signal.signal(sig, on_signal)
    try:
        pool.start()
        rid = pool.runner_id
        oplog.event(
            WORKER_LOG,
            logging.INFO,
            "runner.started",
            runner=rid,
            threads=threads,
            db=store.masked_url,
            heartbeat_timeout=heartbeat_timeout,
            lead=lead,
            message=f"jobtui worker {rid}: {threads} thread(s) on {store.masked_url} "
            f"(heartbeat timeout {heartbeat_timeout:g} s, lead {lead:g} s)",
        )
        if alerts:
            dispatcher = AlertDispatcher(store, rid, timeout=alert_timeout, on_sent=_log_alert)
            dispatcher.start()
        if metrics is not None:
            metrics.watch(pool)
            if metrics.listening is not None:
                addr, port = metrics.listening
                oplog.event(
                    WORKER_LOG,
                    logging.INFO,
                    "metrics.listening",
                    addr=addr,
                    port=port,
                    message=f"jobtui worker {rid}: metrics on http://{_host(addr)}:{port}/metrics",
                )
        notifier.ready(f"{threads} thread(s) on {store.masked_url}")
        watchdog = notifier.watchdog_interval()
        beat = min(0.5, watchdog) if watchdog else 0.5
        while not stop.wait(beat):
            if watchdog and pool.healthy():
                notifier.watchdog()
        notifier.stopping()
        oplog.event(
            WORKER_LOG,
            logging.INFO,
            "runner.stopping",
            runner=rid,
            grace=grace,
            message=f"jobtui worker {rid}: stopping (grace {grace:g} s)",
        )
        if dispatcher is not None:
            dispatcher.stop()
        pool.stop(grace=grace, abort=True)
        oplog.event(
            WORKER_LOG,
            logging.INFO,
            "runner.stopped",
            runner=rid,
            message=f"jobtui worker {rid}: stopped",
        )
    finally:
        if dispatcher is not None:
            dispatcher.stop(wait=0)
        if pool.running:
            pool.stop(grace=0, abort=True)
        for sig, handler_ in previous.items():
            signal.signal(sig, handler_)
    return 0


def _host(addr: str) -> str:
    return f"[{addr}]" if ":" in addr else addr


def _log_alert(event: Event, results: dict[str, str]) -> None:
    failed = {t: r for t, r in results.items() if r != "ok"}
    oplog.event(
        WORKER_LOG,
        logging.WARNING if failed else logging.INFO,
        "alert.failed" if failed else "alert.sent",
        alert=event.kind,
        key=event.key,
        job=event.job,
        targets=len(results),
        problems=failed or None,
    )


def run_foreground(
    store: JobStore, name: str, *, owner: str | None = None, poll: float = DEFAULTS.poll
) -> int:
    """Run one job's schedule in the foreground (``jobtui run NAME``), holding its lock.

    Holds the job's lock for the whole session, runs each due slot (and
    run-now requests), and returns when the schedule has no more slots (0),
    the job is aborted or removed (3), or on Ctrl-C (130; a run in flight is
    aborted). Raises JobLocked when another runner holds the job. ``owner``: the
    job's owner when it is not the connecting account (a runner account owns none).
    """
    job = store.get(name, owner=owner)
    if job.problem is not None:  # never run: no session would ever end
        raise InvalidInput(f"job {name!r} is not run until its row is fixed: {job.problem}")

    config = PoolConfig(threads=1, poll=poll, name=f"run:{name}", job_id=job.id, hold=True)
    pool = RunnerPool(store, config)
    pool.on_run = _RunLog()
    code = EXIT_FINISHED
    pool.start()
    try:
        pool.hold_ready.wait(30)
        if pool.hold_error is not None:
            raise pool.hold_error
        while True:
            time.sleep(min(0.2, poll))
            current = store.get_by_id(job.id)
            if current is None:
                code = EXIT_ABORTED
                break
            if current.running or pool.busy():
                continue
            if current.phase == "FINISHED":
                break
            if current.phase == "ABORTED" and not current.run_now:
                code = EXIT_ABORTED
                break
    except KeyboardInterrupt:
        code = EXIT_INTERRUPTED
        pool.stop(grace=0, abort=True)
    finally:
        pool.stop(grace=10.0, abort=True)
    return code
