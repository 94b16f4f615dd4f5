"""Retention of the run log: how much of it to keep (a value; no database).

``JobStore.prune_runs`` (``jobtui prune``, ``jobtui.core.store.pruning``) and the
runners' housekeeping prune with the same ``Retention``; one pruner at a time (on
MySQL/MariaDB, the backend's prune lock, ``prune_lock_name``).
"""

from __future__ import annotations

from dataclasses import dataclass

from jobtui.core import lock_names
from jobtui.core.errors import InvalidInput

PRUNE_BATCH = 500
MAX_KEEP_RUNS = 100_000_000
MAX_KEEP_DAYS = 36_500.0


@dataclass(frozen=True)
class Retention:
    """How much of the run log to keep (``prune_runs``; runners prune with it).

    ``keep_runs`` newest successful runs per job and, apart, as many error runs
    (failed, aborted, lost); successful runs older than ``keep_days`` and error
    runs older than ``keep_error_days`` go. None switches a limit off. Running
    rows are never deleted.
    """

    keep_runs: int | None = 1000
    keep_days: float | None = 30.0
    keep_error_days: float | None = 90.0
    interval: float = 60.0  # seconds between a runner's pruning passes
    batch: int = PRUNE_BATCH  # rows per DELETE transaction

    def __post_init__(self) -> None:
        k = self.keep_runs
        if k is not None and (
            isinstance(k, bool) or not isinstance(k, int) or not 0 <= k <= MAX_KEEP_RUNS
        ):
            raise InvalidInput(
                f"invalid keep {k!r}: expected a whole number, 0 or more (at most {MAX_KEEP_RUNS})"
            )
        for label, days in (
            ("--keep-days", self.keep_days),
            ("--keep-error-days", self.keep_error_days),
        ):
            if days is not None and (
                isinstance(days, bool)
                or not isinstance(days, (int, float))
                or not 0 < days <= MAX_KEEP_DAYS  # NaN fails too
            ):
                raise InvalidInput(
                    f"invalid {label} {days!r}: expected a number of days above 0, at most "
                    f"{MAX_KEEP_DAYS:g}"
                )
        b = self.batch
        if isinstance(b, bool) or not isinstance(b, int) or not 1 <= b <= 100_000:
            raise InvalidInput(f"invalid batch {b!r}: expected a whole number from 1 to 100000")
        iv = self.interval
        if isinstance(iv, bool) or not isinstance(iv, (int, float)) or not 0 < iv <= 86_400:
            raise InvalidInput(f"invalid interval {iv!r}: seconds above 0, at most 86400")

    @property
    def error_days(self) -> float | None:
        """The age limit of error runs: never shorter than that of successful runs."""
        if self.keep_days is None or self.keep_error_days is None:
            return None  # no age limit (successful runs never age out: neither do errors)
        return max(self.keep_days, self.keep_error_days)

    @property
    def enabled(self) -> bool:
        return self.keep_runs is not None or self.keep_days is not None


DEFAULT_RETENTION = Retention()


def prune_lock_name(key: str, schema_name: str) -> str:
    """The pruners' named lock: keyed like the jobs' (``lock_names.lock_name``), so that an
    operator can neither hold it to stop every pruning nor compute it."""
    return lock_names.lock_name(key, schema_name, "prune")
