"""What a runner pool reports of each finished run (its ``on_run`` callback)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

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

    @property
    def duration(self) -> float:
        return (self.finished - self.started).total_seconds()

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
