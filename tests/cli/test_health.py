"""``jobtui runners --check``: exit 1 with no live runner or overdue jobs, 0 when served."""

from __future__ import annotations

import json
import subprocess
from datetime import timedelta
from pathlib import Path

from support.procs import Worker, jobtui_command, wait_for

from jobtui.core import schema
from jobtui.core.model import What
from jobtui.core.schedules import make_schedule
from jobtui.core.store import open_store
from jobtui.core.timeutil import to_db


def check(url: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*jobtui_command(), "--db", url, "runners", "--check", *extra],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_runners_check(sqlite_url: str, tmp_path: Path) -> None:
    store = open_store(sqlite_url)
    try:
        store.submit("hourly", What("sql", "SELECT 1"), make_schedule("every", every="3600"))
        r = check(sqlite_url, "--json")
        assert r.returncode == 1, r.stderr
        report = json.loads(r.stdout)
        assert report["ok"] is False and report["live_runners"] == []
        assert "no live runner" in report["problems"][0]

        w = Worker(sqlite_url, tmp_path, name="hc", threads=1)
        try:
            assert wait_for(w.started, 30)
            r = check(sqlite_url)
            assert r.returncode == 0, r.stdout + r.stderr
            assert r.stdout.startswith("ok: 1 live runner(s), 0 job(s) overdue")
        finally:
            assert w.terminate() == 0
        # nobody ran it for an hour: overdue
        job = store.get("hourly")
        with store.write() as conn:
            conn.execute(
                schema.job.update()
                .where(schema.job.c.id == job.id)
                .values(next_run=to_db(store.now() - timedelta(hours=1)))
            )
        r = check(sqlite_url, "--overdue", "60", "--json")
        assert r.returncode == 1
        report = json.loads(r.stdout)
        assert [j["name"] for j in report["overdue"]] == ["hourly"]
        assert report["overdue"][0]["late_seconds"] > 3500
        # paused: not due, so not overdue
        store.pause("hourly")
        r = check(sqlite_url, "--overdue", "60", "--json")
        assert json.loads(r.stdout)["overdue"] == []
        # bad input: exit 2
        assert check(sqlite_url, "--overdue", "soon").returncode == 2
    finally:
        store.close()
