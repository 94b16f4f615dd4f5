"""The console at a common SSH window (80x24) and a big one (200x50), with Pilot.

At 80x24 the Job column stays in place while the table scrolls right, the
most useful columns come first, ``?`` and ``q`` are always in the footer, and
the help screen's status legend is not wrapped mid-phrase.
"""

from __future__ import annotations

from typing import Any

import pytest
from support.console import console_at, seed, settle
from textual.widgets import Static

from jobtui.console.app import JobtuiApp
from jobtui.console.screens.help import HelpScreen
from jobtui.console.widgets.job_cells import column_keys
from jobtui.core.store import open_store

SIZES = [(80, 24), (200, 50)]


def line(app: JobtuiApp, y: int) -> str:
    return app.main_screen.table.render_line(y).text


def test_the_most_useful_columns_come_first() -> None:
    assert column_keys(False)[:7] == (
        "name",
        "status",
        "next",
        "last",
        "failures",
        "cycles",
        "duration",
    )
    assert column_keys(True)[:2] == ("name", "owner")


@pytest.mark.parametrize("size", SIZES)
async def test_job_column_stays_while_scrolling_right(
    sqlite_url: str, size: tuple[int, int]
) -> None:
    seed(open_store(sqlite_url))
    async with console_at(sqlite_url, size) as (app, pilot, _store):
        table = app.main_screen.table
        header = line(app, 0)
        assert header.startswith(" Job ")
        if size[0] == 80:
            for label in ("Status", "Next run", "Last run", "Fail", "Runs", "Took"):
                assert label in header, header
        else:  # 200 columns show every column at once
            assert "Schedule" in header and "Running" in header
        for _ in range(40):
            await pilot.press("right")
        await pilot.pause()
        rows = [line(app, y) for y in range(1, 4)]
        names = sorted(j.name for j in table.jobs.values())
        assert [r.split()[0] for r in rows] == names, rows
        assert line(app, 0).startswith(" Job ")
        if table.max_scroll_x:
            assert table.scroll_x > 0
            assert "Running" in line(app, 0)  # the last column came into view


@pytest.mark.parametrize("size", SIZES)
async def test_help_and_quit_are_always_in_the_footer(
    sqlite_url: str, size: tuple[int, int]
) -> None:
    seed(open_store(sqlite_url))
    async with console_at(sqlite_url, size) as (app, pilot, _store):
        await pilot.pause(0.3)
        for screen_key in ("", "enter", "l"):
            if screen_key:
                await pilot.press(screen_key)
                await settle(app, pilot)
                await pilot.pause(0.3)
            keys = {
                getattr(w, "action", None): w.region
                for w in app.screen.query("FooterKey")
                if getattr(w, "action", None)
            }
            for action in ("help", "quit_console"):
                region = keys[action]
                assert region.width > 0 and region.right <= size[0], (screen_key, keys)
            if screen_key:
                await pilot.press("escape")
                await settle(app, pilot)


@pytest.mark.parametrize("size", SIZES)
async def test_help_legend_is_not_wrapped(sqlite_url: str, size: tuple[int, int]) -> None:
    seed(open_store(sqlite_url))
    async with console_at(sqlite_url, size) as (app, pilot, _store):
        await pilot.press("question_mark")
        await pilot.pause(0.3)
        assert isinstance(app.screen, HelpScreen)
        legend = app.screen.query_one(".statuses", Static)
        lines = str(legend.render()).count("\n") + 1
        assert legend.size.height == lines  # one line per entry: nothing wrapped
        assert legend.region.right <= size[0]
        keys = app.screen.query_one(".keys", Static)
        assert keys.size.height == str(keys.render()).count("\n") + 1


async def test_the_palette_lists_quit_once(sqlite_url: str) -> None:
    seed(open_store(sqlite_url))
    async with console_at(sqlite_url, (80, 24)) as (app, _pilot, _store):
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert titles.count("Quit") == 1, titles
        assert "Theme" in " ".join(titles)  # Textual's own commands stay


async def test_the_status_counts_are_not_cut_at_80x24(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rich.text import Text

    from jobtui.core.model import What
    from jobtui.core.schedules import make_schedule

    # a long SQLite path and a job in many statuses: the longest status line there is
    monkeypatch.chdir(tmp_path)
    url = "sqlite:///a-rather-long-name-jobs.db"  # 36 characters: shown whole
    store0 = open_store(url)
    every = make_schedule("every", every=3600)
    for name in ("e1", "p1", "b1", "d1", "a1"):
        store0.submit(name, What("sql", "SELECT 1"), every)
    store0.pause("p1")
    store0.broken("b1", True)
    store0.disable("d1")
    store0.abort("a1")
    store0.submit("f1", What("sql", "SELECT 1"), make_schedule("once"))
    store0.close()
    async with console_at(url, (80, 24), read_only=True) as (app, _pilot, _store):
        status = app.main_screen.query_one("#status", Static)
        text = str(status.render())
        for word in ("enabled", "paused", "broken", "disabled", "aborted", "read-only"):
            assert word in text, text
        inner = status.content_region
        lines = Text(text).wrap(app.console, inner.width)
        assert len(lines) == 3, lines  # this line needs three at 80 columns ...
        assert inner.height >= len(lines), (text, inner)  # ... and gets them
