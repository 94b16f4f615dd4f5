"""MySQL/MariaDB's ``JobRoutines``: the owner's DEFINER routines a job runs as, created
and dropped in the owner's own session (``backends.mysql.routines``, docs/privileges.md)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, ClassVar

from sqlalchemy.engine import Engine

from jobtui.core.backends.base import JobRoutines
from jobtui.core.backends.mysql import routines
from jobtui.core.model import Job, Schedule, What


class OwnerRoutines(JobRoutines):
    present: ClassVar[bool] = True

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def needed(self, what: What, schedule: Schedule) -> bool:
        return bool(routines.wanted(0, what, schedule, None))

    def install(
        self,
        job_id: int,
        what: What | None,
        schedule: Schedule | None,
        *,
        session_role: bool = True,
    ) -> tuple[list[Any], list[Any]]:
        return routines.install_for_job(
            self.engine, job_id, what, schedule, session_role=session_role
        )

    def drop(
        self, job_id: int, *, keep: list[Any] | None = None, only: list[Any] | None = None
    ) -> None:
        routines.drop_for_job(self.engine, job_id, keep, only=only)

    def drop_replaced(self, job_id: int, keep: list[Any], *, what: bool, expr: bool) -> None:
        types = ([routines.PROCEDURE] if what else []) + ([routines.FUNCTION] if expr else [])
        routines.drop_for_job(self.engine, job_id, keep=keep, types=types)

    def install_missing(self, jobs: Iterable[Job]) -> int:
        return routines.install_missing(self.engine, jobs)
