"""Prometheus metrics of one process's runner pool (``--metrics-port``).

A ``Metrics`` holds a registry of its own (never prometheus_client's global one)
with three sources:

- **the pool's reports**, as its observer (``RunnerPool(observer=...)``,
  ``runresult.PoolObserver``): runs by outcome, run duration and lateness, claim
  and record latency; optionally runs by job (``per_job``);
- **the pool itself**, read at scrape (``watch``): its threads, and how many are busy;
- **the store**, read at scrape at most once per ``store_interval`` seconds (one
  GROUP BY on the job table and the runner table's rows): jobs by status, BROKEN
  jobs, live runners. A scrape while the database is unreachable says so in
  ``jobtui_store_up`` instead of failing.

Label sets are bounded: outcomes and statuses are fixed lists; job names appear
only with ``per_job``. docs/operations.md ("Metrics") lists every metric.
"""

from __future__ import annotations

import errno
import logging
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from prometheus_client import CollectorRegistry, Counter, Histogram, start_http_server
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from jobtui.core.errors import InvalidInput
from jobtui.core.health import FOREGROUND_PREFIX
from jobtui.core.model import Outcome, Status
from jobtui.core.runner.config import DEFAULTS
from jobtui.core.runner.runresult import RunResult
from jobtui.core.store import JobStore

log = logging.getLogger("jobtui.metrics")

DEFAULT_ADDR = "127.0.0.1"
STORE_INTERVAL = 5.0  # seconds: the store is read at most this often, however many scrapes
HEARTBEAT_TIMEOUT = DEFAULTS.heartbeat_timeout  # a runner silent this long is not counted live

OUTCOMES = tuple(o.value for o in Outcome if o is not Outcome.RUNNING)
DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600)
LATENESS_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300)
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)


@dataclass(frozen=True)
class MetricsOptions:
    """Where to serve the metrics, and whether runs are also counted by job."""

    port: int
    addr: str = DEFAULT_ADDR
    per_job: bool = False


class PoolGauge(Protocol):
    """What the metrics read of a pool at scrape (``RunnerPool`` has it)."""

    threads: int
    running: bool

    def threads_busy(self) -> int: ...


@dataclass(frozen=True)
class _StoreReading:
    statuses: dict[str, int]
    live_runners: int


