"""What the portable core knows of the code a job runs as its owner.

On MySQL/MariaDB a job runs as its owner's DEFINER routines
(jobtui/core/backends/mysql/routines.py); the runner verifies them for a batch
(a ``Verdict`` per job) and a routine that fails is refused (``RoutineRefused``).
On SQLite no such code exists and nothing is verified. ``EXPR_TIMEOUT`` bounds an
expr schedule's evaluation on both databases.
"""

from __future__ import annotations

from dataclasses import dataclass

EXPR_TIMEOUT = 2.0  # seconds an expr schedule's evaluation may take (max_statement_time)


class RoutineRefused(Exception):
    """The job's routine does not prove that it is the owner's own definition.

    ``runner_side``: the runner could not check it (its account lacks SELECT on
    mysql.proc): not the job's fault.
    """

    def __init__(self, message: str, *, runner_side: bool = False) -> None:
        super().__init__(message)
        self.runner_side = runner_side


@dataclass(frozen=True)
class Verdict:
    """The routine to run for a job, or why none may run."""

    name: str | None
    problem: str | None
    runner_side: bool = False  # the runner could not check (not the job's fault)
