"""The console for an operator account on MariaDB: its own jobs only, steering through the views."""

from __future__ import annotations

import pytest
from support.accounts import Server
from support.console import console, row_texts, select_row, settle
from support.samples import HOURLY

from jobtui.core.model import Status, What

pytestmark = pytest.mark.mariadb


async def test_operator_console_shows_and_steers_only_its_own_jobs(server: Server) -> None:
    bob = server.store("bob")
    try:
        bob.submit("shared", What("sql", "SELECT 1"), HOURLY)
        bob.submit("bobs", What("sql", "SELECT 1"), HOURLY)
    finally:
        bob.close()
    alice_store = server.store("alice")
    alice_store.submit("shared", What("sql", "SELECT 1"), HOURLY)
    alice_store.close()
    url = server.url_for("alice")
    # all_owners as the console's own option would ask: the database still shows hers only
    async with console(url, all_owners=True) as (app, pilot, store):
        assert set(row_texts(app)) == {"shared"}
        assert server.accounts["alice"] not in str(app.sub_title)
        assert "***" in str(app.sub_title)
        await select_row(app, pilot, "shared")
        await pilot.press("p")
        await settle(app, pilot)
        assert store.get("shared").status is Status.PAUSED
        assert row_texts(app)["shared"]["status"] == "PAUSED"
    bob = server.store("bob")
    try:
        assert bob.get("shared").status is Status.ENABLED
    finally:
        bob.close()
