"""Prometheus metrics (``--metrics-port``): a real ``jobtui worker`` scraped over HTTP on
SQLite and MariaDB; the collectors in process; bad options exit 2."""

from __future__ import annotations

import re
import socket
import subprocess
import urllib.request
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import text
from support.procs import Console, Worker, jobtui_command, wait_for

from jobtui.core.errors import DatabaseUnavailable
from jobtui.core.metrics import Metrics
from jobtui.core.model import Outcome, What
from jobtui.core.runner.runresult import RunResult
from jobtui.core.schedules import make_schedule
from jobtui.core.store import open_store

FAILING_SQL = "UPDATE gone SET x = 1"  # the table is dropped after the submit: it fails


def scrape(port: int) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample at /metrics: (name, sorted labels) -> value."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
        text = resp.read().decode()
    samples = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return samples


def listening_port(worker: Worker) -> int | None:
    found = re.search(r" metrics\.listening .*port=(\d+)", worker.log())
    return int(found.group(1)) if found else None


def statuses(samples: dict[Any, float]) -> dict[str, float]:
    return {dict(k[1])["status"]: v for k, v in samples.items() if k[0] == "jobtui_jobs"}


def runs(samples: dict[Any, float], outcome: str) -> float:
    return samples.get(("jobtui_runs_total", (("outcome", outcome),)), 0.0)


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["sqlite", pytest.param("mariadb", marks=pytest.mark.mariadb)])
def test_worker_serves_metrics(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    url = request.getfixturevalue(f"{backend}_url")
    store = open_store(url)
    try:
        store.submit("tick", What("sql", "SELECT 1"), make_schedule("every", every="1"))
        with store.write() as conn:
            conn.execute(text("CREATE TABLE gone (x INT)"))
        store.submit("bad", What("sql", FAILING_SQL), make_schedule("every", every="1"))
        with store.write() as conn:
            conn.execute(text("DROP TABLE gone"))
        owner = store.owner
    finally:
        store.close()
    w = Worker(
        url,
        tmp_path,
        name="metrics",
        threads=2,
        extra=["--metrics-port", "0", "--metrics-per-job"],
    )
    try:
        port = wait_for(lambda: listening_port(w), 30)
        assert port, w.log()
        first = wait_for(
            lambda: (s := scrape(port)) and runs(s, "ok") >= 2 and runs(s, "failed") >= 1 and s,
            30,
        )
        assert first, w.log()
        later = wait_for(
            lambda: (s := scrape(port)) and runs(s, "ok") > runs(first, "ok") and s, 15
        )
        assert later, "the runs counter did not grow"
        # every outcome is there from the start; only these two happened
        for outcome in ("aborted", "skipped", "lost"):
            assert runs(later, outcome) == 0
        assert ("jobtui_runs_total", (("outcome", "running"),)) not in later
        per_job = {k: v for k, v in later.items() if k[0] == "jobtui_job_runs_total"}
        assert (
            per_job[
                ("jobtui_job_runs_total", (("job", "tick"), ("outcome", "ok"), ("owner", owner)))
            ]
            >= 2
        )
        assert (
            per_job[
                ("jobtui_job_runs_total", (("job", "bad"), ("outcome", "failed"), ("owner", owner)))
            ]
            >= 1
        )
        assert {dict(k[1])["job"] for k in per_job} == {"tick", "bad"}
        assert later[("jobtui_run_duration_seconds_count", ())] >= 3
        assert later[("jobtui_run_lateness_seconds_count", ())] >= 3
        assert later[("jobtui_claim_duration_seconds_count", ())] >= 2
        assert later[("jobtui_record_duration_seconds_count", ())] >= 2
        assert later[("jobtui_pool_threads", ())] == 2
        assert 0 <= later[("jobtui_pool_threads_busy", ())] <= 2
        assert later[("jobtui_store_up", ())] == 1
        assert later[("jobtui_runners_live", ())] == 1
        assert sum(statuses(later).values()) == 2
        # read at most every 5 s: the failing job shows as ERROR (or BROKEN) within that
        failing = wait_for(
            lambda: (s := scrape(port)) and statuses(s)["ERROR"] + statuses(s)["BROKEN"] == 1 and s,
            15,
        )
        assert failing, statuses(scrape(port))
        assert failing[("jobtui_jobs_broken", ())] == statuses(failing)["BROKEN"]
        assert w.terminate() == 0
    finally:
        w.cleanup()


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*jobtui_command(), *args], capture_output=True, text=True, timeout=60, check=False
    )


def test_port_in_use_exits_2(sqlite_url: str) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = _cli("--db", sqlite_url, "worker", "--metrics-port", str(port))
    assert done.returncode == 2
    (line,) = done.stderr.splitlines()
    assert f"--metrics-port {port}" in line and "in use" in line


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--metrics-port", "65536"], "expected a TCP port"),
        (["--metrics-port", "http"], "expected a TCP port"),
        (["--metrics-port", "0", "--metrics-addr", "no.such.host.invalid"], "--metrics-addr"),
        (["--metrics-addr", "0.0.0.0"], "needs --metrics-port"),
        (["--metrics-per-job"], "needs --metrics-port"),
    ],
)
def test_bad_metrics_options_exit_2(sqlite_url: str, args: list[str], said: str) -> None:
    done = _cli("--db", sqlite_url, "worker", *args)
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.splitlines()
    assert said in line


class _Pool:
    threads = 3
    running = True

    def threads_busy(self) -> int:
        return 2


