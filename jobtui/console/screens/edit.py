"""The edit / new job form: validated as you type, with a live preview of the next runs."""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.markup import escape
from textual.message import Message
from textual.screen import ModalScreen
from textual.validation import ValidationResult, Validator
from textual.widgets import Button, Input, Label, Select, Static

from jobtui.console import formatting as fmt
from jobtui.core import alerts
from jobtui.core.errors import InvalidInput, JobtuiError
from jobtui.core.jobdefs import as_changed, check_description, check_max_failures
from jobtui.core.model import Job, Schedule, What, check_job_name
from jobtui.core.schedules import make_schedule
from jobtui.core.store import JobStore
from jobtui.core.store.expressions import why_no_runs
from jobtui.core.timeutil import parse_when

WHAT_KINDS = [("SQL statement", "sql"), ("Python action", "action"), ("Procedure call", "call")]
SCHEDULE_KINDS = [
    ("every N seconds", "every"),
    ("cron", "cron"),
    ("expression", "expr"),
    ("once", "once"),
]
VALUE_HINT = {
    "every": "seconds between runs, e.g. 5 or 0.5",
    "cron": "5 fields (6 with seconds), e.g. */5 * * * *",
    "expr": "SQL date expression, e.g. NOW() + INTERVAL 1 DAY",
    "once": "(no value: runs once at start, or now)",
}
# The text inputs, by id: what ``read_form`` reads.
FIELDS = (
    "name",
    "target",
    "args",
    "schedule-value",
    "tz",
    "start",
    "finish",
    "description",
    "max-failures",
    "alert",
)
ALERT_HINT = "empty: default; none; command:/path or URLs"
TARGET_HINT = {
    "sql": "one SQL statement",
    "action": "registered action name, e.g. demo.sleep",
    "call": "SCHEMA.PROCEDURE",
}


@dataclass(frozen=True)
class JobForm:
    """What the form yields: a validated definition."""

    name: str
    what: What
    schedule: Schedule
    description: str
    max_failures: int
    # the alert field's text (alerts.from_text); None: not loaded yet, left as it is
    alert: str | None = None


class FieldCheck(Validator):
    """A textual validator running one of the core's own checks (the CLI's rules)."""

    def __init__(self, check: Callable[[str], object]) -> None:
        super().__init__()
        self.check = check

    def validate(self, value: str) -> ValidationResult:
        try:
            self.check(value)
        except InvalidInput as exc:
            return self.failure(str(exc))
        return self.success()


