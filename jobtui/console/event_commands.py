"""The app's side of the events screen: switch and adopt server events, keep the
Event Scheduler's state for the status line.

A mixin of ``jobtui.console.app.JobtuiApp`` (it keeps the app file about jobs).
Every database call runs in a thread worker and reports back by one message;
the handlers run on the event loop and pass the news down to the screen on top
(``EventsUpdated``, ``JobsUpdated``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from textual import work

from jobtui.console.messages import (
    ActionFailed,
    EventAdopted,
    EventChanged,
    EventsLoaded,
    EventsUpdated,
    JobsUpdated,
)
from jobtui.console.screens.confirm import AdoptScreen
from jobtui.console.screens.events import EventsScreen
from jobtui.core import events as server_events
from jobtui.core.errors import DatabaseUnavailable, JobtuiError
from jobtui.core.events import Event


class EventCommands:
    """Mixin for the app: the server events' actions (``Console.switch_event``, ``adopt_event``)."""

    # provided by the app
    store: Any
    screen: Any
    event_scheduler: str | None
    can_write: Callable[[str, str], bool]
    push_screen: Any
    notify: Any
    post_message: Any
    update_status: Callable[[], None]
    _main: Callable[[], Any]

    def action_events(self) -> None:
        """The server's own events (Event Scheduler): list, enable/disable, adopt."""
        if not isinstance(self.screen, EventsScreen):
            self.push_screen(EventsScreen(store=self.store))

    def read_event_scheduler(self) -> None:
        """Once at start, for the status line: is the server's Event Scheduler on?
        (Afterwards only the events screen reads it, while it is open.) Nothing to read
        where the database has no events (SQLite)."""
        if server_events.available(self.store):
            self._read_event_scheduler()

    @work(thread=True, exclusive=True, group="event-scheduler", exit_on_error=False)
    def _read_event_scheduler(self) -> None:
        try:
            listing = server_events.list_events(self.store, now=self.store.now(), poll=True)
        except JobtuiError as exc:
            self.post_message(EventsLoaded(None, str(exc)))
            return
        self.post_message(EventsLoaded(listing))

    def on_events_loaded(self, message: EventsLoaded) -> None:
        """Read at start, or bubbled up from the events screen: the scheduler's state."""
        if message.listing is not None:
            self.event_scheduler = message.listing.scheduler
        elif message.final:
            self.event_scheduler = None
        self.update_status()

    def switch_event(self, event: Event, enabled: bool) -> None:
        """Enable or disable a server event (ALTER EVENT, in a thread)."""
        verb = "enable" if enabled else "disable"
        if self.can_write(f"{verb} event", event.full_name):
            self.write_event(verb, event.full_name, enabled)

    @work(thread=True, group="actions", exit_on_error=False)
    def write_event(self, verb: str, full_name: str, enabled: bool) -> None:
        try:
            changed = server_events.set_enabled(self.store, full_name, enabled)
        except DatabaseUnavailable as exc:
            self.post_message(
                ActionFailed(f"{verb} event", full_name, f"{exc} — nothing was changed")
            )
            return
        except JobtuiError as exc:
            self.post_message(ActionFailed(f"{verb} event", full_name, str(exc)))
            return
        self.post_message(EventChanged(changed, verb))

    def on_event_changed(self, message: EventChanged) -> None:
        event = message.event
        self.notify(f"{message.verb}: event {event.full_name} is {event.status}", timeout=3)
        self.screen.post_message(EventsUpdated(event))

    def adopt_event(self, event: Event) -> None:
        """Ask, then adopt a server event as a jobtui job (in a thread)."""
        if not self.can_write("adopt event", event.full_name):
            return
        question = (
            f"Adopt {event.full_name} as a jobtui job?\n"
            f"It gets the event's schedule ({event.schedule}) and body, and runs as the "
            f"event's definer {event.definer}: connect as that account to adopt it.\n"
            "y: adopt and disable the event: the job takes over at the event's next slot.\n"
            "k: adopt and keep the event as it is: the job is created DISABLED; enable it "
            "(p) once the event is disabled or dropped."
        )
        if event.status != "ENABLED":
            question += f"\nThe event is {event.status}: the job is created DISABLED either way."

        def chosen(choice: str | None) -> None:
            if choice is not None and self.can_write("adopt event", event.full_name):
                self.adopt_in_thread(event.full_name, choice == "keep")

        self.push_screen(AdoptScreen(question), callback=chosen)

    @work(thread=True, group="actions", exit_on_error=False)
    def adopt_in_thread(self, full_name: str, keep_event: bool) -> None:
        try:
            adoption = server_events.adopt(self.store, full_name, keep_event=keep_event)
        except DatabaseUnavailable as exc:
            self.post_message(
                ActionFailed("adopt event", full_name, f"{exc} — nothing was changed")
            )
            return
        except JobtuiError as exc:
            self.post_message(ActionFailed("adopt event", full_name, str(exc)))
            return
        self.post_message(
            EventAdopted(adoption.job, full_name, keep_event, adoption.notes, adoption.event)
        )

    def on_event_adopted(self, message: EventAdopted) -> None:
        job = message.job
        main = self._main()
        if main is not None:
            main.table.apply([job])
        said = "; ".join(message.notes)
        self.notify(
            f"adopted event {message.event} as job {job.name} ({job.status.value})"
            + (f": {said}" if said else ""),
            timeout=10,
        )
        self.screen.post_message(JobsUpdated([job]))
        self.screen.post_message(EventsUpdated(message.left))
        self.update_status()