def _result(outcome: Outcome, *, late: float = 0.5, manual: bool = False) -> RunResult:
    slot = datetime(2026, 1, 1, tzinfo=UTC)
    started = slot + timedelta(seconds=late)
    return RunResult(
        job="j",
        job_id=1,
        slot=slot,
        outcome=outcome,
        started=started,
        finished=started + timedelta(seconds=0.2),
        error=None,
        manual=manual,
        skipped=0,
        owner="o",
    )


def test_collectors_in_process(sqlite_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    store = open_store(sqlite_url)
    now = [0.0]
    try:
        store.submit("a", What("sql", "SELECT 1"), make_schedule("every", every="60"))
        metrics = Metrics(store, clock=lambda: now[0])
        reg = metrics.registry
        metrics.finished(_result(Outcome.OK))
        metrics.finished(_result(Outcome.FAILED, manual=True))  # run-now: no lateness
        metrics.claimed(0.01, 2)
        metrics.recorded(0.02, 2)
        assert reg.get_sample_value("jobtui_runs_total", {"outcome": "ok"}) == 1
        assert reg.get_sample_value("jobtui_runs_total", {"outcome": "failed"}) == 1
        assert reg.get_sample_value("jobtui_run_duration_seconds_count") == 2
        assert reg.get_sample_value("jobtui_run_lateness_seconds_count") == 1
        assert reg.get_sample_value("jobtui_run_lateness_seconds_sum") == pytest.approx(0.5)
        assert reg.get_sample_value("jobtui_job_runs_total", {"job": "j"}) is None  # opt-in
        assert reg.get_sample_value("jobtui_pool_threads") is None  # no pool watched
        metrics.watch(_Pool())
        assert reg.get_sample_value("jobtui_pool_threads_busy") == 2
        assert reg.get_sample_value("jobtui_jobs", {"status": "ENABLED"}) == 1
        # the store is read at most once per interval: a new job shows only after it
        store.submit("b", What("sql", "SELECT 1"), make_schedule("every", every="60"))
        assert reg.get_sample_value("jobtui_jobs", {"status": "ENABLED"}) == 1
        now[0] += 10
        assert reg.get_sample_value("jobtui_jobs", {"status": "ENABLED"}) == 2
        assert reg.get_sample_value("jobtui_store_up") == 1

        def unreachable(**_kw: Any) -> dict[str, int]:
            raise DatabaseUnavailable("database unavailable: gone")

        monkeypatch.setattr(store, "counts_by_status", unreachable)
        now[0] += 10  # the database is gone: the scrape says so, and still answers
        assert reg.get_sample_value("jobtui_store_up") == 0
        assert reg.get_sample_value("jobtui_jobs", {"status": "ENABLED"}) is None
        assert reg.get_sample_value("jobtui_runs_total", {"outcome": "ok"}) == 1
    finally:
        store.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.slow
def test_console_hosting_runners_serves_metrics(sqlite_url: str, tmp_path: Path) -> None:
    """``jobtui console --runners N --metrics-port P``: the hosted pool's runs are counted."""
    store = open_store(sqlite_url)
    try:
        store.submit("tick", What("sql", "SELECT 1"), make_schedule("every", every="1"))
    finally:
        store.close()
    port = _free_port()
    console = Console(
        ["--db", sqlite_url, "console", "--runners", "2", "--metrics-port", str(port)], tmp_path
    )
    try:
        console.wait_for_screen("tick")
        got = wait_for(lambda: (s := scrape(port)) and runs(s, "ok") >= 2 and s, 30)
        assert got, console.screen()
        assert got[("jobtui_pool_threads", ())] == 2
        # the database's gauges are read at most every 5 s: the first read may predate
        # the console's runner in the registry
        live = wait_for(lambda: scrape(port).get(("jobtui_runners_live", ())) == 1, 15)
        assert live, scrape(port)
    finally:
        console.cleanup()


class _Seen:
    """An observer that keeps what it is told, or fails on every call (``fail``)."""

    def __init__(self, *, fail: bool = False) -> None:
        self.fail = fail
        self.claims: list[int] = []
        self.records: list[int] = []
        self.results: list[RunResult] = []

    def claimed(self, seconds: float, runs: int) -> None:
        if self.fail:
            raise RuntimeError("observer down")
        self.claims.append(runs)

    def recorded(self, seconds: float, runs: int) -> None:
        if self.fail:
            raise RuntimeError("observer down")
        self.records.append(runs)

    def finished(self, result: RunResult) -> None:
        if self.fail:
            raise RuntimeError("observer down")
        self.results.append(result)


@pytest.mark.parametrize("fail", [False, True], ids=["observing", "failing-observer"])
def test_pool_tells_its_observer(sqlite_url: str, fail: bool) -> None:
    from jobtui.core.runner.pool import RunnerPool

    store = open_store(sqlite_url)
    seen = _Seen(fail=fail)
    pool = RunnerPool(store, threads=1, poll=0.1, name="observed", observer=seen)
    try:
        store.submit("tick", What("sql", "SELECT 1"), make_schedule("every", every="0.2"))
        pool.start()
        assert wait_for(lambda: pool.runs_done >= 3, 20)  # a failing observer stops nothing
        if not fail:
            assert wait_for(lambda: len(seen.results) >= 3, 5)
            assert {r.job for r in seen.results} == {"tick"}
            assert {r.owner for r in seen.results} == {store.owner}
            assert {r.outcome for r in seen.results} == {Outcome.OK}
            assert sum(seen.records) >= 3 and sum(seen.claims) >= 3
    finally:
        pool.stop(grace=2)
        store.close()
    assert pool.threads_busy() == 0
