"""Helpers for runner tests: worker processes, waiting, and a clock tests can move."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any


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
    """A ``python -m jobtui.core.runner`` process with its stderr in a file."""

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
        self.log_path = log_dir / f"{name}.log"
        cmd = [
            sys.executable,
            "-m",
            "jobtui.core.runner",
            "--db",
            url,
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
            if line.startswith("jobtui worker ") and "thread(s) on" in line:
                return line.split()[2].rstrip(":")
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