class Metrics:
    """One process's metrics: the pool observer and the collectors, in one registry."""

    def __init__(
        self,
        store: JobStore,
        *,
        per_job: bool = False,
        store_interval: float = STORE_INTERVAL,
        heartbeat_timeout: float = HEARTBEAT_TIMEOUT,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        reg = self.registry
        self.runs = Counter(
            "jobtui_runs", "Runs this process executed, by outcome", ["outcome"], registry=reg
        )
        for outcome in OUTCOMES:
            self.runs.labels(outcome)  # every outcome shows, at 0 until it happens
        self.job_runs = (
            Counter(
                "jobtui_job_runs",
                "Runs this process executed, by job and outcome (--metrics-per-job)",
                ["owner", "job", "outcome"],
                registry=reg,
            )
            if per_job
            else None
        )
        self.duration = Histogram(
            "jobtui_run_duration_seconds",
            "How long runs executed (start to end)",
            buckets=DURATION_BUCKETS,
            registry=reg,
        )
        self.lateness = Histogram(
            "jobtui_run_lateness_seconds",
            "How late scheduled runs started after their slot (run-now requests not counted)",
            buckets=LATENESS_BUCKETS,
            registry=reg,
        )
        self.claim = Histogram(
            "jobtui_claim_duration_seconds",
            "How long claiming a batch of due jobs took",
            buckets=LATENCY_BUCKETS,
            registry=reg,
        )
        self.record = Histogram(
            "jobtui_record_duration_seconds",
            "How long recording a batch of outcomes took, retries included",
            buckets=LATENCY_BUCKETS,
            registry=reg,
        )
        self._pool: PoolGauge | None = None
        reg.register(_PoolCollector(lambda: self._pool))
        reg.register(_StoreCollector(store, store_interval, heartbeat_timeout, clock))
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self.listening: tuple[str, int] | None = None  # (address, port) once serving

    # ------------------------------------------------------------------ the pool's observer

    def claimed(self, seconds: float, runs: int) -> None:
        self.claim.observe(max(0.0, seconds))

    def recorded(self, seconds: float, runs: int) -> None:
        self.record.observe(max(0.0, seconds))

    def finished(self, result: RunResult) -> None:
        outcome = result.outcome.value
        self.runs.labels(outcome).inc()
        if self.job_runs is not None:
            self.job_runs.labels(result.owner, result.job, outcome).inc()
        if result.outcome in (Outcome.OK, Outcome.FAILED, Outcome.ABORTED):
            self.duration.observe(max(0.0, result.duration))
        if not result.manual and result.outcome is not Outcome.SKIPPED:
            self.lateness.observe(result.lateness)

    def watch(self, pool: PoolGauge | None) -> None:
        """The pool whose threads the scrapes read (None: no pool hosted now)."""
        self._pool = pool

    # ------------------------------------------------------------------ serving

    def serve(self, port: int, addr: str = DEFAULT_ADDR) -> int:
        """Serve /metrics over HTTP on ``addr:port`` in a daemon thread; return the port
        (``port`` 0: a free one). InvalidInput when it cannot listen there."""
        try:
            self._server, self._thread = start_http_server(port, addr, registry=self.registry)
        except (socket.gaierror, UnicodeError) as exc:
            raise InvalidInput(
                f"invalid --metrics-addr {addr!r}: not an IP address or a name that resolves "
                f"({exc}); expected e.g. 127.0.0.1, ::1 or 0.0.0.0"
            ) from None
        except OSError as exc:
            raise InvalidInput(_listen_problem(addr, port, exc)) from None
        self.listening = (addr, int(self._server.server_port))
        return self.listening[1]

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
            self.listening = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None


def _listen_problem(addr: str, port: int, exc: OSError) -> str:
    where = f"{addr}:{port}"
    if exc.errno == errno.EADDRINUSE:
        return (
            f"--metrics-port {port}: cannot listen on {where}: the port is in use; choose "
            "another port (1-65535, or 0 for any free one)"
        )
    if exc.errno == errno.EACCES:
        return (
            f"--metrics-port {port}: cannot listen on {where}: permission denied (ports "
            "below 1024 need privileges); choose a port from 1024 to 65535"
        )
    if exc.errno == errno.EADDRNOTAVAIL:
        return (
            f"invalid --metrics-addr {addr!r}: not an address of this host; expected one of "
            "its addresses, e.g. 127.0.0.1 or 0.0.0.0"
        )
    return f"cannot serve metrics on {where}: {exc.strerror or exc}"


class _PoolCollector(Collector):
    """The hosted pool's threads, read at scrape."""

    def __init__(self, pool: Callable[[], PoolGauge | None]) -> None:
        self._pool = pool

    def describe(self) -> Iterator[Metric]:
        return self._families(None)

    def collect(self) -> Iterator[Metric]:
        return self._families(self._pool())

    @staticmethod
    def _families(pool: PoolGauge | None) -> Iterator[Metric]:
        running = pool is not None and pool.running
        threads = GaugeMetricFamily("jobtui_pool_threads", "Runner threads of this process")
        busy = GaugeMetricFamily(
            "jobtui_pool_threads_busy", "Runner threads claiming, executing or recording now"
        )
        if pool is not None:
            threads.add_metric([], pool.threads if running else 0)
            busy.add_metric([], pool.threads_busy() if running else 0)
        yield threads
        yield busy


class _StoreCollector(Collector):
    """Jobs by status and live runners, from the database: read at scrape, at most once
    per ``interval`` seconds (a scrape in between gets the last reading)."""

    def __init__(
        self,
        store: JobStore,
        interval: float,
        heartbeat_timeout: float,
        clock: Callable[[], float],
    ) -> None:
        self._store = store
        self._interval = interval
        self._timeout = heartbeat_timeout
        self._clock = clock
        self._lock = threading.Lock()
        self._reading: _StoreReading | None = None
        self._read_at = float("-inf")
        self._up = False

    def describe(self) -> Iterator[Metric]:
        return self._families(None, up=False)

    def collect(self) -> Iterator[Metric]:
        with self._lock:  # one reading at a time, however many scrapes come at once
            if self._clock() - self._read_at >= self._interval:
                self._read_at = self._clock()
                try:
                    self._reading = self._read()
                    self._up = True
                except Exception as exc:
                    self._up = False
                    log.warning("metrics: cannot read the job table: %s", exc)
            reading, up = self._reading, self._up
        return self._families(reading if up else None, up=up)

    def _read(self) -> _StoreReading:
        store = self._store
        statuses = store.counts_by_status(all_owners=store.sees_all)
        now = store.now()
        live = sum(  # as `runners --check` counts them (health.check)
            1
            for r in store.runners(poll=True)
            if r.alive(now, self._timeout)
            and not r.stopping
            and not r.name.startswith(FOREGROUND_PREFIX)
        )
        return _StoreReading(statuses, live)

    @staticmethod
    def _families(reading: _StoreReading | None, *, up: bool) -> Iterator[Metric]:
        store_up = GaugeMetricFamily(
            "jobtui_store_up", "Whether the last reading of the job table succeeded (1) or not"
        )
        store_up.add_metric([], 1 if up else 0)
        yield store_up
        jobs = GaugeMetricFamily("jobtui_jobs", "Jobs by status", labels=["status"])
        broken = GaugeMetricFamily("jobtui_jobs_broken", "Jobs that are BROKEN")
        runners = GaugeMetricFamily(
            "jobtui_runners_live",
            "Runner pools with a recent heartbeat, not stopping (as runners --check counts them)",
        )
        if reading is not None:
            for status in Status:
                jobs.add_metric([status.value], reading.statuses.get(status.value, 0))
            broken.add_metric([], reading.statuses.get(Status.BROKEN.value, 0))
            runners.add_metric([], reading.live_runners)
        yield jobs
        yield broken
        yield runners
