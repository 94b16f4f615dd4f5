"""What the status word hides shows in the job's row: ``RUNNING ⏸ paused`` and the rest.

The real console on a real SQLite file, hosting a runner that really runs the
job; the operator's keys steer it while it runs. The command line shows the
same words under its table (its STATUS column keeps one word for scripts).
"""

from __future__ import annotations

import asyncio
import time
from datetime import datetime
from pathlib import Path

from support.cli import Cli
from support.console import console, painted, painted_row, select_row, settle, wait_for
from support.demo_db import make_demo

from jobtui.console.widgets.job_cells import row_cells
from jobtui.console.widgets.job_table import JobTable
from jobtui.core.model import Intent, Outcome, Status, What
from jobtui.core.schedules import make_schedule
from jobtui.core.store import open_store
from jobtui.core.timeutil import utcnow
from jobtui.core.transitions import status_marks


async def test_a_running_job_paused_broken_and_aborted_says_so_in_its_row(
    sqlite_url: str, tmp_path: Path
) -> None:
    store0 = open_store(sqlite_url)
    make_demo(store0)  # the demo.* actions
    store0.submit("long", What("action", "demo.sleep", ("60",)), make_schedule("every", every=120))
    store0.submit("idle", What("sql", "SELECT 1"), make_schedule("every", every=60))
    cli = Cli(sqlite_url, tmp_path)
    async with console(sqlite_url, runners=1) as (app, pilot, store):
        await wait_for(pilot, lambda: "RUNNING" in painted_row(app, "long"), 20)
        assert "⏸" not in painted_row(app, "long")
        await select_row(app, pilot, "long")
        await pilot.press("p")
        await settle(app, pilot)
        job = store.get("long")
        assert job.running and job.intent is Intent.PAUSED and job.status is Status.RUNNING
        await wait_for(pilot, lambda: "RUNNING ⏸ paused" in painted_row(app, "long"))
        assert "⏸" not in painted_row(app, "idle")
        # the filter finds a job by what its row says, the marks included
        table = app.query_one(JobTable)
        table.filter_text = "paused"
        await pilot.pause()
        assert table.row_count == 1 and "RUNNING ⏸ paused" in painted_row(app, "long")
        table.filter_text = ""
        await pilot.pause()
        assert table.row_count == 2

        # the command line: STATUS keeps its one word, the mark is named under the table
        listed = (await asyncio.to_thread(cli, "list")).stdout
        line = next(x for x in listed.splitlines() if x.startswith("long "))
        assert line.split()[1] == "RUNNING" and "⏸" not in listed
        assert "1 job(s) with more than their STATUS shows:\n  long: paused" in listed

        await pilot.press("b")  # broken while running and paused
        await settle(app, pilot)
        await wait_for(pilot, lambda: "RUNNING ⏸ paused broken" in painted_row(app, "long"))
        # the column is as wide as its widest text: the next column starts after it
        header, row = painted(app)[0], painted_row(app, "long")
        assert header.index("Next run") > row.index(" broken") + len(" broken")
        await pilot.press("a")
        await pilot.pause()
        await pilot.press("y")  # abort: the run in flight is stopped
        await settle(app, pilot)
        # the run ends aborted: the operator's pause wins, broken still shows
        await wait_for(pilot, lambda: "PAUSED broken" in painted_row(app, "long"), 20)
        assert "RUNNING" not in painted_row(app, "long")
        assert "⏸" not in painted_row(app, "long")  # the word PAUSED says it now
    assert store0.runs("long")[0].outcome is Outcome.ABORTED
    store0.close()


def test_status_marks_name_what_the_status_word_hides(sqlite_url: str) -> None:
    store = open_store(sqlite_url)
    job = store.submit("j", What("sql", "SELECT 1"), make_schedule("every", every=5))
    now = utcnow()

    def status_text(**changes: object) -> str:
        from dataclasses import replace

        changed = replace(job, **changes)  # type: ignore[arg-type]
        return row_cells(changed, now, all_owners=False)[1].plain

    assert status_marks(job) == ()
    assert status_text() == "ENABLED"
    running = {"running": True, "status": Status.RUNNING}
    assert status_text(**running) == "RUNNING"
    assert status_text(intent=Intent.PAUSED, **running) == "RUNNING ⏸ paused"
    assert status_text(intent=Intent.DISABLED, **running) == "RUNNING disabled"
    assert status_text(abort_requested=True, **running) == "RUNNING aborting"
    assert status_text(abort_requested=True, remove_requested=True, **running) == "RUNNING removing"
    assert status_text(broken=True, intent=Intent.PAUSED, status=Status.PAUSED) == "PAUSED broken"
    assert status_text(broken=True, status=Status.BROKEN) == "BROKEN"
    # not running: a pending abort or a paused intent has its own word already
    assert status_text(abort_requested=True) == "ENABLED"
    assert status_text(intent=Intent.PAUSED, status=Status.PAUSED) == "PAUSED"
    assert isinstance(now, datetime)
    store.close()


def test_cli_pause_and_disable_of_a_running_job_say_the_run_finishes(
    sqlite_url: str, tmp_path: Path
) -> None:
    from jobtui.core.runner.pool import RunnerPool

    store = open_store(sqlite_url)
    make_demo(store)
    store.submit("long", What("action", "demo.sleep", ("60",)), make_schedule("every", every=120))
    cli = Cli(sqlite_url, tmp_path)
    pool = RunnerPool(store, threads=1, poll=0.1)
    pool.start()
    try:
        deadline = time.monotonic() + 20
        while not store.get("long").running:
            assert time.monotonic() < deadline, "the runner did not start the job"
            time.sleep(0.05)
        line = cli("pause", "long").stdout.strip()
        assert line == (
            "paused job long (status RUNNING); the run in flight finishes, then no new run starts"
        )
        assert "long: paused" in cli("list").stdout
        line = cli("disable", "long").stdout.strip()
        assert line.startswith("disabled job long (status RUNNING); the run in flight finishes")
        listed = cli("list").stdout
        assert "long: disabled" in listed and "long: paused" not in listed
        assert cli.json("show", "long")["status"] == "RUNNING"  # --json unchanged
    finally:
        pool.stop(grace=0, abort=True)
    assert "more than their STATUS" not in cli("list").stdout  # the run ended: DISABLED says it
    assert "DISABLED" in cli("list").stdout
    store.close()
