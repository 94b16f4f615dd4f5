"""Alerts: sent once per event across workers, to a command and to an HTTP endpoint
(apprise's json://); a hanging target delays no job; who may name a command; the
worker's JSON log lines; systemd notifications over a real datagram socket."""

from __future__ import annotations

import itertools
import json
import os
import socket
import subprocess
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select
from support.procs import Console, Worker, jobtui_command, wait_for
from support.samples import ended_run

from jobtui.core import alerts, schema
from jobtui.core.alerting import AlertDispatcher
from jobtui.core.errors import InvalidInput
from jobtui.core.model import What
from jobtui.core.schedules import make_schedule
from jobtui.core.store import JobStore, open_store

# fails at run time (malformed JSON), passes the submit-time check, on SQLite
FAILING_SQL = "select json('x')"


class Hook:
    """An HTTP server on loopback that keeps every POST body (apprise json:// sends one)."""

    def __init__(self) -> None:
        bodies: list[dict[str, Any]] = []
        self.bodies = bodies

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                size = int(self.headers.get("Content-Length", 0))
                bodies.append(json.loads(self.rfile.read(size)))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"json://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def keys(self) -> list[str]:
        out = []
        for body in self.bodies:
            for line in str(body.get("message", "")).splitlines():
                if line.startswith("event: "):
                    out.append(line[len("event: ") :])
        return out

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def hook() -> Iterator[Hook]:
    h = Hook()
    yield h
    h.close()


def recorder(tmp_path: Path, *, sleep: float = 0) -> tuple[str, Path]:
    """A command target that writes each event to a file of its own in a directory:
    its stdin (one JSON line), then ``$JOBTUI_ALERT_KEY $JOBTUI_ALERT_KIND``."""
    out = tmp_path / "events"
    out.mkdir()
    script = tmp_path / "record-alert"
    nap = f"sleep {sleep}\n" if sleep else ""
    script.write_text(
        "#!/bin/sh\n"
        f"{nap}"
        f'f=$(mktemp "{out}/ev.XXXXXX")\n'
        'cat > "$f"\n'
        'printf \'\\n%s %s\\n\' "$JOBTUI_ALERT_KEY" "$JOBTUI_ALERT_KIND" >> "$f"\n'
    )
    script.chmod(0o755)
    return f"command:{script}", out


def recorded(out: Path) -> list[tuple[dict[str, Any], str]]:
    """Each event the command got: (its stdin JSON, its environment line)."""
    got = []
    for f in sorted(out.glob("ev.*")):
        lines = f.read_text().splitlines()
        if len(lines) >= 2:
            got.append((json.loads(lines[0]), lines[1]))
    return got


def outbox(store: JobStore) -> list[Any]:
    a = schema.alert_outbox
    with store.read() as conn:
        return list(conn.execute(select(a).order_by(a.c.event_key)))


def test_alert_fires_once_per_event_with_two_workers(
    sqlite_url: str, tmp_path: Path, hook: Hook
) -> None:
    command, out = recorder(tmp_path)
    store = open_store(sqlite_url)
    try:
        store.submit(
            "bad",
            What("sql", FAILING_SQL),
            make_schedule("every", every="1"),
            max_failures=3,
        )
        store.set_alert("bad", [command, hook.url])
        workers = [Worker(sqlite_url, tmp_path, name=f"w{i}", threads=2, poll=0.2) for i in (1, 2)]
        try:
            assert wait_for(lambda: all(w.started() for w in workers), 30)
            assert wait_for(lambda: store.get("bad").broken, 30)
            # 3 failed runs and the BROKEN event: 4 events, each sent once
            assert wait_for(lambda: len([r for r in outbox(store) if r.sent]) >= 4, 30)
            assert wait_for(lambda: len(hook.keys()) >= 4, 10)
            assert wait_for(lambda: len(recorded(out)) >= 4, 10)
            time.sleep(2.5)  # two more passes of both dispatchers: nothing sent again
        finally:
            codes = [w.terminate() for w in workers]
        assert codes == [0, 0], [w.log() for w in workers]
        rows = outbox(store)
        keys = sorted(r.event_key for r in rows)
        failed = [r.id for r in store.runs("bad", outcome="failed")]
        assert len(failed) == 3
        assert keys == sorted(
            [*(f"failed:{i}" for i in failed), f"broken:{rows[0].job_id}:{max(failed)}"]
        )
        assert all(r.sent is not None and json.loads(r.result) for r in rows)
        # the HTTP endpoint and the command each got every event exactly once
        assert Counter(hook.keys()) == Counter(keys), hook.bodies
        got = recorded(out)
        events = [e for e, _env in got]
        assert Counter(e["key"] for e in events) == Counter(keys)
        assert {e["kind"] for e in events} == {"failed", "broken"}
        assert all(e["job"] == "bad" and e["error"] for e in events)
        assert sorted(env for _e, env in got) == sorted(f"{e['key']} {e['kind']}" for e in events)
        # the two workers sent them between them, one claim per event
        senders = {r.claimed_by for r in rows}
        assert senders <= {w.runner_id() for w in workers}
        assert all(r.attempts == 1 for r in rows)
    finally:
        store.close()


