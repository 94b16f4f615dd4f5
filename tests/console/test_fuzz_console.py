"""The console's new-job form, fuzzed with the command line's hostile values.

The same rules apply to the form as to ``jobtui submit``: for each generated
form (name, what, arguments, schedule, time zone, window, description, max
failures, with quotes, backticks, semicolons, NUL and control characters,
look-alikes, over-long text, bad cron and expressions, numbers past their
limits) the form and the CLI, each on its own fresh copy of one populated
SQLite file, must agree:

- the CLI saves it (exit 0) and the form saves the same job, or
- the CLI refuses it (exit 2, one line, nothing changed) and the form refuses
  it with a visible message and leaves every table as it was.

The form is the same code either way: ``read_form`` (the form's parsing and
checks, run for many examples without a screen) and the real form driven by
Pilot (fewer examples: each one types into the live form, waits for the
database check, presses ctrl+s).
"""

from __future__ import annotations

import asyncio
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from support.fuzzing import (
    CRON_FIELD,
    EXPR,
    FUZZ,
    NUMBER,
    TZ,
    WHEN,
    Fresh,
    cli,
    diverged,
    dump,
    every_value,
    forget,
    nasty_text,
    populate,
    refused,
    run_case,
    show,
)
from textual.widgets import Button, Input, Select

from jobtui.console.app import JobtuiApp, make_app
from jobtui.console.screens.edit import FIELDS, EditScreen, read_form
from jobtui.console.screens.main import MainScreen
from jobtui.core.errors import JobtuiError
from jobtui.core.store import open_store

TAKEN = ("nightly", "done", "off", "held")  # the template's jobs
SAME = (  # what must be equal between the CLI's job and the form's
    "name",
    "description",
    "status",
    "intent",
    "phase",
    "max_failures",
    "schedule",
    "what",
)


@dataclass(frozen=True)
class Case:
    """One filled-in form: the text of each field and the two selects."""

    fields: dict[str, str]
    what_kind: str
    schedule_kind: str

    def argv(self, change: str | None = None) -> list[str] | None:
        """The same job as ``jobtui submit`` arguments, or ``jobtui change JOB`` arguments
        that set every field as the edit form does (None: the arguments do not parse)."""
        f = {k: (v if k == "description" else v.strip()) for k, v in self.fields.items()}
        try:
            args = shlex.split(self.fields["args"])
        except ValueError:
            return None
        argv = [f"--{self.what_kind}={f['target']}", *(f"--arg={a}" for a in args)]
        if self.schedule_kind == "once":
            argv.append("--once")
        else:
            argv.append(f"--{self.schedule_kind}={f['schedule-value']}")
        for field in ("tz", "start", "finish"):
            if f[field]:
                argv.append(f"--{field}={f[field]}")
            elif change and field != "tz":
                argv.append(f"--no-{field}")  # the form clears an empty window bound
        argv += [f"--description={f['description']}", f"--max-failures={f['max-failures']}"]
        if change:
            return ["change", *argv, "--", change]
        return ["submit", *argv, "--", f["name"]]


VALID: dict[str, st.SearchStrategy[str]] = {
    "name": st.from_regex(r"[a-z][a-z0-9_.-]{0,20}", fullmatch=True),
    "target sql": st.sampled_from(["SELECT 1", " SELECT 2 "]),
    "target action": st.sampled_from(["demo.noop", "demo.sleep"]),
    "target call": st.just("db.proc"),  # SQLite has no procedures: always refused
    "args": st.lists(st.from_regex(r"[a-z0-9.]{1,8}", fullmatch=True), max_size=2).map(shlex.join),
    "value every": st.sampled_from(["60", "0.5", " 5 "]),
    "value cron": st.sampled_from(["0 2 * * *", "*/5 * * * *", "0 0 1 1 * 30"]),
    "value expr": st.sampled_from(["datetime(NOW(), '+1 day')", "datetime(NOW(), '+2 hours')"]),
    "value once": st.just(""),
    "tz": st.just(""),
    "start": st.sampled_from(["", "2030-01-01T00:00:00"]),
    "finish": st.sampled_from(["", "2031-01-01"]),
    "description": st.sampled_from(["", "made in the form"]),
    "max-failures": st.sampled_from(["16", "1", " 3 "]),
    # empty: the database's default; the field's own rules are the CLI's by construction
    # (both call alerts.parse) and are tested in tests/console/test_console.py and test_alerts.py
    "alert": st.just(""),
}
HOSTILE: dict[str, st.SearchStrategy[str]] = {
    "name": nasty_text(),
    "target sql": nasty_text(60),
    "target action": nasty_text(60),
    "target call": st.tuples(nasty_text(30), nasty_text(30)).map(".".join),
    "args": st.one_of(
        st.lists(nasty_text(30), max_size=2).map(shlex.join),
        nasty_text(30),  # raw text: unbalanced quotes and all
    ),
    "value every": every_value(),
    "value cron": st.lists(CRON_FIELD, max_size=7).map(" ".join),
    "value expr": EXPR,
    "value once": nasty_text(10),
    "tz": TZ,
    "start": WHEN,
    "finish": WHEN,
    "description": st.one_of(nasty_text(100), st.just("d" * 2001)),
    "max-failures": NUMBER,
    "alert": st.just(""),  # (see VALID)
}