class EditScreen(ModalScreen[JobForm | None]):
    """Define a new job, or change one."""

    BINDINGS = [
        Binding("ctrl+s", "save", "Save", id="save"),
        Binding("escape", "cancel", "Cancel", id="cancel"),
    ]

    class Checked(Message):
        """The database's verdict on the current form (what exists, next runs)."""

        def __init__(
            self, version: int, error: str | None, upcoming: list[datetime], none: str = ""
        ) -> None:
            super().__init__()
            self.version = version
            self.error = error
            self.upcoming = upcoming
            self.none = none  # why ``upcoming`` is empty

    def __init__(self, store: JobStore, job: Job | None, *, read_only: bool = False) -> None:
        super().__init__(classes="dialog-screen", id="edit")
        self.store = store
        self.job = job
        self.read_only = read_only  # the console refuses changes: Save stays disabled
        self._version = 0
        self._pending: JobForm | None = None
        self._checked: JobForm | None = None
        # Fields typed in so far: a new job's empty form is not an error until then.
        self._typed: set[str] = set()
        self._opened_with: dict[str, str] = {}
        # The selects' values, kept here: validators run before the selects are mounted.
        self._alert_loaded = job is None  # the field's text is the job's (or a new job's)
        self.what_kind: str = job.what.kind if job else "sql"
        self.schedule_kind: str = job.schedule.kind if job else "every"

    # ------------------------------------------------------------------ layout

    def compose(self) -> ComposeResult:
        job = self.job
        title = f"Edit {job.name}" if job else "New job"
        with Vertical(classes="dialog form"):
            yield Label(title, classes="title")
            with VerticalScroll(id="form-fields"):
                yield from self._what_fields()
                yield from self._schedule_fields()
                yield from self._other_fields()
            yield Static(id="form-error")
            yield Static(id="preview")
            with Horizontal(classes="buttons"):
                yield Button("Save \\[ctrl+s]", variant="primary", id="save", disabled=True)
                yield Button("Cancel \\[esc]", id="cancel")

    def _what_fields(self) -> ComposeResult:
        """The job's name and what it runs."""
        job = self.job
        what = job.what if job else None
        yield from _row(
            "Name",
            Input(
                job.name if job else "",
                placeholder="letters, digits, _ . -",
                id="name",
                compact=True,
                disabled=job is not None,
                validators=[FieldCheck(check_job_name)],
            ),
        )
        yield from _row(
            "Runs",
            Select(
                WHAT_KINDS,
                value=what.kind if what else "sql",
                allow_blank=False,
                id="what-kind",
                compact=True,
            ),
        )
        yield from _row(
            "Target",
            Input(
                what.target if what else "",
                placeholder=TARGET_HINT[what.kind if what else "sql"],
                id="target",
                compact=True,
                validators=[FieldCheck(self._check_target)],
            ),
        )
        yield from _row(
            "Arguments",
            Input(
                shlex.join(what.args) if what else "",
                placeholder="space separated, quote with '…' (call and action)",
                id="args",
                compact=True,
                validators=[FieldCheck(self._check_args)],
            ),
        )

    def _schedule_fields(self) -> ComposeResult:
        """The job's schedule: its kind, value, time zone and window."""
        s = self.job.schedule if self.job else None
        value = ""
        if s is not None:
            value = {
                "every": fmt_number(s.every),
                "cron": s.cron or "",
                "expr": s.expr or "",
                "once": "",
            }[s.kind]
        yield from _row(
            "Schedule",
            Select(
                SCHEDULE_KINDS,
                value=s.kind if s else "every",
                allow_blank=False,
                id="schedule-kind",
                compact=True,
            ),
        )
        yield from _row(
            "Value",
            Input(
                value if s else "60",
                placeholder=VALUE_HINT[s.kind if s else "every"],
                id="schedule-value",
                compact=True,
                validators=[FieldCheck(self._check_value)],
            ),
        )
        yield from _row(
            "Time zone",
            Input(
                (s.tz or "") if s else "",
                placeholder="IANA name for cron, e.g. Europe/Paris (default UTC)",
                id="tz",
                compact=True,
                validators=[FieldCheck(self._check_tz)],
            ),
        )
        yield from _row(
            "Start",
            Input(
                _iso(s.start) if s else "",
                placeholder="ISO 8601, e.g. 2026-12-24T18:00:00+01:00 (empty: now)",
                id="start",
                compact=True,
                validators=[FieldCheck(_check_when("start"))],
            ),
        )
        yield from _row(
            "Finish",
            Input(
                _iso(s.finish) if s else "",
                placeholder="ISO 8601 (empty: no end)",
                id="finish",
                compact=True,
                validators=[FieldCheck(_check_when("finish"))],
            ),
        )

    def _other_fields(self) -> ComposeResult:
        """The description, how many failures make it broken, and where its alerts go."""
        job = self.job
        yield from _row(
            "Description",
            Input(
                job.description if job else "",
                id="description",
                compact=True,
                validators=[FieldCheck(check_description)],
            ),
        )
        # one row for both: the form still fits 80x24 with the alert field
        with Horizontal(classes="field"):
            yield Label("Max failures", classes="label")
            yield Input(
                str(job.max_failures if job else 16),
                id="max-failures",
                compact=True,
                validators=[FieldCheck(check_max_failures)],
            )
            yield Label("Alert", classes="label beside")
            yield Input(
                "",
                id="alert",
                compact=True,
                placeholder="loading…" if job else ALERT_HINT,
                disabled=job is not None,
                validators=[FieldCheck(lambda v: alerts.from_text(v, deep=False))],
            )

    def on_mount(self) -> None:
        self._opened_with = {i.id: i.value for i in self.query(Input) if i.id}
        first = "#target" if self.job else "#name"
        self.query_one(first, Input).focus()
        if self.job is not None:
            self.load_alert(self.job)
        self._revalidate()

    class AlertLoaded(Message):
        """The job's alert targets as stored (its field's text), read in a thread."""

        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    @work(thread=True, group="form-alert", exit_on_error=False)
    def load_alert(self, job: Job) -> None:
        targets = self.store.alert_of(job.name, owner=job.owner)
        text = "" if targets is None else (" ".join(targets) or alerts.NONE)
        self.post_message(self.AlertLoaded(text))

    def on_edit_screen_alert_loaded(self, message: AlertLoaded) -> None:
        field = self.query_one("#alert", Input)
        field.value = message.text
        field.placeholder = ALERT_HINT
        field.disabled = False
        # a new value revalidates the form through Input.Changed; an empty one (the
        # default, as stored) leaves the form as it was checked: nothing to save
        self._alert_loaded = True

    # ------------------------------------------------------------------ reading the form

    def _value(self, widget_id: str) -> str:
        return self.query_one(f"#{widget_id}", Input).value

    def _select(self, widget_id: str) -> str:
        return self.what_kind if widget_id == "what-kind" else self.schedule_kind

    def _check_target(self, value: str) -> None:
        What(self._select("what-kind"), value.strip(), ())  # type: ignore[arg-type]

    def _check_args(self, value: str) -> None:
        args = _split_args(value)
        kind = self._select("what-kind")
        if args:
            What(kind, "x.y" if kind == "call" else "x", args)  # type: ignore[arg-type]

    def _check_value(self, value: str) -> None:
        kind = self._select("schedule-kind")
        if kind == "every":
            make_schedule("every", every=value.strip() or None)
        elif kind == "cron":
            make_schedule("cron", cron=value.strip() or None)
        elif kind == "expr":
            make_schedule("expr", expr=value)

    def _check_tz(self, value: str) -> None:
        if value.strip():
            kind = self._select("schedule-kind")
            if kind != "cron":
                raise InvalidInput("a time zone is only accepted with a cron schedule")
            from jobtui.core.schedules import check_tz

            check_tz(value.strip())

    def build(self) -> JobForm:
        """The form's job definition, or InvalidInput naming the first problem."""
        form = read_form(
            {field: self._value(field) for field in FIELDS},
            what_kind=self.what_kind,
            schedule_kind=self.schedule_kind,
        )
        return form if self._alert_loaded else replace(form, alert=None)

    # ------------------------------------------------------------------ validation as you type

    @on(Input.Changed)
    @on(Select.Changed)
    def _changed(self, event: Message) -> None:
        # typed in (or set): its value is no longer the one the form opened with
        if (
            isinstance(event, Input.Changed)
            and event.input.id
            and event.value != self._opened_with.get(event.input.id, event.value)
        ):
            self._typed.add(event.input.id)
        if isinstance(event, Select.Changed):
            if event.select.id == "what-kind":
                self.what_kind = str(event.value)
            else:
                self.schedule_kind = str(event.value)
            what_kind = self._select("what-kind")
            self.query_one("#target", Input).placeholder = TARGET_HINT.get(what_kind, "")
            sched_kind = self._select("schedule-kind")
            value = self.query_one("#schedule-value", Input)
            value.placeholder = VALUE_HINT.get(sched_kind, "")
            value.disabled = sched_kind == "once"
            self.query_one("#tz", Input).disabled = sched_kind != "cron"
            for widget_id in ("target", "args", "schedule-value", "tz"):
                field = self.query_one(f"#{widget_id}", Input)
                if field.value or widget_id in self._typed:
                    field.validate(field.value)
                else:  # empty and not typed in yet: not red before anything is typed
                    field.remove_class("-invalid")
        self._revalidate()

    def _revalidate(self) -> None:
        self._version += 1
        self._checked = None
        self.query_one("#save", Button).disabled = True
        try:
            form = self.build()
        except InvalidInput as exc:
            self._pending = None
            self._show_preview(None)  # no preview of an earlier, valid form
            if self.job is None and not self._typed:
                self._show_hint()
            else:
                self._show_error(str(exc))
            return
        self._pending = form
        self._show_error(None, checking=True)
        self.check(self._version, form)

    @work(thread=True, exclusive=True, group="form-check", exit_on_error=False)
    def check(self, version: int, form: JobForm) -> None:
        """The checks only the database can make, and the preview (in a thread)."""
        try:
            self.store.check_what(form.what, owner=self.job.owner if self.job else None)
            if form.alert is not None:  # apprise's verdict on the URLs (a thread: it loads)
                alerts.from_text(form.alert)
            self.store.check_expr_schedule(form.schedule, self.store.now())
            # the job as saving the form leaves it, previewed as `show` previews it
            upcoming = self.store.preview_change(self.job, form.schedule, 5)
            changed = self.job and as_changed(self.job, form.schedule, self.store.now())
        except JobtuiError as exc:
            self.post_message(self.Checked(version, str(exc), []))
            return
        self.post_message(self.Checked(version, None, upcoming, why_no_runs(changed)))

    def on_edit_screen_checked(self, message: Checked) -> None:
        if message.version != self._version:
            return  # the form changed since: a newer check is on its way
        if message.error:
            self._show_preview(None)
            self._show_error(message.error)
            return
        self._checked = self._pending
        self._show_error(None)
        # in the zone the form gives the schedule (cron), as the job's details show them
        zone = self._pending.schedule.tz if self._pending is not None else None
        lines = ["[b]Next 5 runs[/]"] + (
            [fmt.stamp(t, zone) for t in message.upcoming] or [f"none ({escape(message.none)})"]
        )
        self._show_preview("\n".join(lines))
        self.query_one("#save", Button).disabled = self.read_only

    def _show_preview(self, markup: str | None) -> None:
        """The next runs of the form as last checked valid, or nothing while it is not."""
        self.query_one("#preview", Static).update(Content.from_markup(markup or ""))

    def _show_hint(self) -> None:
        self.query_one("#form-error", Static).update(
            Content.from_markup(
                "[dim]Give the job a name and what it runs; each field is checked as you type.[/]"
            )
        )

    def _show_error(self, error: str | None, *, checking: bool = False) -> None:
        box = self.query_one("#form-error", Static)
        if error:
            box.update(Content.from_markup(f"[$error]✗ {escape(error)}[/]"))
        elif checking:
            box.update(Content.from_markup("[dim]checking…[/]"))
        else:
            box.update(Content.from_markup("[$success]✓ valid[/]"))

    # ------------------------------------------------------------------ actions

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "save":
            self.action_save()
        else:
            self.action_cancel()

    def action_save(self) -> None:
        """Save the job (only once everything is valid)."""
        if self._checked is None:
            self.notify(
                "the form is not valid yet: fix the field marked in red",
                severity="warning",
                timeout=3,
            )
            return
        self.dismiss(self._checked)

    def action_cancel(self) -> None:
        """Close without saving."""
        self.dismiss(None)