@pytest.mark.slow
def test_a_console_hosting_runners_sends_alerts_once(
    sqlite_url: str, tmp_path: Path, hook: Hook
) -> None:
    """``jobtui console --runners N`` sends its runs' alerts as a worker does: each
    event once, from the console's own pool."""
    store = open_store(sqlite_url)
    try:
        store.submit(
            "bad", What("sql", FAILING_SQL), make_schedule("every", every="1"), max_failures=2
        )
        store.set_alert("bad", [hook.url])
        console = Console(["--db", sqlite_url, "console", "--runners", "2"], tmp_path)
        try:
            console.wait_for_screen("bad")
            assert wait_for(lambda: store.get("bad").broken, 30), console.screen()
            # 2 failed runs and the BROKEN event, each sent once
            assert wait_for(lambda: len(hook.keys()) >= 3, 20), (outbox(store), console.screen())
            time.sleep(2.5)  # two more passes: nothing sent again
        finally:
            console.cleanup()
        rows = outbox(store)
        assert Counter(hook.keys()) == Counter(r.event_key for r in rows)
        assert len(rows) == 3 and all(r.sent is not None and r.attempts == 1 for r in rows)
        assert len({r.claimed_by for r in rows}) == 1
    finally:
        store.close()


def test_hanging_target_does_not_delay_the_next_slot(sqlite_url: str, tmp_path: Path) -> None:
    command, _out = recorder(tmp_path, sleep=30)
    store = open_store(sqlite_url)
    try:
        job = store.submit(
            "slow-alert", What("sql", FAILING_SQL), make_schedule("every", every="1")
        )
        store.set_alert("slow-alert", [command])
        worker = Worker(
            sqlite_url, tmp_path, name="hang", threads=1, poll=0.2, extra=["--alert-timeout", "3"]
        )
        try:
            assert wait_for(worker.started, 30)
            assert wait_for(lambda: len(store.runs("slow-alert", outcome="failed")) >= 7, 30)
            # the first alerts' commands hang (killed after 3 s) while the job goes on
            assert wait_for(
                lambda: any(r.sent and "timed out" in r.result for r in outbox(store)), 15
            )
        finally:
            assert worker.terminate() == 0, worker.log()
        runs = sorted(store.runs("slow-alert", outcome="failed"), key=lambda r: r.scheduled_for)
        assert len(runs) >= 7
        # every slot ran on time, at one second apart: none waited for an alert
        late = [(r.started - r.scheduled_for).total_seconds() for r in runs[1:] if r.started]
        assert max(late) < 0.9, late
        gaps = [
            (b.scheduled_for - a.scheduled_for).total_seconds() for a, b in itertools.pairwise(runs)
        ]
        assert max(gaps) <= 1.01, gaps
        assert job.id == runs[0].job_id
    finally:
        store.close()


