"""Alerts and the owner rules on MariaDB: an operator sets its own jobs' targets only,
cannot write the database default, and its job's command runs only once an admin
allowed it; the runner account has what the dispatcher needs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.accounts import Server, server  # noqa: F401  (the fixture)
from support.procs import wait_for
from support.samples import ended_run

from jobtui.cli import main
from jobtui.core.alerting import AlertDispatcher
from jobtui.core.errors import JobNotFound
from jobtui.core.model import What
from jobtui.core.schedules import make_schedule
from jobtui.core.store import open_store


def test_operator_alerts_follow_the_owner_rules(server: Server, tmp_path: Path) -> None:  # noqa: F811
    out = tmp_path / "got.jsonl"
    script = tmp_path / "page"
    script.write_text(f'#!/bin/sh\ncat >> "{out}"\n')
    script.chmod(0o755)
    command = f"command:{script}"
    alice, bob = server.store("alice"), server.store("bob")
    root = open_store(server.url)
    try:
        alice.submit("a1", What("sql", "SELECT 1"), make_schedule("every", every="3600"))
        bob.submit("b1", What("sql", "SELECT 1"), make_schedule("every", every="3600"))
        b1 = bob.get("b1")
        # her own job: yes; bob's: no such job for her, nothing written
        alice.set_alert("a1", ["json://127.0.0.1:9/x"])
        with pytest.raises(JobNotFound):
            alice.set_alert("b1", [command], owner=b1.owner)
        raw = server.raw("alice")
        with raw.cursor() as cur:
            changed = cur.execute(
                "UPDATE jobtui_user_job SET alert = %s WHERE name = 'b1'", (json.dumps([command]),)
            )
        raw.close()
        assert changed == 0
        assert bob.alert_of("b1") is None
        # the database default is an admin's: an operator is refused (exit 2)
        url = server.url_for("alice")
        assert main(["--db", url, "alerts", "set", "json://127.0.0.1:9/y"]) == 2
        assert root.alert_default() == []

        # a command on her own job: she cannot read the allow-list, the runner decides
        alice.set_alert("a1", [command])
        a1 = alice.get("a1")
        now = root.now()
        with root.write() as conn:
            conn.execute(ended_run(a1, now, ago=3, outcome="failed", error="boom"))
        runner = server.store("run")
        results: list[dict[str, str]] = []
        try:
            d = AlertDispatcher(runner, "r1", on_sent=lambda e, r: results.append(r))
            d.pass_once()
            assert wait_for(lambda: results, 10)
            d.stop()
        finally:
            runner.close()
        assert next(iter(results[0].values())).startswith("refused: no pattern")
        assert not out.exists()  # never ran
    finally:
        for s in (alice, bob, root):
            s.close()
