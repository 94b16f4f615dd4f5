"""Python actions are privileged (issue #11, reproduction 2), against real accounts.

An action is code the deployer installed, run as the worker's OS user on the
runner's connection. On MySQL/MariaDB an admin decides which accounts may use
which actions (``jobtui_action_grant``, written by `jobtui grant ACCOUNT
--actions PATTERN`) and the runner refuses every other owner's action job.
The demo actions exist only in a database `jobtui demo` made, and no shipped
action writes files (``demo.export_csv`` wrote every owner's jobs to any path).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from importlib.metadata import entry_points
from pathlib import Path
from types import SimpleNamespace

import pytest
from sqlalchemy import text
from support.accounts import Server
from support.mariadb import admin_connection
from support.procs import wait_for

from jobtui.cli import main
from jobtui.console.demo import create_demo
from jobtui.core import actions
from jobtui.core.accounts import PermissionRefused
from jobtui.core.actions import ActionContext, check_patterns
from jobtui.core.backends.mysql import grants
from jobtui.core.backends.mysql.grants import action_grant_statements
from jobtui.core.builtin_actions import DEMO_ACTIONS
from jobtui.core.errors import InvalidInput
from jobtui.core.model import Outcome, What
from jobtui.core.runner.pool import RunnerPool
from jobtui.core.schedules import make_schedule
from jobtui.core.store import JobStore, open_store

ONCE = make_schedule("once")
WRITE = "test.write_file"


def _cli(capsys: pytest.CaptureFixture[str], url: str, *args: str) -> tuple[int, str, str]:
    code = main(["--db", url, *args])
    out, err = capsys.readouterr()
    return code, out, err


def _write_file(ctx: ActionContext) -> None:
    """What an action may do that a database account may not: write a file as the worker."""
    Path(ctx.args[0]).write_text(f"written for {ctx.job.owner}\n")


@pytest.fixture
def write_action() -> Iterator[str]:
    """``test.write_file PATH``, registered in this process (as an embedding application would)."""
    actions.register(WRITE, _write_file)
    try:
        yield WRITE
    finally:
        actions.unregister(WRITE)


def _run_once(runner: JobStore, owner_store: JobStore, name: str) -> list:  # type: ignore[type-arg]
    """Run the runner's pool until ``owner_store``'s job ``name`` has a finished new run."""
    before = len(owner_store.runs(name))
    pool = RunnerPool(runner, threads=1, poll=0.1, name="actions")
    pool.start()
    try:
        done = wait_for(
            lambda: (
                len(owner_store.runs(name)) > before
                and owner_store.runs(name)[0].outcome is not Outcome.RUNNING
            ),
            20,
        )
    finally:
        pool.stop(grace=0)
    assert done, f"no run of {name!r} finished"
    return owner_store.runs(name)


# ---------------------------------------------------------------------- reproduction 2


@pytest.mark.mariadb
def test_repro2_an_owner_runs_only_the_actions_an_admin_allowed_it(
    server: Server, write_action: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    alice_file, bob_file = tmp_path / "alice.out", tmp_path / "bob.out"
    # the runner here is the server's admin: whatever its own rights, the owner's decide
    alice, bob, runner = server.store("alice"), server.store("bob"), open_store(server.url)
    try:
        # alice (an operator) may not read the allow-list: submit cannot tell, the runner does
        code, _out, err = _cli(
            capsys, server.url_for("alice"), "submit", "w", "--action", WRITE,
            "--arg", str(alice_file), "--once",
        )  # fmt: skip
        assert code == 0, err
        runs = _run_once(runner, alice, "w")
        assert runs[0].outcome is Outcome.FAILED
        error = runs[0].error or ""
        assert f"may not use action {WRITE!r}" in error and alice.owner in error
        assert "--actions PATTERN" in error
        assert not alice_file.exists()

        # the admin allows bob test.*: bob's job runs, alice's still does not
        bob_name = server.names["bob"]
        code, out, err = _cli(
            capsys, server.url, "grant", bob_name, "--actions", "test.*", "--apply"
        )
        assert code == 0, err
        assert "may use the actions matching test.*" in out
        bob.submit("w", What("action", WRITE, (str(bob_file),)), ONCE)
        runs = _run_once(runner, bob, "w")
        assert runs[0].outcome is Outcome.OK, runs[0].error
        assert bob_file.read_text() == f"written for {bob.owner}\n"
        alice.enable("w")
        alice.run_now("w")
        assert _run_once(runner, alice, "w")[0].outcome is Outcome.FAILED
        assert not alice_file.exists()

        # taken back: bob's next run is refused
        code, _out, err = _cli(
            capsys, server.url, "grant", bob_name, "--revoke-actions", "test.*", "--apply"
        )
        assert code == 0, err
        bob_file.unlink()
        bob.enable("w")
        bob.run_now("w")
        runs = _run_once(runner, bob, "w")
        assert runs[0].outcome is Outcome.FAILED and "may not use action" in (runs[0].error or "")
        assert not bob_file.exists()
    finally:
        for s in (alice, bob, runner):
            s.close()


@pytest.mark.mariadb
def test_an_account_that_reads_the_allow_list_is_refused_at_submit_and_change(
    server: Server, write_action: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    adm_url = server.url_for("adm")
    target = str(tmp_path / "x.out")
    code, out, err = _cli(
        capsys, adm_url, "submit", "w", "--action", WRITE, "--arg", target, "--once"
    )
    assert code == 2 and out == "" and err.count("\n") == 1
    assert f"may not use action {WRITE!r}" in err and "--actions PATTERN" in err
    assert _cli(capsys, adm_url, "submit", "w", "--sql", "SELECT 1", "--once")[0] == 0
    code, _out, err = _cli(capsys, adm_url, "change", "w", "--action", WRITE, "--arg", target)
    assert code == 2 and "may not use action" in err
    # allowed by an exact name: accepted
    assert (
        _cli(capsys, server.url, "grant", server.names["adm"], "--actions", WRITE, "--apply")[0]
        == 0
    )
    code, _out, err = _cli(capsys, adm_url, "change", "w", "--action", WRITE, "--arg", target)
    assert code == 0, err
    # every account is told about an action nobody registered, the shipped writer included
    for url in (adm_url, server.url_for("alice")):
        code, _out, err = _cli(capsys, url, "submit", "e", "--action", "demo.export_csv", "--once")
        assert code == 2 and "unknown action 'demo.export_csv'" in err


@pytest.mark.mariadb
def test_a_runner_that_cannot_read_the_allow_list_runs_no_action(server: Server) -> None:
    """Fail closed: the check on an operator's connection (which may not read the table)."""
    alice = server.store("alice")
    try:
        job = SimpleNamespace(owner=alice.owner, what=What("action", "demo.noop"))
        with alice.engine.connect() as conn, pytest.raises(PermissionRefused) as info:
            grants.check_granted(conn, job)
        assert "cannot read jobtui_action_grant" in str(info.value)
        assert "jobtui grant ACCOUNT --runner" in str(info.value)
    finally:
        alice.close()


