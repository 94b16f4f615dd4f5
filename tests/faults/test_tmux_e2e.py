"""End to end: the real ``jobtui`` process in a real terminal (tmux), driven by keys.

Open the console on a SQLite file, pause a job with ``p``, see PAUSED on the
screen and in the database, quit with ``q``. With 100,000 jobs, ``G`` pressed
while the table is still loading lands on the last job. Skipped only when tmux is
missing and CI is unset (in CI a missing tmux fails the test).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.procs import Console, wait_for

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


def populate(url: str, jobs: int) -> None:
    """``jobs`` jobs named job_00000 ...: one submitted through the store, copied in batches."""
    from sqlalchemy import insert, select

    from jobtui.core import schema

    store = open_store(url)
    store.submit("job_00000", What("sql", "SELECT 1"), make_schedule("every", every=3600))
    with store.write() as conn:
        row = conn.execute(select(schema.job)).one()
        shape = {k: v for k, v in row._mapping.items() if k not in ("id", "name")}
        conn.execute(schema.job.delete())
        for start in range(0, jobs, 5000):
            conn.execute(
                insert(schema.job),
                [dict(shape, name=f"job_{i:05d}") for i in range(start, min(jobs, start + 5000))],
            )
    store.close()


def test_G_during_the_load_of_100000_jobs_lands_on_the_last(tmp_path: Path) -> None:
    db = tmp_path / "big.db"
    url = f"sqlite:///{db}"
    populate(url, 100_000)
    console = Console(["--db", url, "console"], tmp_path, size=(100, 30))
    try:
        # The first screenful (the first 200 by name) shows before the whole table is read:
        # G goes in then.
        console.wait_for_screen("job_00000", timeout=60)
        console.keys("G")
        screen = console.wait_for_screen("job_99999", timeout=60)
        # once all is read the cursor is on the last job: enter opens its details
        console.keys("Enter")
        screen = console.wait_for_screen("Run history", timeout=30)
        assert "job_99999" in screen, screen
        console.keys("Escape")  # (apart from q: ESC then q at once reads as alt+q)
        console.wait_for_screen("Job ▲", timeout=30)
        console.keys("q")
        assert wait_for(lambda: not console.alive(), 20, 0.2), console.screen()
    finally:
        console.cleanup()
