"""End to end: the real ``jobtui`` process in a real terminal (tmux), driven by keys.

Open the console on a SQLite file, pause a job with ``p``, see PAUSED on the
screen and in the database, quit with ``q``. Skipped only when tmux is
missing and CI is unset (in CI a missing tmux fails the test).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from procs import Console, wait_for

from jobtui.core.model import Status, What
from jobtui.core.schedules import make_schedule
from jobtui.core.store import open_store

pytestmark = pytest.mark.slow


def test_open_pause_see_paused_quit(tmp_path: Path) -> None:
    db = tmp_path / "e2e.db"
    url = f"sqlite:///{db}"
    store = open_store(url)
    store.submit("e2e-job", What("sql", "SELECT 1"), make_schedule("every", every=3600))
    store.close()

    console = Console(["--db", url, "console", "--refresh", "0.5"], tmp_path)
    try:
        screen = console.wait_for_screen("e2e-job")
        assert "ENABLED" in screen
        console.keys("p")
        screen = console.wait_for_screen("PAUSED")
        assert "e2e-job" in screen
        check = open_store(url)
        assert check.get("e2e-job").status is Status.PAUSED
        check.close()
        console.keys("q")
        # the process exits and takes the session with it
        assert wait_for(lambda: not console.alive(), 20, 0.2), (
            f"jobtui did not quit on q:\n{console.screen()}"
        )
    finally:
        console.cleanup()