@st.composite
def cases(draw: Any) -> Case:
    """A valid form with one to three fields made hostile (or none)."""
    what_kind = draw(st.sampled_from(["sql", "sql", "action", "call"]))
    schedule_kind = draw(st.sampled_from(["every", "cron", "expr", "once"]))
    hostile = draw(st.sets(st.sampled_from(FIELDS), max_size=3))
    fields = {}
    for field in FIELDS:
        key = {"target": f"target {what_kind}", "schedule-value": f"value {schedule_kind}"}.get(
            field, field
        )
        fields[field] = draw(HOSTILE[key] if field in hostile else VALID[key])
    if what_kind == "sql" and "args" not in hostile:
        fields["args"] = ""
    return Case(fields, what_kind, schedule_kind)


# ---------------------------------------------------------------------- the two sides


def cli_verdict(url: str, case: Case, change: str | None = None) -> dict[str, Any] | None:
    """The job ``jobtui submit`` (or ``change``) saves from ``case``; None: refused cleanly."""
    argv = case.argv(change)
    if argv is None:
        return None  # arguments the CLI cannot even be given
    result, before = run_case(url, *argv)
    if result[0] == 0:
        return saved(url, change or case.fields["name"].strip())
    refused(result, before, url)
    return None


def saved(url: str, name: str) -> dict[str, Any]:
    job = show(url, name)
    return {k: job[k] for k in SAME}


def form_save(url: str, case: Case, change: str | None = None) -> str | None:
    """What the form does with ``case`` (without a screen): None when saved, else the refusal.

    ``change``: the edit form of that job (its name field is fixed), else the new-job form.
    """
    store = open_store(url)
    fields = dict(case.fields, name=change) if change else case.fields
    app: Any = SimpleNamespace(store=store)  # the app's save methods use its store,
    app._set_alert = lambda job, form: JobtuiApp._set_alert(app, job, form)  # and this
    try:
        form = read_form(fields, what_kind=case.what_kind, schedule_kind=case.schedule_kind)
        # EditScreen.check: what only the database can say
        store.check_what(form.what)
        store.check_expr_schedule(form.schedule, store.now())
        store.preview_schedule(form.schedule, 5)
        if change:
            JobtuiApp._change(app, store.get(change), form)
        else:
            JobtuiApp._submit(app, form)
    except JobtuiError as exc:
        return str(exc) or type(exc).__name__
    finally:
        store.close()
    return None


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("fuzz-form") / "template.db"
    populate(f"sqlite:///{path}")
    return path


@pytest.fixture
def copies(template: Path, tmp_path: Path) -> tuple[Fresh, Fresh]:
    """Fresh copies of the template: one for the CLI, one for the form."""
    (tmp_path / "cli").mkdir()
    (tmp_path / "form").mkdir()
    return Fresh(template, tmp_path / "cli"), Fresh(template, tmp_path / "form")