def read_form(fields: Mapping[str, str], *, what_kind: str, schedule_kind: str) -> JobForm:
    """A job definition from the form's text (``FIELDS``), or InvalidInput naming the problem.

    The rules are the core's, as on the command line; surrounding spaces are
    trimmed except in the description. Only the checks that need the database
    (SQL, procedures, expressions) are left to ``EditScreen.check``.
    """
    name = check_job_name(fields["name"].strip())
    what = What(what_kind, fields["target"].strip(), _split_args(fields["args"]))  # type: ignore[arg-type]
    value = fields["schedule-value"].strip()
    tz = fields["tz"].strip() or None
    start_text = fields["start"].strip()
    finish_text = fields["finish"].strip()
    schedule = make_schedule(
        schedule_kind,
        every=value or None if schedule_kind == "every" else None,
        cron=value or None if schedule_kind == "cron" else None,
        expr=value or None if schedule_kind == "expr" else None,
        tz=tz,
        start=parse_when(start_text, "start") if start_text else None,
        finish=parse_when(finish_text, "finish") if finish_text else None,
    )
    return JobForm(
        name=name,
        what=what,
        schedule=schedule,
        description=check_description(fields["description"]),
        max_failures=check_max_failures(fields["max-failures"].strip()),
        alert=_alert_text(fields.get("alert", "")),
    )


def _alert_text(text: str) -> str:
    alerts.from_text(text, deep=False)
    return text.strip()


def _row(label: str, widget: Any) -> ComposeResult:
    with Horizontal(classes="field"):
        yield Label(label, classes="label")
        yield widget


def _split_args(value: str) -> tuple[str, ...]:
    try:
        return tuple(shlex.split(value))
    except ValueError as exc:
        raise InvalidInput(f"invalid arguments {value!r}: {exc} (quote with '…')") from None


def _check_when(what: str) -> Callable[[str], object]:
    def check(value: str) -> object:
        return parse_when(value, what) if value.strip() else None

    return check


def _iso(when: datetime | None) -> str:
    return when.isoformat() if when else ""


def fmt_number(value: float | None) -> str:
    if value is None:
        return ""
    return str(int(value)) if value == int(value) else str(value)
