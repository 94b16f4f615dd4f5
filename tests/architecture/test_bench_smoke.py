"""Tiny runs of the benchmark scripts, so they cannot rot.

The figures are not judged here (benchmarks are not pass/fail); each script
must exit 0, print the machine it ran on and its table, and have done some
real work (firings in the ledger, runs in the run log, a full job table).
Each run works in its own scratch database, so parallel runs do not collide.
"""

from __future__ import annotations

import importlib.util
import re
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from support.mariadb import MYSQL_SERVER, require_mysql

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "bench"

pytestmark = pytest.mark.slow


def run_script(name: str, *args: str, timeout: float = 240) -> str:
    proc = subprocess.run(
        [sys.executable, str(BENCH / name), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO,
        check=False,
    )
    assert proc.returncode == 0, f"{name} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    assert proc.stdout.startswith("machine: "), proc.stdout
    return proc.stdout


def scratch_db() -> str:
    return f"jobtui_bs_{secrets.token_hex(5)}"


def table_rows(output: str, first_cell: str) -> list[list[str]]:
    """The cells of the first table's rows whose first cell is ``first_cell``."""
    rows: list[list[str]] = []
    for line in output.splitlines():
        if not line.strip() and rows:
            break  # the end of the first table
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            if cells and cells[0] == first_cell:
                rows.append(cells)
    return rows


def database_exists(name: str) -> bool:
    from support.mariadb import admin_connection

    conn = admin_connection()
    try:
        with conn.cursor() as cur:
            cur.execute("SHOW DATABASES LIKE %s", (name,))
            return cur.fetchone() is not None
    finally:
        conn.close()


def test_dispatch_smoke_jobtui_event_scheduler_and_floor() -> None:
    require_mysql()
    db = scratch_db()
    out = run_script(
        "dispatch.py",
        "--jobs",
        "5",
        "--seconds",
        "3",
        "--systems",
        "jobtui,events,floor,bookkept",
        "--server",
        MYSQL_SERVER,
        "--database",
        db,
        "--lead",
        "2",
    )
    assert "database: MariaDB/MySQL" in out
    rows = {r[1]: r for r in table_rows(out, "5")}
    assert set(rows) >= {"jobtui", "events", "bookkept"}, out
    for system in ("jobtui", "events", "bookkept"):
        expected, done = int(rows[system][3]), int(rows[system][4])
        assert expected == 15
        assert 0 < done <= expected + 1, out
    assert "jobtui's own run log" in out
    assert rows["bookkept"][-1] == "", out  # its runs recorded ok, its job rows idle again
    # What the machine allows: from the floor's CPU per firing, beside jobtui's figures.
    bound = out[out.index("What this machine allows") :]
    row = table_rows(bound, "5")
    assert len(row) == 1, bound
    # CPU is read in clock ticks (10 ms): 15 firings may cost the server none of them.
    server, total, least_server, least_total = (float(x) for x in row[0][1:5])
    assert 0 <= server <= total
    assert 0 <= least_server <= least_total
    assert row[0][8] == f"{rows['jobtui'][4]}/{rows['jobtui'][3]}"
    assert not database_exists(db)


def test_dispatch_smoke_workers() -> None:
    """--workers 1,2: jobtui with one and two worker processes, issue #13's table and
    its targets, each marked met or missed."""
    require_mysql()
    db = scratch_db()
    out = run_script(
        "dispatch.py",
        "--jobs",
        "5",
        "--seconds",
        "3",
        "--workers",
        "1,2",
        "--systems",
        "floor,jobtui",
        "--server",
        MYSQL_SERVER,
        "--database",
        db,
        "--lead",
        "2",
    )
    rows = {r[1]: r for r in table_rows(out, "5")}
    assert set(rows) == {"floor", "jobtui", "jobtui2"}, out
    assert rows["jobtui2"][2] == "2", out  # processes
    for system in ("jobtui", "jobtui2"):
        assert 0 < int(rows[system][4]) <= 16, out
    side = out[out.index("issue #13's table") :]
    labels = {r[1] for r in table_rows(side, "5")}
    assert {"jobtui, 1 worker", "jobtui, 2 workers"} <= labels, side
    assert any(label.startswith("floor") for label in labels), side
    targets = table_rows(out[out.index("Issue #13's targets") :], "5")
    names = [r[1] for r in targets]
    assert "jobtui, 2 workers: p99 <= 1 worker's" in names, names
    assert "jobtui, 1 worker: none lost" in names, names
    assert {r[4] for r in targets} <= {"met", "MISSED", "-"}, targets
    assert not database_exists(db)


def test_dispatch_smoke_apscheduler() -> None:
    require_mysql()
    # in the test extra (pyproject.toml): a test install without it is an error, not a skip
    assert importlib.util.find_spec("apscheduler") is not None, (
        "APScheduler is missing: it is in the test extra (pip install -e '.[test]')"
    )
    out = run_script(
        "dispatch.py",
        "--jobs",
        "5",
        "--seconds",
        "3",
        "--systems",
        "apscheduler",
        "--server",
        MYSQL_SERVER,
        "--database",
        scratch_db(),
        "--lead",
        "2",
    )
    rows = table_rows(out, "5")
    assert rows and rows[0][1] == "apscheduler", out
    assert int(rows[0][4]) > 0, out


def test_throughput_smoke() -> None:
    require_mysql()
    out = run_script(
        "throughput.py",
        "--jobs",
        "10",
        "--seconds",
        "2",
        "--warmup",
        "1",
        "--processes",
        "1",
        "--profile-seconds",
        "1",
        "--server",
        MYSQL_SERVER,
        "--database",
        scratch_db(),
    )
    rows = table_rows(out, "1")
    assert rows, out
    assert int(rows[0][1]) > 0, out  # runs ok in the window
    assert "Where the round trips go" in out
    # each job runs as its owner's routine (which calls noop)
    assert re.search(r"CALL `jobtui_bs_\w+`\.`jobtui_w_\d+_[0-9a-f]{12}`\(\)", out), out


def test_console_smoke_sqlite() -> None:
    out = run_script(
        "console.py", "--jobs", "200", "--changed", "50", "--idle", "2", "--timeout", "60"
    )
    rows = {r[1]: r for r in table_rows(out, "sqlite (200 jobs)")}
    assert "first full table (s)" in rows, out
    assert float(rows["first full table (s)"][2]) > 0
    assert "resident memory (MB)" in rows
    assert "idle queries/s (SELECT)" in rows
