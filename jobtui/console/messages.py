"""Typed messages: what thread workers post back to the event loop, and what the app
tells the screen on top.

Data flows one way: a worker posts plain data up to its node (the app or a
screen), which applies it on the event loop; the app passes rows down to the
screen on top with ``JobsUpdated`` and ``ClockTicked`` (they do not bubble
back), so it never reaches into a screen.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from textual.message import Message

from jobtui.console.widgets.job_cells import Prepared
from jobtui.core.events import Event, EventList
from jobtui.core.model import Job, Run
from jobtui.core.store import RunnerInfo


@dataclass
class JobsRefreshed(Message):
    """One refresh tick's result: changed rows, and (some ticks) the full id set and runners."""

    changed: list[Job]  # rows that differ from what the table showed when the tick began
    ids: set[int] | None = None
    runners: list[RunnerInfo] | None = None
    full: bool = False
    newest: datetime | None = None  # the newest ``updated`` read (for the refresh plan)
    prepared: Prepared = field(default_factory=Prepared)  # ``changed``'s widths and sort keys
    page: bool = False  # the first screenful, sent ahead of the first full load (more follows)


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


@dataclass
class RunsStillInFlight(Message):
    """Quitting: the hosted runners' runs did not end within the short wait (the names)."""

    in_flight: list[str]


@dataclass
class EventsLoaded(Message):
    """The server's events and its Event Scheduler's state, as read (events screen, or the
    app's one read at start). Posted to the events screen, it bubbles on to the app, which
    keeps the scheduler's state for the status line.

    ``final``: no events can ever be listed here (SQLite): stop asking.
    """

    listing: EventList | None
    error: str | None = None
    final: bool = False


@dataclass
class EventChanged(Message):
    """An operator enabled or disabled a server event; its new row."""

    event: Event
    verb: str


@dataclass
class EventAdopted(Message):
    """An operator adopted a server event as a jobtui job."""

    job: Job
    event: str  # schema.name
    keep_event: bool
    notes: tuple[str, ...] = ()  # what adopt did and what is left to do (from the core)
    left: Event | None = None  # the event as adopt left it


@dataclass
class JobsUpdated(Message, bubble=False):
    """From the app to the screen on top: rows the console now shows.

    ``changed``: newer rows (a refresh or an action); ``ids``: after a refresh
    that read them, every job id (a job not in it was removed elsewhere);
    ``removed``: a job this console removed.
    """

    changed: list[Job]
    ids: set[int] | None = None
    removed: int | None = None


class ClockTicked(Message, bubble=False):
    """From the app to the screen on top: a refresh period passed (advance shown times)."""


@dataclass
class EventsUpdated(Message, bubble=False):
    """From the app to the screen on top: an operator changed a server event.

    ``event``: its new row, when the change returned one; read the list again anyway.
    """

    event: Event | None = None
