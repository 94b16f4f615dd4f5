"""The runner pool's two commands: ``jobtui worker`` (``worker_main``, a headless pool
until SIGTERM/SIGINT) and ``jobtui run NAME`` (``run_foreground``, one job's schedule
in the foreground, like a stored-procedure runner's job$run loop), with their exit
codes."""

from __future__ import annotations

import signal
import sys
import threading
import time
from typing import Any

from jobtui.core.errors import InvalidInput
from jobtui.core.runner import (
    DEFAULT_HEARTBEAT_TIMEOUT,
    DEFAULT_LEAD,
    DEFAULT_OWNER_SHARE,
    DEFAULT_POLL,
    DEFAULT_THREADS,
    RunnerPool,
)
from jobtui.core.runresult import RunResult
from jobtui.core.sharing import DEFAULT_GRACE
from jobtui.core.store import JobStore, Retention

# run_foreground's exit codes (``jobtui run NAME``)
EXIT_FINISHED = 0  # the schedule has no more slots
EXIT_ABORTED = 3  # the job was aborted or removed
EXIT_INTERRUPTED = 130  # Ctrl-C


class _RunLog:
    """``jobtui worker``'s log, one line per run: a batch's lines are written together
    (the pool calls ``flush`` after each batch), one write instead of one per run."""

    def __init__(self) -> None:
        self._lines: list[str] = []
        self._lock = threading.Lock()

    def __call__(self, result: RunResult) -> None:
        line = result.line()
        with self._lock:
            self._lines.append(line)

    def flush(self) -> None:
        with self._lock:
            lines, self._lines = self._lines, []
        if lines:
            sys.stderr.write("\n".join(lines) + "\n")
            sys.stderr.flush()


def worker_main(
    store: JobStore,
    *,
    threads: int = DEFAULT_THREADS,
    poll: float = DEFAULT_POLL,
    name: str | None = None,
    grace: float = 10.0,
    heartbeat_timeout: float = DEFAULT_HEARTBEAT_TIMEOUT,
    retention: Retention | None = None,
    lead: float = DEFAULT_LEAD,
    owner_share: float = DEFAULT_OWNER_SHARE,
    takeover_grace: float = DEFAULT_GRACE,
) -> int:
    """Run a pool headless until SIGTERM/SIGINT (``jobtui worker``); one log line per run."""
    stop = threading.Event()

    def on_signal(signum: int, _frame: Any) -> None:
        stop.set()

    pool = RunnerPool(
        store,
        threads=threads,
        poll=poll,
        name=name or "worker",
        heartbeat_timeout=heartbeat_timeout,
        on_run=_RunLog(),
        retention=retention,
        lead=lead,
        owner_share=owner_share,
        takeover_grace=takeover_grace,
    )
    previous = {}
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGINT):
            previous[sig] = signal.signal(sig, on_signal)
    try:
        pool.start()
        print(
            f"jobtui worker {pool.runner_id}: {threads} thread(s) on {store.masked_url} "
            f"(heartbeat timeout {heartbeat_timeout:g} s, lead {lead:g} s)",
            file=sys.stderr,
            flush=True,
        )
        while not stop.wait(0.5):
            pass
        print(
            f"jobtui worker {pool.runner_id}: stopping (grace {grace:g} s)",
            file=sys.stderr,
            flush=True,
        )
        pool.stop(grace=grace, abort=True)
        print(f"jobtui worker {pool.runner_id}: stopped", file=sys.stderr, flush=True)
    finally:
        if pool.running:
            pool.stop(grace=0, abort=True)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0


def run_foreground(
    store: JobStore, name: str, *, owner: str | None = None, poll: float = DEFAULT_POLL
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

    pool = RunnerPool(store, threads=1, poll=poll, name=f"run:{name}", job_id=job.id, hold=True)
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