# ---------------------------------------------------------------------- grant --actions


@pytest.mark.mariadb
def test_grant_actions_prints_applies_and_revokes(
    server: Server, capsys: pytest.CaptureFixture[str]
) -> None:
    table = f"`{server.database}`.`jobtui_action_grant`"
    code, out, err = _cli(
        capsys, server.url, "grant", "'carol'@'10.0.%'", "--actions", "reports.*, reports.daily",
        "--actions", "etl.load", "--actions", "reports.*",
    )  # fmt: skip
    assert code == 0, err
    assert out.splitlines() == [
        f"INSERT INTO {table} (`account`, `pattern`) VALUES ('carol@10.0.%', '{p}') "
        "ON DUPLICATE KEY UPDATE `account` = `account`;"
        for p in ("reports.*", "reports.daily", "etl.load")
    ]
    # with a kind: the role's statements, then the allow-list's
    code, out, _ = _cli(capsys, server.url, "grant", "dave", "--runner", "--actions", "x.*")
    lines = out.splitlines()
    assert (
        lines[0].startswith("CREATE ROLE IF NOT EXISTS") and "VALUES ('dave@%', 'x.*')" in lines[-1]
    )
    code, out, _ = _cli(capsys, server.url, "grant", "dave", "--revoke-actions", "x.*", "--json")
    data = json.loads(out)
    assert data["statements"] == [
        f"DELETE FROM {table} WHERE `account` = 'dave@%' AND `pattern` = 'x.*'"
    ]
    assert data["revoked_actions"] == ["x.*"] and data["actions"] == [] and not data["applied"]

    def rows() -> set[tuple[str, str]]:
        conn = admin_connection(server.database)
        try:
            with conn.cursor() as cur:
                cur.execute("SELECT account, pattern FROM jobtui_action_grant")
                return set(cur.fetchall())
        finally:
            conn.close()

    alice = server.names["alice"]
    for _ in range(2):  # applying twice changes nothing
        code, out, err = _cli(capsys, server.url, "grant", alice, "--actions", "a.*,b.c", "--apply")
        assert code == 0, err
    assert rows() == {(f"{alice}@%", "a.*"), (f"{alice}@%", "b.c")}
    code, out, err = _cli(capsys, server.url, "grant", alice, "--revoke-actions", "a.*", "--apply")
    assert code == 0 and f"'{alice}'@'%' no longer has the action patterns a.*" in out
    assert rows() == {(f"{alice}@%", "b.c")}
    # an operator may not change the allow-list
    code, _out, err = _cli(
        capsys, server.url_for("alice"), "grant", alice, "--actions", "*", "--apply"
    )
    assert code != 0 and rows() == {(f"{alice}@%", "b.c")}


