"""The run log: of one job (``l``) or of all jobs (``L``), filterable by job and outcome."""

from __future__ import annotations

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.color import Color, ColorParseError
from textual.containers import Horizontal
from textual.content import Content
from textual.markup import escape
from textual.screen import Screen
from textual.widgets import DataTable, Input, Select, Static

from jobtui.console import formatting as fmt
from jobtui.console.messages import RunsLoaded
from jobtui.console.widgets.footer import KeyFooter
from jobtui.core.errors import JobtuiError
from jobtui.core.model import Job, Outcome, Run
from jobtui.core.store import JobStore

RUN_LIMIT = 500


class RunLogScreen(Screen[None]):
    """Every run of one job, or of every job, latest first."""

    BINDINGS = [
        Binding("escape", "back", "Back", id="back"),
        Binding("slash", "focus_filter", "Filter by job", id="filter"),
        Binding("o", "focus_outcome", "Outcome", id="outcome"),
    ]

    def __init__(self, *, store: JobStore, all_owners: bool, job: Job | None = None) -> None:
        super().__init__(classes="runlog")
        self.store = store
        self.all_owners = all_owners
        self.job = job  # None: every job's runs
        self.runs: list[Run] = []

    def compose(self) -> ComposeResult:
        whose = (
            f"Runs of [b]{escape(self.job.name)}[/] (owner {escape(self.job.owner)})"
            if self.job is not None
            else "Runs of [b]all jobs[/]"
        )
        yield Static(Content.from_markup(f"{whose}, latest first"), id="runlog-title")
        with Horizontal(id="runlog-filters"):
            yield Input(placeholder="job name contains…", id="job-filter")
            yield Select(
                [(o.value, o.value) for o in Outcome],
                prompt="any outcome",
                id="outcome-filter",
            )
        yield DataTable(id="runs", cursor_type="row", zebra_stripes=True)
        yield Static(id="runlog-count")
        yield KeyFooter()

    def on_mount(self) -> None:
        table = self.query_one("#runs", DataTable)
        for key, label in (
            ("job", "Job"),
            ("scheduled", "Scheduled"),
            ("took", "Took"),
            ("outcome", "Outcome"),
            ("runner", "Runner"),
            ("error", "Error"),
        ):
            table.add_column(label, key=key)
        table.focus()
        if self.job is not None:  # one job: no name to filter by
            self.query_one("#job-filter", Input).display = False
        self.reload()
        self.set_interval(2.0, self.reload)

    def _outcome(self) -> str | None:
        value = self.query_one("#outcome-filter", Select).value
        return None if value is Select.NULL else str(value)

    def reload(self) -> None:
        """Read the run log again, with the outcome chosen now."""
        self.load(self._outcome(), self.job)

    @work(thread=True, exclusive=True, group="runlog", exit_on_error=False)
    def load(self, outcome: str | None, job: Job | None) -> None:
        """The run log's rows (in a thread): ``job``'s, or every job's."""
        try:
            if job is not None:
                runs = self.store.runs(
                    job_id=job.id, owner=job.owner, outcome=outcome, limit=RUN_LIMIT
                )
            else:
                runs = self.store.runs(all_owners=self.all_owners, outcome=outcome, limit=RUN_LIMIT)
        except JobtuiError as exc:
            self.post_message(RunsLoaded([], str(exc)))
            return
        self.post_message(RunsLoaded(runs))

    def on_runs_loaded(self, message: RunsLoaded) -> None:
        if message.error:
            # Shown in place (not as a notification every two seconds); rows stay stale.
            self.query_one("#runlog-count", Static).update(
                Content.from_markup(
                    f"[$error]{escape(message.error)}[/] (showing the last rows read)"
                )
            )
            return
        self.runs = message.runs
        self.show()

    def show(self) -> None:
        needle = self.query_one("#job-filter", Input).value.strip().lower()
        table = self.query_one("#runs", DataTable)
        cursor = table.cursor_row
        table.clear()
        shown = 0
        # one job's log: in its zone (as its details); all jobs': UTC, every row alike
        zone = fmt.job_zone(self.job) if self.job is not None else None
        for run in self.runs:
            if needle and needle not in run.job.lower():
                continue
            shown += 1
            table.add_row(
                Text(run.job),
                fmt.stamp(run.scheduled_for, zone),
                fmt.duration(run.duration),
                Text(run.outcome.value, style=self._style(fmt.OUTCOME_VARIABLE[run.outcome])),
                Text(fmt.short_runner(run.runner)),
                Text((run.error or "").splitlines()[0] if run.error else ""),
                key=str(run.id),
            )
        if shown:
            table.move_cursor(row=min(cursor, shown - 1))
        self.query_one("#runlog-count", Static).update(
            f"{shown} of the latest {len(self.runs)} runs"
        )

    def _style(self, variable: str) -> str:
        try:
            return Color.parse(self.app.theme_variables.get(variable, "")).hex
        except ColorParseError:
            return "dim"

    def on_input_changed(self, event: Input.Changed) -> None:
        self.show()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.query_one("#runs", DataTable).focus()

    def on_select_changed(self, event: Select.Changed) -> None:
        self.reload()

    def action_focus_filter(self) -> None:
        """Filter the runs by job name."""
        self.query_one("#job-filter", Input).focus()

    def action_focus_outcome(self) -> None:
        """Filter the runs by outcome."""
        self.query_one("#outcome-filter", Select).focus()

    def action_back(self) -> None:
        """Clear the job filter first when typing in it (or set), else back."""
        box = self.query_one("#job-filter", Input)
        if box.has_focus or box.value:
            box.value = ""
            self.query_one("#runs", DataTable).focus()
            self.show()
            return
        self.dismiss(None)
