"""The main screen: the live job table, filter, banner and status line."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Input, Static

from jobtui.console.screens.job_actions import JOB_BINDINGS, JobActions
from jobtui.console.widgets.footer import KeyFooter
from jobtui.console.widgets.job_table import JobTable
from jobtui.console.widgets.status_line import StatusLine
from jobtui.core.model import Job


class MainScreen(JobActions, Screen[None]):
    """Every job at a glance; every action one key away."""

    BINDINGS = [
        Binding("enter", "details", "Details", id="details"),
        *JOB_BINDINGS,
        Binding("slash", "filter", "Filter", id="filter"),
        Binding("escape", "clear_filter", "Clear filter", show=False, id="clear_filter"),
    ]

    def __init__(self, *, clock: Callable[[], datetime], all_owners: bool) -> None:
        super().__init__(id="main")
        self.all_owners = all_owners
        self.ready = False  # composed and mounted: the app may refresh into it
        self._table = JobTable(clock=clock, all_owners=all_owners, id="jobs")

    def compose(self) -> ComposeResult:
        yield Static("", id="banner")
        yield Input(
            placeholder="filter by name, owner or status — Enter keeps it, Esc clears it",
            id="filter",
        )
        yield self._table
        yield StatusLine(id="status")
        yield KeyFooter()

    def on_mount(self) -> None:
        self.query_one("#filter", Input).display = False
        self.query_one("#banner", Static).display = False
        self.table.focus()
        self.ready = True
        self.console.main_ready()

    @property
    def table(self) -> JobTable:
        return self._table

    def on_unmount(self) -> None:
        self.ready = False

    def selected_job(self) -> Job | None:
        return self.table.current_job()

    def show_banner(self, text: str | None) -> None:
        banner = self.query_one("#banner", Static)
        banner.display = text is not None
        if text is not None:
            banner.update(text)

    def on_job_table_selected(self, event: JobTable.Selected) -> None:
        event.stop()
        self.action_details()

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "filter":
            self.table.filter_text = event.value

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "filter":
            if not event.value:
                event.input.display = False
            self.table.focus()

    def action_details(self) -> None:
        """Open the job's details: every field, next runs, history."""
        if job := self._job():
            self.console.show_details(job)

    def action_filter(self) -> None:
        """Filter the table by name, owner or status."""
        box = self.query_one("#filter", Input)
        box.display = True
        box.focus()

    def action_clear_filter(self) -> None:
        """Clear the filter."""
        box = self.query_one("#filter", Input)
        box.value = ""
        box.display = False
        self.table.filter_text = ""
        self.table.focus()
