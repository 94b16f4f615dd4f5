"""The status line names the scheduler being steered (host and database), never a password."""

from __future__ import annotations

import pytest
from support.console import console_at, settle
from textual.widgets import Static

from jobtui.console.formatting import short_url
from jobtui.core.store import open_store


def test_short_url_drops_the_scheme_first_and_keeps_the_database() -> None:
    assert short_url("sqlite:///db/jobtui.db") == "sqlite:///db/jobtui.db"
    long = "mysql+pymysql://root@127.0.0.1:3306/jobtui_t_0123456789ab"
    assert short_url(long) == "127.0.0.1:3306/jobtui_t_0123456789ab"
    assert (
        short_url("mysql+pymysql://root@127.0.0.1:3306/jobtui_t") == "root@127.0.0.1:3306/jobtui_t"
    )
    assert short_url("mysql+pymysql://ops@db.example.org:3306/scheduler_production") == (
        "db.example.org/scheduler_production"
    )
    cut = short_url("mysql+pymysql://ops@a-very-long-host-name.example.org/some_long_db_name_x")
    assert cut.endswith("…/some_long_db_name_x") and cut.startswith("a-very")
    assert short_url("sqlite:////srv/a/very/long/directory/path/to/the/jobs.db") == "…/jobs.db"


@pytest.mark.parametrize(
    "url",
    [
        "mysql+pymysql://root:s3cret-pw@127.0.0.1:3306/jobtui",
        "mysql+pymysql://root:s3cret-pw@127.0.0.1:3306/a_database_with_a_long_name_here",
        "mysql+pymysql://root:***@127.0.0.1/x",
    ],
)
def test_short_url_never_shows_a_password(url: str) -> None:
    shown = short_url(url)
    assert "s3cret" not in shown
    assert url.rsplit("/", 1)[-1] in shown


@pytest.mark.mariadb
async def test_status_line_names_host_and_database_on_mariadb(mariadb_url: str) -> None:
    open_store(mariadb_url).init()
    database = mariadb_url.rsplit("/", 1)[-1]
    async with console_at(mariadb_url, (80, 24)) as (app, pilot, _store):
        await settle(app, pilot)
        text = str(app.main_screen.query_one("#status", Static).render())
        assert f"127.0.0.1:3306/{database}" in text, text
        assert "mysql+pymysql" not in text
        assert "…" not in text.split("│")[1]