def test_alerts_in_process_two_dispatchers_claim_once(db_url: str, tmp_path: Path) -> None:
    """Both backends: two dispatchers (two runner ids) on one outbox; one sends each."""
    command, out = recorder(tmp_path)
    store = open_store(db_url)
    try:
        store.submit("x", What("sql", "SELECT 1"), make_schedule("every", every="60"))
        store.set_alert_default([command])
        job = store.get("x")
        # a failed run, as a runner records it
        now = store.now()
        with store.write() as conn:
            conn.execute(
                schema.run.insert().values(
                    job_id=job.id,
                    job_name="x",
                    owner=job.owner,
                    scheduled_for=now - timedelta(seconds=5),
                    started=now - timedelta(seconds=5),
                    finished=now - timedelta(seconds=4),
                    duration=1.0,
                    outcome="failed",
                    error="boom",
                    runner="r",
                    skipped=0,
                    manual=False,
                )
            )
        sent: list[str] = []
        d1 = AlertDispatcher(store, "one", on_sent=lambda e, r: sent.append(e.key))
        d2 = AlertDispatcher(store, "two", on_sent=lambda e, r: sent.append(e.key))
        claimed = [0, 0]

        def go(i: int, d: AlertDispatcher) -> None:
            claimed[i] = d.pass_once()

        threads = [threading.Thread(target=go, args=(i, d)) for i, d in enumerate((d1, d2))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sum(claimed) == 1
        assert wait_for(lambda: sent, 10)
        assert d1.pass_once() + d2.pass_once() == 0  # sent: never claimed again
        d1.stop()
        d2.stop()
        assert len(sent) == 1 and sent[0].startswith("failed:")
        assert len(recorded(out)) == 1
        # the job's own targets ([] = none) override the default: nothing more is enqueued
        store.set_alert("x", None)
        assert store.alert_of("x") is None
        store.set_alert("x", [])
        assert store.alert_of("x") == []
    finally:
        store.set_alert_default([])
        store.close()


def test_command_alert_needs_an_allow_pattern_on_mariadb(mariadb_url: str, tmp_path: Path) -> None:
    """A job's command target runs only when its owner holds an ``alert:PATH`` pattern;
    the database default's commands were an admin's choice."""
    command, out = recorder(tmp_path)
    store = open_store(mariadb_url)
    try:
        store.submit("m", What("sql", "SELECT 1"), make_schedule("every", every="60"))
        # root may read the allow-list: the missing pattern is refused at once
        with pytest.raises(InvalidInput, match="alert:"):
            store.set_alert("m", [command])
        job = store.get("m")
        with store.write() as conn:  # written around the check, as a row may be
            conn.execute(
                schema.job.update()
                .where(schema.job.c.id == job.id)
                .values(alert=alerts.encode([command]))
            )
            now = store.now()
            conn.execute(ended_run(job, now, ago=3, outcome="failed", error="boom"))
        results: list[dict[str, str]] = []
        d = AlertDispatcher(store, "me", on_sent=lambda e, r: results.append(r))
        d.pass_once()
        assert wait_for(lambda: results, 10)
        d.stop()
        (outcome,) = results[0].values()
        assert outcome.startswith("refused:") and "alert:" in outcome
        assert recorded(out) == []  # never ran
        # an admin allows it: the next event's command runs
        with store.write() as conn:
            conn.execute(
                schema.action_grant.insert().values(
                    account=job.owner, pattern=f"alert:{tmp_path}/*"
                )
            )
        store.set_alert("m", [command])  # now accepted
        with store.write() as conn:
            conn.execute(ended_run(job, now, ago=2, outcome="lost", error="lost: gone"))
        results.clear()
        d = AlertDispatcher(store, "me2", on_sent=lambda e, r: results.append(r))
        d.pass_once()
        assert wait_for(lambda: results, 10)
        d.stop()
        assert list(results[0].values()) == ["ok"]
        assert [e["kind"] for e, _env in recorded(out)] == ["lost"]
    finally:
        store.close()


def test_bad_alert_targets_are_refused_and_change_nothing(sqlite_url: str, tmp_path: Path) -> None:
    store = open_store(sqlite_url)
    try:
        store.submit("j", What("sql", "SELECT 1"), make_schedule("every", every="60"))
        for bad in (["command:relative/path"], ["command:/a/../b"], ["nope"], ["foo://x"]):
            with pytest.raises(InvalidInput, match="alert"):
                store.set_alert("j", bad)
        assert store.alert_of("j") is None
    finally:
        store.close()
    cmd = [*jobtui_command(), "--db", sqlite_url]
    r = subprocess.run(
        [*cmd, "change", "j", "--alert", "command:x"], capture_output=True, text=True
    )
    assert r.returncode == 2 and "invalid alert command" in r.stderr
    r = subprocess.run(
        [*cmd, "alerts", "set", "json://user:s3cret@127.0.0.1:9/x"],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0 and "s3cret" not in r.stdout, r.stdout
    r = subprocess.run([*cmd, "alerts", "--json"], capture_output=True, text=True)
    shown = json.loads(r.stdout)["default"]
    assert len(shown) == 1 and "s3cret" not in shown[0]
    # from a file, secrets off the command line; nothing given or unreadable: exit 2
    targets = tmp_path / "targets"
    targets.write_text("# on call\njson://u:t0ken@127.0.0.1:9/a\ncommand:/bin/true\n")
    r = subprocess.run(
        [*cmd, "alerts", "set", "--file", str(targets), "--json"], capture_output=True, text=True
    )
    shown = json.loads(r.stdout)["default"]
    assert len(shown) == 2 and "t0ken" not in r.stdout and shown[1] == "command:/bin/true"
    for bad in (["alerts", "set"], ["alerts", "set", "--file", str(tmp_path / "nope")]):
        r = subprocess.run([*cmd, *bad], capture_output=True, text=True)
        assert r.returncode == 2, r.stderr
    r = subprocess.run(
        [*cmd, "alerts", "test", "--target", "command:/bin/false", "--timeout", "5"],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 1 and "exit status 1" in r.stdout


# ---------------------------------------------------------------------- logs, sd_notify


def test_worker_json_log_lines(sqlite_url: str, tmp_path: Path) -> None:
    store = open_store(sqlite_url)
    try:
        store.submit(
            "b", What("sql", FAILING_SQL), make_schedule("every", every="1"), max_failures=2
        )
        store.submit("g", What("sql", "SELECT 1"), make_schedule("every", every="1"))
        w = Worker(
            sqlite_url, tmp_path, name="js", threads=1, poll=0.2, extra=["--log-format", "json"]
        )
        try:
            assert wait_for(lambda: '"runner.started"' in w.log(), 30)
            assert wait_for(lambda: '"job.broken"' in w.log() and '"run.ok"' in w.log(), 30)
        finally:
            assert w.terminate() == 0
    finally:
        store.close()
    lines = [json.loads(line) for line in w.log().splitlines() if line.strip()]
    assert all({"ts", "level", "event"} <= set(x) for x in lines), lines
    by = {x["event"]: x for x in lines}
    assert by["runner.started"]["level"] == "INFO" and by["runner.started"]["threads"] == 1
    assert by["run.failed"]["level"] == "ERROR" and by["run.failed"]["job"] == "b"
    assert "malformed JSON" in by["run.failed"]["error"]
    assert by["job.broken"]["level"] == "ERROR" and by["job.broken"]["failures"] == 2
    assert by["run.ok"]["outcome"] == "ok" and isinstance(by["run.ok"]["duration"], float)
    assert by["runner.stopped"]["runner"] == by["runner.started"]["runner"]


def test_text_log_has_the_same_fields(sqlite_url: str, tmp_path: Path) -> None:
    store = open_store(sqlite_url)
    try:
        store.submit("g", What("sql", "SELECT 1"), make_schedule("every", every="1"))
        w = Worker(sqlite_url, tmp_path, name="tx", threads=1, poll=0.2)
        try:
            assert wait_for(lambda: " run.ok " in w.log(), 30)
        finally:
            assert w.terminate() == 0
    finally:
        store.close()
    (line,) = [x for x in w.log().splitlines() if " run.ok " in x][:1]
    ts, level, event, *pairs = line.split(" ")
    fields = dict(p.split("=", 1) for p in pairs)
    assert level == "INFO" and event == "run.ok" and ts.endswith("Z")
    required = {"job", "job_id", "slot", "outcome", "duration"}
    # manual and skipped (slots coalesced before the worker started) only when set
    assert required <= set(fields) <= required | {"manual", "skipped"}, fields
    assert fields["outcome"] == "ok" and float(fields["duration"]) >= 0


def test_sd_notify_ready_watchdog_stopping(sqlite_url: str, tmp_path: Path) -> None:
    path = str(tmp_path / "notify.sock")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(path)
    sock.settimeout(20)
    env = dict(os.environ, NOTIFY_SOCKET=path, WATCHDOG_USEC="1000000")
    proc = subprocess.Popen(
        [*jobtui_command(), "--db", sqlite_url, "worker", "--threads", "1", "--name", "sd"],
        stderr=subprocess.PIPE,
        env=env,
        start_new_session=True,
    )
    got: list[str] = []
    try:
        while "READY=1" not in got:
            got += sock.recv(4096).decode().split("\n")
        watchdogs = 0
        while watchdogs < 2:
            msg = sock.recv(4096).decode()
            watchdogs += msg == "WATCHDOG=1"
        proc.terminate()
        while "STOPPING=1" not in got:
            got += sock.recv(4096).decode().split("\n")
    finally:
        if proc.poll() is None:
            proc.terminate()
        _out, err = proc.communicate(timeout=30)
        sock.close()
    assert proc.returncode == 0, err
    assert any(x.startswith("STATUS=1 thread(s) on") for x in got)


def test_sd_notify_without_socket_does_nothing() -> None:
    from jobtui.core.sdnotify import Notifier

    n = Notifier(None)
    assert n.ready() is False and n.watchdog_interval() is None
    assert Notifier("/nonexistent/sock").ready() is False
    uniq = uuid.uuid4().hex[:8]
    abstract = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    abstract.bind(f"\0jobtui-test-{uniq}")
    try:
        assert Notifier(f"@jobtui-test-{uniq}", 2_000_000).watchdog()
        assert abstract.recv(100) == b"WATCHDOG=1"
        assert Notifier(f"@jobtui-test-{uniq}", 2_000_000).watchdog_interval() == 1.0
    finally:
        abstract.close()


def test_lost_run_is_logged_taken_over_and_alerted_once(sqlite_url: str, tmp_path: Path) -> None:
    command, out = recorder(tmp_path)
    store = open_store(sqlite_url)
    slow = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT max(x) FROM c"
    try:
        store.submit("long", What("sql", slow), make_schedule("every", every="3600"))
        store.set_alert("long", [command])
        a = Worker(sqlite_url, tmp_path, name="a", threads=1, poll=0.2, heartbeat_timeout=2)
        assert wait_for(lambda: store.get("long").running, 30), a.log()
        b = Worker(sqlite_url, tmp_path, name="b", threads=1, poll=0.2, heartbeat_timeout=2)
        try:
            assert wait_for(b.started, 30)
            a.kill9()
            assert wait_for(lambda: store.runs("long", outcome="lost"), 30), b.log()
            assert wait_for(lambda: recorded(out), 15), b.log()
            time.sleep(2.5)  # more passes: nothing sent twice
        finally:
            assert b.terminate() == 0, b.log()
    finally:
        store.close()
    ((lost, _env),) = recorded(out)
    assert lost["kind"] == "lost" and lost["job"] == "long" and "lost" in lost["error"]
    log = b.log()
    assert " WARNING run.lost " in log and f"run_id={lost['run_id']}" in log, log
    assert " WARNING lease.taken_over job=long " in log, log
    assert " WARNING runner.reaped " in log, log


def test_init_adds_the_alert_tables_column_and_index_to_an_older_database(
    sqlite_url: str,
) -> None:
    store = open_store(sqlite_url)
    store.submit("old", What("sql", "SELECT 1"), make_schedule("every", every="60"))
    with store.write() as conn:  # as a database of the previous version was
        conn.exec_driver_sql("DROP INDEX ix_jobtui_run_outcome_finished")
        conn.exec_driver_sql("DROP TABLE jobtui_alert")
        conn.exec_driver_sql("DROP TABLE jobtui_setting")
        conn.exec_driver_sql("ALTER TABLE jobtui_job DROP COLUMN alert")
    store.close()
    assert subprocess.run([*jobtui_command(), "--db", sqlite_url, "init"]).returncode == 0
    store = open_store(sqlite_url)
    try:
        assert store.alert_of("old") is None
        store.set_alert("old", ["command:/bin/true"])
        assert store.alert_default() == []
        with store.read() as conn:
            names = {
                r[0]
                for r in conn.exec_driver_sql("SELECT name FROM sqlite_master WHERE type = 'index'")
            }
        assert "ix_jobtui_run_outcome_finished" in names
    finally:
        store.close()
