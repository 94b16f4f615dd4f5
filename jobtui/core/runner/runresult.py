"""What a runner pool reports of each finished run (its ``on_run`` callback)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from jobtui.core.model import Outcome
from jobtui.core.timeutil import iso


@dataclass(frozen=True)
class RunResult:
    """What one finished run reports (``jobtui worker`` logs one line of it)."""

    job: str
    job_id: int
    slot: datetime
    outcome: Outcome
    started: datetime
    finished: datetime
    error: str | None
    manual: bool
    skipped: int
    failures: int | None = None  # the job's failures in a row after this run
    turned_broken: bool = False  # this failure made the job BROKEN
    owner: str = ""  # the job's owner (a job is named by owner and name)

    @property
    def duration(self) -> float:
        return (self.finished - self.started).total_seconds()

    @property
    def lateness(self) -> float:
        """Seconds from the slot to the start of the execution (0 when on time or early)."""
        return max(0.0, (self.started - self.slot).total_seconds())

    def line(self) -> str:
        text_ = (
            f"{iso(self.finished)} job={self.job} slot={iso(self.slot)} "
            f"outcome={self.outcome.value} duration={self.duration:.3f}s"
        )
        if self.manual:
            text_ += " manual"
        if self.skipped:
            text_ += f" skipped={self.skipped}"
        if self.error:
            text_ += f" error={self.error.splitlines()[0][:300]!r}"
        return text_


OnRun = Callable[[RunResult], None]


class PoolObserver(Protocol):
    """What a runner pool tells an observer (``RunnerPool(observer=...)``; the metrics of
    jobtui/core/metrics.py): called from the pool's threads, so quick and thread-safe."""

    def claimed(self, seconds: float, runs: int) -> None:
        """A claim of a batch of due jobs took ``seconds`` and claimed ``runs`` of them."""

    def recorded(self, seconds: float, runs: int) -> None:
        """Recording ``runs`` outcomes took ``seconds`` (retries included)."""

    def finished(self, result: RunResult) -> None:
        """One run ended and is recorded."""
