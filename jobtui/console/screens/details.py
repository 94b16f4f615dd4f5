"""The details screen: every field of one job, its next runs, last error and history."""

from __future__ import annotations

from contextlib import suppress
from datetime import datetime

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.content import Content
from textual.css.query import NoMatches
from textual.markup import escape
from textual.screen import Screen
from textual.widgets import DataTable, Static

from jobtui.console import formatting as fmt
from jobtui.console.messages import ClockTicked, DetailsLoaded, JobsUpdated
from jobtui.console.screens.job_actions import JOB_BINDINGS, JobActions
from jobtui.console.widgets.footer import KeyFooter
from jobtui.core.errors import JobtuiError
from jobtui.core.model import Job
from jobtui.core.showtime import shown_next_run
from jobtui.core.store import JobStore
from jobtui.core.store.expressions import why_no_runs

HISTORY_LIMIT = 50


class DetailsScreen(JobActions, Screen[None]):
    """One job, in full, live: it follows the rows the app sends down (``JobsUpdated``)."""

    BINDINGS = [
        Binding("escape,backspace", "back", "Back", id="back"),
        *JOB_BINDINGS,
    ]

    def __init__(self, job: Job, *, store: JobStore) -> None:
        super().__init__(id="details")
        self.store = store
        self.job: Job | None = job

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="details-body"):
            with Horizontal(id="details-top"):
                yield Static(id="fields")
                yield Static(id="upcoming")
            yield Static(id="last-error")
            yield Static("Run history (latest first)", classes="section")
            yield DataTable(id="history", cursor_type="row", zebra_stripes=True)
        yield KeyFooter()

    def on_mount(self) -> None:
        table = self.query_one("#history", DataTable)
        for key, label in (
            ("scheduled", "Scheduled"),
            ("started", "Started"),
            ("took", "Took"),
            ("outcome", "Outcome"),
            ("runner", "Runner"),
            ("error", "Error"),
        ):
            table.add_column(label, key=key)
        self.render_job()
        self.load(self.job)

    def selected_job(self) -> Job | None:
        return self.job

    def on_jobs_updated(self, message: JobsUpdated) -> None:
        """Newer rows from the app: follow this job's, close or say so when it went."""
        if self.job is None:
            return
        job_id = self.job.id
        if message.removed == job_id:  # removed from this console
            self.dismiss(None)
            return
        for job in message.changed:
            if job.id == job_id:
                self._job_updated(job)
        if message.ids is not None and job_id not in message.ids:
            self._job_removed()

    def on_clock_ticked(self, _message: ClockTicked) -> None:
        self.render_job()

    def _job_updated(self, job: Job) -> None:
        self.job = job
        self.render_job()
        self.load(job)

    def _job_removed(self) -> None:
        """Removed elsewhere: say so in place (the fields stay as last read)."""
        if self.job is not None:
            with suppress(NoMatches):  # the screen may be composing or closing
                self.query_one("#fields", Static).update(
                    Content.from_markup(f"[b $error]{escape(self.job.name)} was removed[/]")
                )
        self.job = None

    def render_job(self) -> None:
        job = self.job
        if job is None:
            return
        try:
            fields = self.query_one("#fields", Static)
            error = self.query_one("#last-error", Static)
        except NoMatches:  # a clock tick can arrive while this screen composes or closes
            return
        now = self.store.now()
        s = job.schedule
        zone = fmt.job_zone(job)  # the job's times in its own zone, where it has one
        rows = [
            ("Job", f"[b]{escape(job.name)}[/]  (id {job.id}, owner {escape(job.owner)})"),
            ("Status", f"[b ${fmt.STATUS_VARIABLE[job.status]}]{job.status.value}[/]"),
            *(
                # the row as read did not validate: what is wrong, and why it never runs
                [("Problem", f"[$error]{escape(job.problem)}[/] (never run until fixed)")]
                if job.problem
                else []
            ),
            (
                "State",
                f"intent {job.intent.value}, phase {job.phase}, running {job.running}, "
                f"broken {job.broken}",
            ),
            ("What", escape(job.what.describe())),
            ("Schedule", escape(s.describe())),
            ("Description", escape(job.description) or fmt.DASH),
            ("Next run", _next_run(job, now, zone)),
            ("Last success", f"{fmt.stamp(job.last_run, zone)} ({fmt.age(job.last_run, now)})"),
            ("This run", fmt.stamp(job.this_run, zone)),
            ("Last outcome", job.last_outcome.value if job.last_outcome else fmt.DASH),
            ("Last took", fmt.duration(job.last_duration)),
            ("Total time", fmt.duration(job.total_time)),
            ("Successes", str(job.cycles)),
            ("Failures", fmt.failures_detail(job)),
            ("Runner", escape(fmt.runner_text(job, now))),
            ("Flags", _flags(job)),
            ("Created", fmt.stamp(job.created, zone)),
            ("Updated", fmt.stamp(job.updated, zone)),
        ]
        if job.broken_reason:
            rows.append(("Broken because", escape(job.broken_reason)))
        text = "\n".join(f"[dim]{k:>13}[/] {v}" for k, v in rows)
        fields.update(Content.from_markup(text))
        error.display = bool(job.last_error)
        if job.last_error:
            error.update(Content.from_markup(f"[b $error]Last error[/]\n{escape(job.last_error)}"))

    @work(thread=True, exclusive=True, group="details", exit_on_error=False)
    def load(self, job: Job | None) -> None:
        """``job``'s next runs and history, from the database (in a thread)."""
        if job is None:
            return
        store = self.store
        try:
            upcoming = store.preview(job, 5)
            runs = store.runs(job_id=job.id, owner=job.owner, limit=HISTORY_LIMIT)
        except JobtuiError as exc:
            self.post_message(DetailsLoaded(job.id, [], [], str(exc)))
            return
        self.post_message(DetailsLoaded(job.id, upcoming, runs))

    def on_details_loaded(self, message: DetailsLoaded) -> None:
        upcoming = self.query_one("#upcoming", Static)
        if message.error:
            upcoming.update(Content.from_markup(f"[$error]{escape(message.error)}[/]"))
            return
        lines = ["[b]Next 5 runs[/]"]
        none = f"none ({escape(why_no_runs(self.job))})"
        zone = fmt.job_zone(self.job) if self.job is not None else None
        lines += [fmt.stamp(t, zone) for t in message.upcoming] or [none]
        upcoming.update(Content.from_markup("\n".join(lines)))
        table = self.query_one("#history", DataTable)
        cursor = table.cursor_row
        table.clear()
        for run in message.runs:
            outcome_var = fmt.OUTCOME_VARIABLE[run.outcome]
            style = self.app.theme_variables.get(outcome_var, "")
            table.add_row(
                fmt.stamp(run.scheduled_for, zone),
                fmt.stamp(run.started, zone),
                fmt.duration(run.duration),
                Text(run.outcome.value, style=style if style.startswith("#") else ""),
                Text(fmt.short_runner(run.runner)),
                Text((run.error or "").splitlines()[0] if run.error else ""),
                key=str(run.id),
            )
        if message.runs:
            table.move_cursor(row=min(cursor, len(message.runs) - 1))

    def action_back(self) -> None:
        """Back to the job table."""
        self.dismiss(None)


def _next_run(job: Job, now: datetime, zone: str | None) -> str:
    """The next run in full, or why there is none (a halted job shows none, whatever
    next_run the row keeps: jobtui.core.showtime)."""
    shown = shown_next_run(job)
    if job.run_now and not job.running:
        return f"run now requested ({fmt.stamp(shown, zone) if shown else 'none scheduled'})"
    if shown is None:
        return f"{fmt.DASH} (none: {escape(why_no_runs(job))})"
    return f"{fmt.stamp(shown, zone)} ({fmt.until(shown, now)})"


def _flags(job: Job) -> str:
    flags = [
        name
        for name, on in (
            ("run now requested", job.run_now),
            ("abort requested", job.abort_requested),
        )
        if on
    ]
    return ", ".join(flags) or fmt.DASH
