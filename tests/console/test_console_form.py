"""The new-job form: no red error before anything is typed, and no preview of an earlier
valid form while the form is invalid."""

from __future__ import annotations

from support.console import console, seed, settle
from textual.widgets import Button, Input, Static

from jobtui.console.screens.edit import EditScreen
from jobtui.core.store import open_store


async def test_new_job_form_opens_without_an_error_and_drops_a_stale_preview(
    sqlite_url: str,
) -> None:
    seed(open_store(sqlite_url))
    async with console(sqlite_url) as (app, pilot, _store):
        await pilot.press("n")
        await settle(app, pilot)
        form = app.screen
        assert isinstance(form, EditScreen)
        said = str(form.query_one("#form-error", Static).render())
        assert "✗" not in said and "invalid" not in said, said
        assert not [i.id for i in form.query(Input) if i.has_class("-invalid")]
        assert form.query_one("#save", Button).disabled  # still nothing to save

        await pilot.press(*"report", "tab", "tab", *"SELECT 1")
        await settle(app, pilot, 3)
        assert str(form.query_one("#form-error", Static).render()).startswith("✓")
        assert str(form.query_one("#preview", Static).render()).count("UTC") == 5

        form.query_one("#schedule-value", Input).value = "0"  # now invalid
        await settle(app, pilot)
        assert "✗" in str(form.query_one("#form-error", Static).render())
        assert "UTC" not in str(form.query_one("#preview", Static).render())
        assert form.query_one("#save", Button).disabled

        form.query_one("#name", Input).value = ""  # emptied after typing: an error now
        await settle(app, pilot)
        assert "invalid job name" in str(form.query_one("#form-error", Static).render())
