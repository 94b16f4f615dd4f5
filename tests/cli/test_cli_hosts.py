"""The verbs that host other parts: ``worker``, ``console`` and ``demo``.

``worker`` runs as a real process that executes a job and stops on SIGTERM.
``console``/``demo`` are driven in-process: the real app is built by the
command line and run headless, quitting as soon as it has loaded.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from jobtui.core.model import Schedule, What
from jobtui.core.store import open_store


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("JOBTUI_DB", "JOBTUI_DEBUG")}
    env["XDG_DATA_HOME"] = str(tmp_path / "xdg")
    return env


@pytest.mark.slow
def test_worker_runs_jobs_and_stops_on_sigterm(sqlite_url: str, tmp_path: Path) -> None:
    pytest.importorskip("jobtui.core.runner.pool", reason="the runner module is not there yet")
    store = open_store(sqlite_url)
    store.submit("once", What("sql", "CREATE TABLE ran (x INTEGER)"), Schedule("once"))
    argv = ["worker", "--db", sqlite_url, "--threads", "1", "--poll", "0.2", "--name", "cli-test"]
    argv += ["--heartbeat-timeout", "4", "--lead", "0"]
    worker = subprocess.Popen(
        [sys.executable, "-m", "jobtui", *argv, "--grace", "5"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(tmp_path),
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not store.runs("once"):
            time.sleep(0.2)
        while time.monotonic() < deadline and store.runs("once")[0].outcome.value == "running":
            time.sleep(0.2)
        runs = store.runs("once")
        assert [r.outcome.value for r in runs] == ["ok"]
        listed = subprocess.run(
            [sys.executable, "-m", "jobtui", "runners", "--json", "--db", sqlite_url],
            capture_output=True,
            text=True,
            env=_env(tmp_path),
            timeout=60,
        )
        runners = json.loads(listed.stdout)
        assert [(r["name"], r["alive"]) for r in runners] == [("cli-test", True)]
        assert runners[0]["pid"] == worker.pid and runners[0]["threads"] == 1
    finally:
        worker.send_signal(signal.SIGTERM)
        try:
            _out, err = worker.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            worker.kill()
            raise
        store.close()
    assert worker.returncode == 0, err
    assert "Traceback" not in err
    assert "1 thread(s) on" in err and "(heartbeat timeout 4 s, lead 0 s)" in err, err
    store = open_store(sqlite_url)
    try:
        assert store.runners() == []  # deregistered on the way out
    finally:
        store.close()


@pytest.fixture
def headless(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """Make the console the CLI builds run headless and quit once loaded; record its options."""
    pytest.importorskip("textual")
    app_module = pytest.importorskip("jobtui.console.app")
    real_make_app = app_module.make_app
    built: list[dict[str, Any]] = []

    def make_app(store: Any, **options: Any) -> Any:
        app = real_make_app(store, **options)
        built.append({"url": store.url, "read_only": store.read_only, "app": app, **options})
        real_run = app.run

        async def quit_when_loaded(pilot: Any) -> None:
            await pilot.pause()
            await pilot.app.workers.wait_for_complete()
            pilot.app.exit()

        app.run = lambda: real_run(headless=True, auto_pilot=quit_when_loaded)
        return app

    monkeypatch.setattr(app_module, "make_app", make_app)
    return built


def test_console_is_built_by_the_one_factory(
    headless: list[dict[str, Any]],
    sqlite_url: str,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    from jobtui.cli import main

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("JOBTUI_DB", sqlite_url)
    open_store(sqlite_url).close()  # a read-only console does not create tables
    assert main(["--read-only", "--refresh", "0.5", "--all"]) == 0  # no verb: the console
    assert main(["console"]) == 0
    first, second = headless
    assert first["url"] == sqlite_url and first["read_only"] is True
    assert (first["runners"], first["read_only"], first["refresh"], first["all_owners"]) == (
        0,
        True,
        0.5,
        True,
    )
    assert second["read_only"] is False and second["refresh"] == 1.0


def test_demo_creates_its_database_and_hosts_runners(
    headless: list[dict[str, Any]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from jobtui.cli import main

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    path = tmp_path / "demo.db"
    assert main(["demo", "--path", str(path), "--runners", "1"]) == 0
    (demo,) = headless
    assert demo["url"] == f"sqlite:///{path}" and demo["runners"] == 1
    store = open_store(demo["url"])
    try:
        assert len(store.list_jobs(all_owners=True)) >= 5
    finally:
        store.close()
