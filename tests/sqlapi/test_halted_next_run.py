"""Issue 26 item 6: a halted job (BROKEN, DISABLED, PAUSED, ABORTED, FINISHED, or
running with one of those decided) shows no next run, in the SQL views and in
`jobtui list/show`; the stored next_run is kept. Times carry their zone label."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pymysql
import pytest
from support.accounts import Server
from support.mariadb import admin_connection

from jobtui.cli import main
from jobtui.core.model import What
from jobtui.core.schedules import make_schedule
from jobtui.core.store import open_store

FAR = datetime(2030, 1, 1, 2, 0, tzinfo=UTC)
HALTS = [
    ("pause", ("pause",), ("resume",)),
    ("disable", ("disable",), ("enable",)),
    ("abort", ("abort",), ("resume",)),
    ("broken", ("broken", "--on"), ("broken", "--off", "--next", "2030-01-01T02:00:00Z")),
]


def _cli(capsys: pytest.CaptureFixture[str], url: str, *args: str) -> str:
    capsys.readouterr()
    assert main(["--db", url, *args]) == 0
    return capsys.readouterr().out


def _list_row(out: str, name: str) -> dict[str, str]:
    lines = out.splitlines()
    header = lines[0]
    row = next(line for line in lines[1:] if line.startswith(name + " "))
    start = header.index("NEXT RUN")
    end = header.index("LAST RUN")
    return {"next": row[start:end].strip()}


@pytest.mark.parametrize(("halt", "on", "off"), HALTS)
def test_list_and_show_give_no_next_run_for_a_halted_job(
    sqlite_url: str, capsys: pytest.CaptureFixture[str], halt: str, on: tuple[str, ...],
    off: tuple[str, ...],
) -> None:  # fmt: skip
    store = open_store(sqlite_url)
    try:
        store.submit("job", What("sql", "SELECT 1"), make_schedule("every", every=3600, start=FAR))
    finally:
        store.close()
    assert _list_row(_cli(capsys, sqlite_url, "list"), "job")["next"] == "2030-01-01 02:00:00 UTC"
    _cli(capsys, sqlite_url, *on, "job")
    assert _list_row(_cli(capsys, sqlite_url, "list"), "job")["next"] == "-", halt
    human = _cli(capsys, sqlite_url, "show", "job")
    (line,) = [ln for ln in human.splitlines() if ln.startswith("next_run ")]
    assert line.split()[-1] == "-", halt
    data = json.loads(_cli(capsys, sqlite_url, "show", "job", "--json"))
    assert data["halted"] is True
    assert data["next_run"] is not None  # the stored next run is kept
    _cli(capsys, sqlite_url, *off, "job")
    data = json.loads(_cli(capsys, sqlite_url, "show", "job", "--json"))
    assert data["halted"] is False and data["next_run"] is not None
    assert _list_row(_cli(capsys, sqlite_url, "list"), "job")["next"] != "-"


def test_list_and_show_give_the_next_run_in_the_jobs_zone(
    sqlite_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    store = open_store(sqlite_url)
    try:
        store.submit(
            "paris",
            What("sql", "SELECT 1"),
            make_schedule("cron", cron="0 3 * * *", tz="Europe/Paris", start=FAR),
        )
    finally:
        store.close()
    # 03:00 in Paris, labelled; in December CET, in summer CEST
    shown = _list_row(_cli(capsys, sqlite_url, "list"), "paris")["next"]
    assert shown.endswith((" 03:00:00 CET", " 03:00:00 CEST")), shown
    human = _cli(capsys, sqlite_url, "show", "paris")
    (line,) = [ln for ln in human.splitlines() if ln.startswith("next_run ")]
    assert line.split(None, 1)[1].strip() == shown


# ---------------------------------------------------------------------- the SQL views


def _dict_rows(conn: Any, sql: str, args: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
    with conn.cursor(pymysql.cursors.DictCursor) as cur:
        cur.execute(sql, args)
        return [dict(r) for r in cur.fetchall()]


@pytest.mark.mariadb
def test_the_views_show_no_next_date_for_a_halted_job(server: Server) -> None:
    """user_jobs (an operator's) and dba_jobs (an admin's): next_date and next_sec are NULL
    for a halted job, whichever way it was halted; jobtui_job keeps next_run."""
    db = server.database
    alice = server.raw("alice")
    adm = server.raw("adm")
    store = server.store("alice")
    try:
        with alice.cursor() as cur:
            cur.execute(
                f"CALL `{db}`.submit_job(@j, 'job', 'DO 1', 'every 3600', %s, NULL)",
                (FAR.replace(tzinfo=None),),
            )
            cur.execute("SELECT @j")
            job = int(cur.fetchone()[0])

        def seen() -> tuple[Any, ...]:
            (mine,) = _dict_rows(
                alice, f"SELECT next_date, next_sec, broken, status FROM `{db}`.user_jobs"
            )
            (theirs,) = _dict_rows(
                adm, f"SELECT next_date, next_sec FROM `{db}`.dba_jobs WHERE job = %s", (job,)
            )
            assert (mine["next_date"], mine["next_sec"]) == (
                theirs["next_date"],
                theirs["next_sec"],
            )
            return mine["next_date"], mine["next_sec"]

        assert seen() == (datetime(2030, 1, 1, 2, 0), "02:00:00")
        for halt in ("pause", "disable", "abort", "broken"):
            if halt == "broken":
                with alice.cursor() as cur:
                    cur.execute(f"CALL `{db}`.broken(%s, TRUE, NULL)", (job,))
            else:
                getattr(store, halt)("job")
            assert seen() == (None, None), halt
            root = admin_connection(db)
            try:
                (row,) = _dict_rows(root, "SELECT next_run FROM jobtui_job WHERE id = %s", (job,))
            finally:
                root.close()
            assert row["next_run"] is not None, halt  # kept
            if halt == "broken":
                with alice.cursor() as cur:
                    cur.execute(
                        f"CALL `{db}`.broken(%s, FALSE, %s)", (job, FAR.replace(tzinfo=None))
                    )
            elif halt == "disable":
                store.enable("job")
            else:
                store.resume("job")
            assert seen()[0] is not None, halt
        # running, and paused meanwhile: the status says RUNNING, no next run comes
        root = admin_connection(db)
        try:
            with root.cursor() as cur:
                cur.execute(
                    "UPDATE jobtui_job SET running = 1, status = 'RUNNING', intent = 'PAUSED' "
                    "WHERE id = %s",
                    (job,),
                )
            assert seen() == (None, None)
            with root.cursor() as cur:
                cur.execute("UPDATE jobtui_job SET intent = 'ENABLED' WHERE id = %s", (job,))
            assert seen()[0] is not None
        finally:
            root.close()
    finally:
        store.close()
        alice.close()
        adm.close()
