"""Helpers for process tests: workers, the console in tmux, run-log checks, a clock to move."""

from __future__ import annotations

import itertools
import os
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url

from jobtui.core.model import Job, Outcome, Run
from jobtui.core.store import JobStore
from jobtui.core.timeutil import utcnow


def wait_for(pred: Callable[[], Any], timeout: float, interval: float = 0.05) -> Any:
    """Poll ``pred`` until it returns something truthy (returned) or ``timeout`` passes (None)."""
    deadline = time.monotonic() + timeout
    while True:
        value = pred()
        if value:
            return value
        if time.monotonic() >= deadline:
            return None
        time.sleep(interval)


class FakeClock:
    """A clock that stands still until a test moves it."""

    def __init__(self, start: datetime) -> None:
        self._now = start
        self._lock = threading.Lock()

    def __call__(self) -> datetime:
        with self._lock:
            return self._now

    def set(self, when: datetime) -> None:
        with self._lock:
            self._now = when

    def advance(self, seconds: float) -> datetime:
        with self._lock:
            self._now += timedelta(seconds=seconds)
            return self._now


class Worker:
    """A ``jobtui worker`` process with its stderr in a file."""

    def __init__(
        self,
        url: str,
        log_dir: Path,
        *,
        name: str,
        threads: int = 4,
        poll: float = 1.0,
        grace: float = 5.0,
        heartbeat_timeout: float = 15.0,
        extra: list[str] | None = None,
    ) -> None:
        self.name = name
        self.heartbeat_timeout = heartbeat_timeout
        self.log_path = log_dir / f"{name}.log"
        cmd = [
            *jobtui_command(),
            "--db",
            url,
            "worker",
            "--threads",
            str(threads),
            "--poll",
            str(poll),
            "--name",
            name,
            "--grace",
            str(grace),
            "--heartbeat-timeout",
            str(heartbeat_timeout),
            *(extra or []),
        ]
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        self._log = self.log_path.open("w")
        self.proc = subprocess.Popen(
            cmd, stdout=subprocess.DEVNULL, stderr=self._log, env=env, start_new_session=True
        )

    @property
    def pid(self) -> int:
        return self.proc.pid

    def log(self) -> str:
        if not self._log.closed:
            self._log.flush()
        return self.log_path.read_text()

    def started(self) -> bool:
        """Whether the worker has registered (it prints its runner id)."""
        return "thread(s) on" in self.log()

    def runner_id(self) -> str | None:
        for line in self.log().splitlines():
            if " runner.started " in line:
                return line.split(" runner=", 1)[1].split()[0]
        return None

    def terminate(self, timeout: float = 30.0) -> int:
        """SIGTERM, then wait; returns the exit code (kills after ``timeout``)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
            raise AssertionError(
                f"worker {self.name} did not stop on SIGTERM:\n{self.log()}"
            ) from None
        finally:
            self._log.close()

    def kill9(self) -> None:
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)

    def cleanup(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        if not self._log.closed:
            self._log.close()


@contextmanager
def worker_list() -> Iterator[list[Worker]]:
    """Worker processes a test starts (with ``spawn``), killed at the end if still alive."""
    started: list[Worker] = []
    try:
        yield started
    finally:
        for w in started:
            w.cleanup()


def spawn(workers: list[Worker], url: str, log_dir: Path, name: str, **kw: Any) -> Worker:
    w = Worker(url, log_dir, name=name, **kw)
    workers.append(w)
    return w


# ---------------------------------------------------------------------- checks on the run log


def all_runs(store: JobStore) -> list[Run]:
    return store.runs(limit=100_000, all_owners=True)


def check_exclusive(store: JobStore) -> dict[str, list[Run]]:
    """No slot twice, no two runs of one job at once, nothing left running. Runs by job."""
    runs = all_runs(store)
    slots = Counter((r.job_id, r.scheduled_for) for r in runs)
    assert max(slots.values(), default=1) == 1
    by_job: dict[str, list[Run]] = defaultdict(list)
    for r in runs:
        assert r.outcome is not Outcome.RUNNING, r
        if r.started is not None:
            by_job[r.job].append(r)
    for job, rs in by_job.items():
        rs.sort(key=lambda r: r.started)  # type: ignore[arg-type,return-value]
        for a, b in itertools.pairwise(rs):
            assert a.finished is not None
            assert a.finished <= b.started, f"{job}: {a} overlaps {b}"  # type: ignore[operator]
    return by_job


# ---------------------------------------------------------------------- MariaDB ledger


def mysql_db(url: str) -> str:
    return str(make_url(url).database)


def create_ledger_proc(url: str, connect: Callable[[str], Any] | None = None) -> None:
    """A ``ledger`` table and two procedures that write to it: ``ledger_ins`` and ``slow_ins``.

    ``connect(database)`` gives an autocommit PyMySQL connection (the shared test
    server's admin by default).
    """
    if connect is None:
        from support.mariadb import admin_connection as connect
    conn = connect(mysql_db(url))
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE ledger (job VARCHAR(64), t DATETIME(6), conn BIGINT)")
        cur.execute(
            "CREATE PROCEDURE ledger_ins(IN j VARCHAR(64)) "
            "BEGIN INSERT INTO ledger VALUES (j, NOW(6), CONNECTION_ID()); END"
        )
        cur.execute(
            # Short sleeps in a loop: MariaDB notices a vanished client during one long
            # SLEEP (every 5 s), but not here, so an orphan really runs on to its end.
            "CREATE PROCEDURE slow_ins(IN j VARCHAR(64), IN s DOUBLE) "
            "BEGIN DECLARE t_end DATETIME(6) DEFAULT NOW(6) + INTERVAL s SECOND; "
            "INSERT INTO ledger VALUES (j, NOW(6), CONNECTION_ID()); "
            "WHILE NOW(6) < t_end DO DO SLEEP(0.05); END WHILE; END"
        )
    conn.close()


def lock_holder(admin: Any, name: str) -> Callable[[], int | None]:
    """Who holds the named lock ``name`` (a connection id), asked on ``admin``."""

    def holder() -> int | None:
        with admin.cursor() as cur:
            cur.execute("SELECT IS_USED_LOCK(%s)", (name,))
            return cur.fetchone()[0]  # type: ignore[no-any-return]

    return holder


def ledger_counts(store: JobStore) -> Counter[str]:
    with store.read() as conn:
        return Counter(
            {j: n for j, n in conn.execute(text("SELECT job, COUNT(*) FROM ledger GROUP BY job"))}
        )


# ---------------------------------------------------------------------- the console in tmux


def jobtui_command() -> list[str]:
    """The installed console script next to this Python, else ``python -m jobtui``."""
    script = Path(sys.executable).with_name("jobtui")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "jobtui"]


def require_tmux() -> None:
    if shutil.which("tmux") is None:
        if os.environ.get("CI"):
            pytest.fail("CI is set, so the tmux tests must run: install tmux")
        pytest.skip("tmux is not installed")


class Console:
    """The real ``jobtui`` console in a detached tmux session (a real terminal)."""

    def __init__(self, args: list[str], cwd: Path, *, size: tuple[int, int] = (120, 35)) -> None:
        require_tmux()
        self.session = f"jobtui-{uuid.uuid4().hex[:8]}"
        # exec: the pane's process is jobtui itself, so its pid is the console's.
        command = "exec " + shlex.join([*jobtui_command(), *args])
        env_prefix = f"cd {shlex.quote(str(cwd))} && TERM=xterm-256color "
        subprocess.run(
            [
                *("tmux", "new-session", "-d", "-s", self.session),
                *("-x", str(size[0]), "-y", str(size[1]), env_prefix + command),
            ],
            check=True,
        )
        out = subprocess.run(
            ["tmux", "display-message", "-p", "-t", self.session, "#{pane_pid}"],
            capture_output=True,
            text=True,
            check=True,
        )
        self.pid = int(out.stdout.strip())

    def screen(self) -> str:
        return subprocess.run(
            ["tmux", "capture-pane", "-p", "-t", self.session],
            capture_output=True,
            text=True,
            check=False,
        ).stdout

    def wait_for_screen(self, text: str, timeout: float = 30.0) -> str:
        """The screen once ``text`` is on it (AssertionError with the screen otherwise)."""
        found = wait_for(lambda: (s := self.screen()) and text in s and s, timeout, 0.2)
        if not found:
            raise AssertionError(f"{text!r} did not appear on the screen:\n{self.screen()}")
        return str(found)

    def keys(self, *keys: str) -> None:
        subprocess.run(["tmux", "send-keys", "-t", self.session, *keys], check=True)

    def alive(self) -> bool:
        result = subprocess.run(
            ["tmux", "has-session", "-t", self.session], capture_output=True, check=False
        )
        return result.returncode == 0

    def kill9(self) -> None:
        os.kill(self.pid, signal.SIGKILL)
        wait_for(lambda: not self.alive(), 10, 0.1)

    def cleanup(self) -> None:
        subprocess.run(["tmux", "kill-session", "-t", self.session], capture_output=True)


def kill_mid_call_and_check_rerun(
    store: JobStore,
    job: Job,
    *,
    start: datetime,
    every: float,
    victim: str,
    kill: Callable[[], None],
    heir: Worker,
    admin: Any,
) -> float:
    """Kill the runner ``victim`` while it runs ``job`` (a long ``slow_ins`` call on MariaDB).

    Checks: its run becomes ``lost``; the orphaned statement (on the victim's executor
    connection, which the server runs on after its client vanished) is killed by the
    heir's reaper before the job is released; ``heir`` runs it on the next slot
    (``start + every``), once, never overlapping the orphan. ``admin``: a root
    connection. Returns the seconds from the kill to the ``lost`` row.
    """

    def executing() -> int | None:  # the connection the run executes on (its claim's)
        with admin.cursor() as cur:
            cur.execute("SELECT runner_connection_id FROM jobtui_job WHERE id = %s", (job.id,))
            row = cur.fetchone()
            return None if row is None else row[0]

    def listed(cid: int) -> bool:
        with admin.cursor() as cur:
            cur.execute("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = %s", (cid,))
            return bool(cur.fetchone()[0])

    orphan = executing()
    assert orphan is not None and listed(orphan)
    time.sleep(max(0.0, (start + timedelta(seconds=2) - utcnow()).total_seconds()))
    kill()
    killed_at = time.monotonic()
    time.sleep(0.5)
    assert listed(orphan)  # its client is gone, the server runs it on

    def lost() -> list[Run]:
        return [r for r in store.runs(job.name, limit=10) if r.outcome is Outcome.LOST]

    found = wait_for(lost, heir.heartbeat_timeout + 20, interval=0.1)
    assert found, f"no lost run: {store.runs(job.name, limit=10)}\n{heir.log()}"
    lost_after = time.monotonic() - killed_at
    [lost_run] = found
    assert victim in (lost_run.error or "") and lost_run.scheduled_for == start
    # the orphaned CALL ran on after the kill; the heir's reaper kills it at the takeover
    assert wait_for(lambda: not listed(orphan), 10, interval=0.05)
    freed_at = utcnow()
    heir_id = heir.runner_id()

    def rerun() -> list[Run]:
        return [r for r in store.runs(job.name, limit=10) if r.runner == heir_id and r.started]

    found = wait_for(rerun, 20, interval=0.1)
    assert found, f"{job.name} did not run again: {store.runs(job.name, limit=10)}"
    [second] = found
    assert second.started >= freed_at - timedelta(seconds=0.2)  # type: ignore[operator]
    assert second.scheduled_for == start + timedelta(seconds=every)  # the next slot, late, once
    assert heir.terminate() == 0, heir.log()
    check_exclusive(store)
    return lost_after