@pytest.fixture(autouse=True)
def _no_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    monkeypatch.delenv("JOBTUI_DB", raising=False)
    monkeypatch.delenv("JOBTUI_DEBUG", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    yield


# ---------------------------------------------------------------------- read_form, many examples


def check_form_against_cli(copies: tuple[Fresh, Fresh], case: Case, change: str | None) -> None:
    cli_copy, form_copy = copies
    expected = cli_verdict(cli_copy.new(), case, change)
    url = form_copy.new()
    before = dump(url)
    forget(url)
    error = form_save(url, case, change)
    event("refused" if expected is None else "saved")
    if expected is None:
        assert error, f"the CLI refuses {case} but the form saved it"
        assert "\n" not in error.strip(), error
        assert dump(url) == before
        forget(url)
        return
    assert error is None, f"the CLI saves {case} but the form refuses: {error}"
    assert saved(url, change or case.fields["name"].strip()) == expected
    forget(url)


@settings(FUZZ, max_examples=150)
@given(case=cases())
def test_form_rules_are_the_cli_rules(copies: tuple[Fresh, Fresh], case: Case) -> None:
    check_form_against_cli(copies, case, None)


@settings(FUZZ, max_examples=80)
@given(case=cases(), job=st.sampled_from(["nightly", "held"]))
def test_edit_form_rules_are_the_cli_rules(
    copies: tuple[Fresh, Fresh], case: Case, job: str
) -> None:
    check_form_against_cli(copies, case, job)


# ---------------------------------------------------------------------- the live form, via Pilot


def _error_text(form: EditScreen) -> str:
    return str(form.query_one("#form-error").render())


async def _fill_and_save(url: str, cases_: list[Case], change: str | None = None) -> None:
    """Each case typed into the live form and saved with ctrl+s.

    ``change``: the edit form of that job (selected in the table, opened with
    ``e``; its name field is fixed), else the new-job form (``n``).
    """
    store = open_store(url)
    app = make_app(store, refresh=5.0)
    try:
        async with app.run_test(size=(110, 32)) as pilot:
            for case in cases_:
                before = dump(url)
                if change:
                    main = app.main_screen
                    assert isinstance(main, MainScreen)
                    await _until(
                        pilot,
                        lambda m=main: any(j.name == change for j in m.table.jobs.values()),
                    )
                    job = next(j for j in main.table.jobs.values() if j.name == change)
                    main.table.select_job(job.id)
                    await pilot.pause()
                    assert main.table.current_job().name == change
                    await pilot.press("e")
                else:
                    await pilot.press("n")
                await _until(pilot, lambda: isinstance(app.screen, EditScreen))
                form = app.screen
                assert isinstance(form, EditScreen)
                form.query_one("#what-kind", Select).value = case.what_kind
                form.query_one("#schedule-kind", Select).value = case.schedule_kind
                await pilot.pause()
                for field, text in case.fields.items():
                    if change and field == "name":
                        assert form.query_one("#name", Input).disabled
                        continue
                    form.query_one(f"#{field}", Input).value = text
                # wait for the verdict: a message, or "valid" once the database check is back
                await _until(pilot, lambda f=form: "checking" not in _error_text(f))
                await app.workers.wait_for_complete()
                await pilot.pause()
                verdict = _error_text(form)
                assert "\x00" not in verdict and "\x1b" not in verdict, verdict
                save = form.query_one("#save", Button)
                await pilot.press("ctrl+s")
                await pilot.pause()
                await app.workers.wait_for_complete()
                await pilot.pause()
                expected = cli_verdict(case_cli_url(url), case, change)
                event("refused" if expected is None else "saved")
                if expected is None:
                    # refused: visibly (in the form, or a notice when the save itself fails)
                    failed = [n.message for n in app._notifications if n.severity == "error"]
                    assert verdict.startswith("✗") or failed, (case, verdict)
                    if isinstance(app.screen, EditScreen):
                        assert save.disabled
                        await pilot.press("escape")
                        await _until(pilot, lambda: not isinstance(app.screen, EditScreen))
                    assert dump(url) == before, case
                else:
                    assert "valid" in verdict and not verdict.startswith("✗"), (case, verdict)
                    await _until(pilot, lambda: not isinstance(app.screen, EditScreen))
                    await app.workers.wait_for_complete()
                    if change:  # both copies hold the same changed job for the next case
                        assert saved(url, change) == expected
                        diverged(case_cli_url(url))
                    else:
                        assert saved(url, case.fields["name"].strip()) == expected
                        assert cli(url, "remove", case.fields["name"].strip())[0] == 0
                        assert cli(case_cli_url(url), "remove", case.fields["name"].strip())[0] == 0
                app.clear_notifications()
    finally:
        store.close()


def case_cli_url(form_url: str) -> str:
    """The CLI's copy next to the form's database."""
    return form_url.replace("/form/", "/cli/")


async def _until(pilot: Any, predicate: Any, timeout: float = 30.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError("the form did not settle in time")
        await pilot.pause(0.02)


@settings(
    max_examples=3,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(batch=st.lists(cases(), min_size=4, max_size=4))
def test_the_live_form_agrees_with_the_cli(copies: tuple[Fresh, Fresh], batch: list[Case]) -> None:
    cli_copy, form_copy = copies
    cli_copy.new()
    url = form_copy.new()
    forget(url)
    asyncio.run(_fill_and_save(url, batch))


@settings(
    max_examples=3,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(batch=st.lists(cases(), min_size=4, max_size=4), job=st.sampled_from(["nightly", "held"]))
def test_the_live_edit_form_agrees_with_the_cli(
    copies: tuple[Fresh, Fresh], batch: list[Case], job: str
) -> None:
    cli_copy, form_copy = copies
    cli_copy.new()
    url = form_copy.new()
    forget(url)
    asyncio.run(_fill_and_save(url, batch, change=job))
