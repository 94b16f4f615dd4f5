"""Typed messages that thread workers post back to the event loop."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from textual.message import Message

from jobtui.core.model import Job, Run
from jobtui.core.store import RunnerInfo


@dataclass
class JobsRefreshed(Message):
    """One refresh tick's result: changed rows, and (some ticks) the full id set and runners."""

    changed: list[Job]
    ids: set[int] | None = None
    runners: list[RunnerInfo] | None = None
    full: bool = False
    prepared: Any = None  # widgets.job_cells.Prepared: the changed rows' cells, made in the thread


@dataclass
class DatabaseLost(Message):
    """A refresh could not reach the database (the message is masked)."""

    error: str


@dataclass
class JobChanged(Message):
    """An operator action changed a job; its new row."""

    job: Job
    verb: str


@dataclass
class JobRemoved(Message):
    """An operator removed a job."""

    job: Job


@dataclass
class ActionFailed(Message):
    """An operator action was refused or failed; nothing was changed."""

    verb: str
    name: str
    error: str


@dataclass
class DetailsLoaded(Message):
    """The details screen's slow parts: the next runs and the run history."""

    job_id: int
    upcoming: list
    runs: list[Run]
    error: str | None = None


@dataclass
class RunsLoaded(Message):
    """The run log screen's rows."""

    runs: list[Run]
    error: str | None = None


@dataclass
class RunnersChanged(Message):
    """The hosted runner pool started or stopped (or failed to)."""

    running: bool
    error: str | None = None