@pytest.mark.mariadb
def test_grant_refuses_bad_action_patterns(
    server: Server, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = ["x'; DROP TABLE jobtui_job; --", "", " , ", "a b", "a\\b", "é.*", "x" * 129, "a`b"]
    for pattern in bad:
        for option in ("--actions", "--revoke-actions"):
            code, out, err = _cli(capsys, server.url, "grant", "dave", option, pattern)
            assert code == 2 and out == "" and err.count("\n") == 1, (pattern, err)
            assert "action pattern" in err and "A-Z a-z 0-9 _ . : / - and * ? [ ] !" in err
    code, out, err = _cli(
        capsys, server.url, "grant", "dave", "--actions", "a.*", "--revoke-actions", "a.*"
    )
    assert code == 2 and "both granted and revoked" in err
    code, out, err = _cli(capsys, server.url, "grant", "x" * 80 + "@" + "h" * 120, "--actions", "a")
    assert code == 2 and "at most 190 characters" in err
    with pytest.raises(InvalidInput):
        action_grant_statements("dave", "db", grant=["a'b"])
    assert check_patterns(["a.*,b", "a.*", "[!x]y?"]) == ["a.*", "b", "[!x]y?"]


def test_grant_actions_on_sqlite_says_there_are_no_accounts(
    sqlite_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _cli(capsys, sqlite_url, "grant", "alice", "--actions", "reports.*")
    assert code == 2 and out == ""
    assert "SQLite has no accounts" in err and "every registered action is allowed" in err


def test_on_sqlite_every_registered_action_is_allowed(
    sqlite_url: str, write_action: str, tmp_path: Path
) -> None:
    out = tmp_path / "w.out"
    store = open_store(sqlite_url)
    try:
        store.submit("w", What("action", WRITE, (str(out),)), ONCE)
        assert _run_once(store, store, "w")[0].outcome is Outcome.OK
        assert out.exists()
    finally:
        store.close()


# ---------------------------------------------------------------------- demo actions


def _jobtui(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """A fresh process: it knows only the actions its own store registers."""
    env = {k: v for k, v in os.environ.items() if k not in ("JOBTUI_DB", "JOBTUI_DEBUG")}
    env["XDG_DATA_HOME"] = str(tmp_path / "xdg")
    proc = subprocess.run(
        [sys.executable, "-m", "jobtui", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def test_no_action_is_shipped_as_an_entry_point() -> None:
    assert list(entry_points(group=actions.GROUP)) == []
    assert "demo.export_csv" not in DEMO_ACTIONS
    assert set(DEMO_ACTIONS) == {"demo.noop", "demo.sleep", "demo.fail", "demo.flaky"}


def test_demo_actions_are_unknown_outside_a_demo_database(
    sqlite_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in (*DEMO_ACTIONS, "demo.export_csv"):
        code, out, err = _cli(capsys, sqlite_url, "submit", "d", "--action", name, "--once")
        assert code == 2 and out == "" and err.count("\n") == 1, name
        assert f"unknown action {name!r}: registered actions are" in err
    proc = _jobtui(tmp_path, "--db", sqlite_url, "submit", "d", "--action", "demo.noop", "--once")
    assert proc.returncode == 2 and "unknown action 'demo.noop'" in proc.stderr
    store = open_store(sqlite_url)
    try:
        assert not store.is_demo()
        assert "demo.noop" not in actions.available()
    finally:
        store.close()


def test_demo_actions_are_known_in_the_demo_database_only(tmp_path: Path) -> None:
    url = create_demo(str(tmp_path / "demo.db"))  # what `jobtui demo` makes
    # a fresh process on it knows them: submit and a worker's runs
    proc = _jobtui(
        tmp_path, "--db", url, "submit", "nap", "--action", "demo.sleep", "--arg", "0", "--once"
    )
    assert proc.returncode == 0, proc.stderr
    proc = _jobtui(tmp_path, "--db", url, "run", "nap")
    assert proc.returncode == 0, proc.stderr
    store = open_store(url)
    try:
        assert store.is_demo()
        assert store.runs("nap")[0].outcome is Outcome.OK, store.runs("nap")[0].error
        store.submit("nap2", What("action", "demo.noop"), ONCE, disabled=True)
        # the same rows in a database that is no longer a demo: the run fails, the reason said
        with store.write() as conn:
            conn.execute(text("DELETE FROM jobtui_meta WHERE key = 'demo'"))
        assert not store.is_demo()
    finally:
        store.close()
    assert not (tmp_path / "demo_orders.csv").exists()  # no demo job writes files
    for name in DEMO_ACTIONS:  # this process opened the demo database above
        actions.unregister(name)
    store = open_store(url)
    try:
        assert "demo.noop" not in actions.available()
        store.enable("nap2")
        run = _run_once(store, store, "nap2")[0]
        assert run.outcome is Outcome.FAILED
        assert "unknown action 'demo.noop': registered actions are" in (run.error or "")
    finally:
        store.close()


@pytest.mark.mariadb
def test_a_mariadb_database_marked_as_a_demo_knows_the_demo_actions(
    mariadb_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _out, err = _cli(capsys, mariadb_url, "submit", "d", "--action", "demo.noop", "--once")
    assert code == 2 and "unknown action 'demo.noop'" in err
    store = open_store(mariadb_url)
    try:
        store.mark_demo()
    finally:
        store.close()
    for name in DEMO_ACTIONS:
        actions.unregister(name)
    # known now, but still an action: the owner needs the admins' allow
    code, _out, err = _cli(capsys, mariadb_url, "submit", "d", "--action", "demo.noop", "--once")
    assert code == 2 and "may not use action 'demo.noop'" in err
    store = open_store(mariadb_url)
    try:
        owner = store.owner
    finally:
        store.close()
    code, _out, err = _cli(capsys, mariadb_url, "grant", owner, "--actions", "demo.*", "--apply")
    assert code == 0, err
    code, _out, err = _cli(capsys, mariadb_url, "submit", "d", "--action", "demo.noop", "--once")
    assert code == 0, err
