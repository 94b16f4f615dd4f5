"""The server's own events (MySQL/MariaDB Event Scheduler) beside jobtui's jobs, live.

Reads ``jobtui.core.events.list_events`` in a thread worker every two seconds,
and only while this screen is open (the main view's idle cost stays one query
a second). The keys ask the app through the ``Console`` protocol: enable or
disable the event under the cursor, or adopt it as a jobtui job (asked first).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, cast

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.color import Color, ColorParseError
from textual.content import Content
from textual.css.query import NoMatches
from textual.markup import escape
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import DataTable, Input, Static
from textual.worker import Worker, WorkerState

from jobtui.console import formatting as fmt
from jobtui.console.messages import ClockTicked, EventsLoaded, EventsUpdated
from jobtui.console.protocol import Console
from jobtui.console.widgets.footer import KeyFooter
from jobtui.core import events as server_events
from jobtui.core.errors import InvalidInput, JobtuiError
from jobtui.core.events import Event, EventList
from jobtui.core.store import JobStore

EVENTS_REFRESH = 2.0  # seconds between reads, while the screen is open
BODY_LINES = 3  # lines of an event's body shown under the table

COLUMNS = (  # what an operator scans for first; the definer last (also under the table)
    ("schema", "Schema"),
    ("event", "Event"),
    ("schedule", "Schedule"),
    ("status", "Status"),
    ("next", "Next run"),
    ("last", "Last executed"),
    ("overlap", "Overlap"),
    ("definer", "Definer"),
)

SCHEDULER_MEANS = {
    "ON": "events run on their schedules",
    "OFF": "no event runs until it is switched on (SET GLOBAL event_scheduler = ON)",
    "DISABLED": "switched off at server start-up: no event runs until the server restarts with it",
}


def may_overlap(event: Event) -> bool:
    """A recurring event whose body takes no named lock: a slow run overlaps the next."""
    return event.overlap_warning is not None


EVENT_ACTIONS = frozenset({"switch", "adopt", "filter"})


class EventsScreen(Screen[None]):
    """Every event the account may see, with its schedule, status and next run."""

    BINDINGS = [
        Binding("escape", "back", "Back", id="back"),
        Binding("e", "switch", "Enable/disable", id="switch_event"),
        Binding("a", "adopt", "Adopt as a job", id="adopt_event"),
        Binding("slash", "filter", "Filter", id="event_filter"),
    ]

    def __init__(self, *, store: JobStore) -> None:
        super().__init__(id="events")
        self.store = store
        self.listing: EventList | None = None
        self.read_at: str | None = None
        self.error: str | None = None
        self.final = False  # nothing to list here, ever (SQLite): no more reads
        self._cells: dict[str, tuple[Any, ...]] = {}  # row key -> cells on screen
        self._loading = False
        self._timer: Timer | None = None

    @property
    def console(self) -> Console:
        """The app, as far as a screen may use it."""
        return cast(Console, self.app)

    def compose(self) -> ComposeResult:
        yield Static(id="events-head")
        yield Input(
            placeholder="filter by schema, name, definer or status — Enter keeps it, Esc clears it",
            id="event-filter",
        )
        yield DataTable(id="event-table", cursor_type="row", zebra_stripes=True)
        yield Static(id="event-detail")
        yield KeyFooter()

    def on_mount(self) -> None:
        table = self.query_one("#event-table", DataTable)
        for key, label in COLUMNS:
            table.add_column(label, key=key)
        self.query_one("#event-filter", Input).display = False
        self.render_head()
        table.focus()
        self.reload()
        self._timer = self.set_interval(EVENTS_REFRESH, self.reload)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Where the database has no events (SQLite), offer no key that acts on one: the
        footer, the help screen and the palette leave them out, and the keys do nothing."""
        nothing_here = self.final or (
            self.listing is None and not server_events.available(self.store)
        )
        return not (action in EVENT_ACTIONS and nothing_here)

    # ------------------------------------------------------------------ reading

    def reload(self) -> None:
        """Read the events again (unless a read is still on its way)."""
        if self.final or self._loading:
            return
        self._loading = True
        self.load(self.store.now())

    @work(thread=True, exclusive=True, group="events", exit_on_error=False)
    def load(self, now: datetime) -> None:
        """The server's events and scheduler state (in a thread)."""
        try:
            listing = server_events.list_events(self.store, now=now, poll=True)
        except InvalidInput as exc:  # final where the database has no events (SQLite)
            final = not server_events.available(self.store)
            self.post_message(EventsLoaded(None, str(exc), final=final))
            return
        except JobtuiError as exc:
            self.post_message(EventsLoaded(None, str(exc)))
            return
        self.post_message(EventsLoaded(listing))

    def on_events_loaded(self, message: EventsLoaded) -> None:
        # Not stopped: it bubbles on to the app, which keeps the scheduler's state.
        self._loading = False
        self.error = message.error
        if message.final:
            self.final = True
            if self._timer is not None:
                self._timer.stop()
            self.listing = None
            self.refresh_bindings()  # e, a and / go: nothing here they could act on
        elif message.listing is not None:
            if self.listing is None:
                self.refresh_bindings()  # (the keys depend on there being a listing)
            self.listing = message.listing
            self.read_at = self.store.now().strftime("%H:%M:%S UTC")
        self.render_head()
        self.render_rows()

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        # Not stopped: the app turns a failed worker into a notice.
        if event.worker.group == "events" and event.state in (
            WorkerState.ERROR,
            WorkerState.CANCELLED,
        ):
            self._loading = False

    def on_events_updated(self, message: EventsUpdated) -> None:
        """An operator changed an event here: show its new row now, then read them all."""
        if message.event is not None and self.listing is not None:
            changed = message.event
            events = [
                changed if e.full_name == changed.full_name else e for e in self.listing.events
            ]
            self.listing = EventList(scheduler=self.listing.scheduler, events=events)
            self.render_rows()
        self._loading = False  # a read started before the change may show the old row
        self.reload()

    def on_clock_ticked(self, _message: ClockTicked) -> None:
        """Every second: advance the ages and countdowns (no query)."""
        self.render_rows()

    # ------------------------------------------------------------------ showing

    def _style(self, variable: str) -> str:
        try:
            return Color.parse(self.app.theme_variables.get(variable, "")).hex
        except ColorParseError:
            return "dim"

    def shown_events(self) -> list[Event]:
        """The events that pass the filter, in the order read (schema, name)."""
        if self.listing is None:
            return []
        try:
            needle = self.query_one("#event-filter", Input).value.strip().lower()
        except NoMatches:
            needle = ""
        if not needle:
            return list(self.listing.events)
        return [
            e
            for e in self.listing.events
            if needle in e.full_name.lower()
            or needle in e.definer.lower()
            or needle in e.status.lower()
        ]

    def cells(self, event: Event, now: datetime) -> tuple[Any, ...]:
        status = Text(
            event.status, style=self._style(fmt.EVENT_STATUS_VARIABLE.get(event.status, ""))
        )
        if may_overlap(event):
            overlap = Text("⚠ may overlap", style=self._style("warning"))
        elif event.kind == "every":
            overlap = Text("guarded (lock)")
        else:
            overlap = Text(fmt.DASH)
        schedule = fmt.event_schedule_text(
            event.kind, event.interval_value, event.interval_field, event.execute_at
        )
        return (  # Text, not str: DataTable reads a str as markup ("[" in a name)
            Text(event.schema),
            Text(event.name),
            Text(schedule),
            status,
            Text(fmt.until(event.next_run, now)),
            Text(fmt.age(event.last_executed, now)),
            overlap,
            Text(event.definer),
        )

    def render_rows(self) -> None:
        """Bring the table to the events shown, by row key: cursor and scroll survive."""
        try:
            table = self.query_one("#event-table", DataTable)
        except NoMatches:  # a tick can arrive while the screen composes or closes
            return
        now = self.store.now()
        wanted = {e.full_name: self.cells(e, now) for e in self.shown_events()}
        current = (
            table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
            if table.row_count
            else None
        )
        for key in [k for k in self._cells if k not in wanted]:
            table.remove_row(key)
            del self._cells[key]
        added = False
        column_keys = [key for key, _ in COLUMNS]
        for key, cells in wanted.items():
            old = self._cells.get(key)
            if old is None:
                table.add_row(*cells, key=key)
                added = True
            else:
                for column, before, after in zip(column_keys, old, cells, strict=True):
                    if _plain(before) != _plain(after) or _style(before) != _style(after):
                        table.update_cell(key, column, after, update_width=True)
            self._cells[key] = cells
        if added:
            table.sort("schema", "event", key=lambda cells: (cells[0].plain, cells[1].plain))
            if current in self._cells:
                table.move_cursor(row=table.get_row_index(current))
        self.render_detail()

    def render_head(self) -> None:
        try:
            head = self.query_one("#events-head", Static)
        except NoMatches:
            return
        if self.final:
            text = f"[b]No events here[/]: {escape(self.error or '')}"
        else:
            parts: list[str] = []
            listing = self.listing
            if listing is None:
                parts.append("reading the server's events…")
            else:
                state = listing.scheduler
                colour = fmt.SCHEDULER_VARIABLE.get(state, "warning")
                means = SCHEDULER_MEANS.get(state, "")
                parts.append(f"Event Scheduler [b ${colour}]{escape(state)}[/]: {escape(means)}")
                shown = self.shown_events()
                total = len(listing.events)
                risky = sum(1 for e in shown if may_overlap(e))
                summary = f"{total} event{'s' if total != 1 else ''} visible"
                if len(shown) != total:
                    summary = f"{len(shown)} of {summary} (filter)"
                if risky:
                    summary += f", [$warning]{risky} may overlap (no named lock)[/]"
                parts.append(summary)
            if self.error:
                parts.append(f"[$error]{escape(self.error)}[/] (showing the events last read)")
            elif self.read_at:
                parts.append(f"read {self.read_at}")
            text = " │ ".join(parts)
        head.update(Content.from_markup(text))

    def render_detail(self) -> None:
        try:
            detail = self.query_one("#event-detail", Static)
        except NoMatches:
            return
        event = self.selected_event()
        detail.display = event is not None
        if event is None:
            return
        now = self.store.now()
        if event.next_run is not None:
            next_run = f"{fmt.stamp(event.next_run)} ({fmt.until(event.next_run, now)})"
        else:
            next_run = (
                f"{fmt.DASH} ({'no slot left' if event.status == 'ENABLED' else 'not enabled'})"
            )
        body = event.body.strip().splitlines() or [""]
        if len(body) > BODY_LINES:
            body = [*body[:BODY_LINES], "…"]
        lines = [
            f"[b]{escape(event.full_name)}[/]  definer {escape(event.definer)}  "
            f"on completion {escape(event.on_completion)}  time zone {escape(event.time_zone)}",
            f"[dim]Schedule[/] {escape(event.schedule)}",
            f"[dim]Last executed[/] {fmt.stamp(event.last_executed)}  [dim]Next run[/] {next_run}",
            *(
                f"[dim]{'Body' if i == 0 else '    '}[/] {escape(line)}"
                for i, line in enumerate(body)
            ),
        ]
        if event.overlap_warning:
            lines.append(
                f"[$warning]⚠ {escape(event.overlap_warning)}: adopting it (a) gives it "
                "jobtui's overlap protection[/]"
            )
        detail.update(Content.from_markup("\n".join(lines)))

    def selected_event(self) -> Event | None:
        try:
            table = self.query_one("#event-table", DataTable)
        except NoMatches:
            return None
        if not table.row_count or self.listing is None:
            return None
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        return next((e for e in self.listing.events if e.full_name == key), None)

    def on_data_table_row_highlighted(self, _event: DataTable.RowHighlighted) -> None:
        self.render_detail()

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "event-filter":
            self.render_rows()
            self.render_head()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "event-filter":
            if not event.value:
                event.input.display = False
            self.query_one("#event-table", DataTable).focus()

    # ------------------------------------------------------------------ keys

    def _event(self) -> Event | None:
        event = self.selected_event()
        if event is None:
            self.app.notify("no event selected", severity="warning", timeout=3)
        return event

    def action_switch(self) -> None:
        """Enable the event under the cursor, or disable it when enabled."""
        if event := self._event():
            self.console.switch_event(event, event.status != "ENABLED")

    def action_adopt(self) -> None:
        """Adopt the event as a jobtui job (asks first)."""
        if event := self._event():
            self.console.adopt_event(event)

    def action_filter(self) -> None:
        """Filter the events by schema, name, definer or status."""
        box = self.query_one("#event-filter", Input)
        box.display = True
        box.focus()

    def action_back(self) -> None:
        """Clear the filter if one is set, else back to the jobs."""
        box = self.query_one("#event-filter", Input)
        if box.value or box.display:
            box.value = ""
            box.display = False
            self.query_one("#event-table", DataTable).focus()
            self.render_rows()
            self.render_head()
            return
        self.dismiss(None)


def _plain(cell: Any) -> str:
    return cell.plain if isinstance(cell, Text) else str(cell)


def _style(cell: Any) -> str:
    return str(cell.style) if isinstance(cell, Text) else ""
