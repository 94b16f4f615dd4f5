"""The headless core of jobtui: model, schema, schedules, store, actions, runner.

Nothing under ``jobtui.core`` imports Textual (``tests/architecture/test_core_import.py``
proves it), so the core is usable as a library, from the command line and by
headless workers.
"""

from jobtui.core.errors import (
    DatabaseUnavailable,
    InvalidInput,
    JobLocked,
    JobNotFound,
    JobtuiError,
)
from jobtui.core.model import Job, Outcome, Run, Schedule, Status, What
from jobtui.core.store import JobStore, open_store

__all__ = [
    "DatabaseUnavailable",
    "InvalidInput",
    "Job",
    "JobLocked",
    "JobNotFound",
    "JobStore",
    "JobtuiError",
    "Outcome",
    "Run",
    "Schedule",
    "Status",
    "What",
    "open_store",
]
