"""Shared helpers for the benchmark scripts: the machine, percentiles, the ledger, tables.

The benchmarks talk to a MariaDB/MySQL server given by ``--server`` (a URL
without a database; default ``$JOBTUI_BENCH_MYSQL``, else
``mysql+pymysql://root@127.0.0.1:3306``). They work in one dedicated database,
``jobtui_bench``, which they create and drop themselves.
"""

from __future__ import annotations

import math
import os
import platform
import subprocess
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # run as `python bench/x.py` from anywhere
    sys.path.insert(0, str(REPO))

from jobtui.core.db import mask_url, parse_url  # noqa: E402

DEFAULT_SERVER = "mysql+pymysql://root@127.0.0.1:3306"
BENCH_DB = "jobtui_bench"  # the scripts' --database sets it (the smoke tests use their own)


def use_database(name: str) -> None:
    """Work in database ``name`` instead of jobtui_bench (it is created and dropped)."""
    from jobtui.core.model import check_identifier

    global BENCH_DB
    BENCH_DB = check_identifier(name, "database name")


def server_url(given: str | None) -> str:
    """The server URL (no database part) the benchmark uses."""
    url = given or os.environ.get("JOBTUI_BENCH_MYSQL") or os.environ.get("JOBTUI_TEST_MYSQL")
    url = (url or DEFAULT_SERVER).rstrip("/")
    parsed = parse_url(url + "/" + BENCH_DB)
    if parsed.get_backend_name() not in ("mysql", "mariadb"):
        raise SystemExit(f"--server must be a MySQL/MariaDB URL, got {mask_url(url)}")
    return url


def db_url(server: str, database: str | None = None) -> str:
    return f"{server}/{database or BENCH_DB}"


def admin_connect(server: str, database: str | None = None, **kw: Any) -> Any:
    """A raw autocommit PyMySQL connection (session time zone UTC)."""
    import pymysql

    url = parse_url(server + "/" + (database or BENCH_DB))
    query = dict(url.query)
    extra: dict[str, Any] = {}
    if "read_default_file" in query:
        extra["read_default_file"] = os.path.expanduser(str(query["read_default_file"]))
    return pymysql.connect(
        host=url.host or "127.0.0.1",
        port=url.port or 3306,
        user=url.username or "root",
        password=url.password or "",
        database=database,
        autocommit=True,
        init_command="SET time_zone = '+00:00'",
        **extra,
        **kw,
    )


def recreate_database(server: str, database: str | None = None) -> None:
    database = database or BENCH_DB
    conn = admin_connect(server)
    with conn.cursor() as cur:
        cur.execute(f"DROP DATABASE IF EXISTS `{database}`")
        cur.execute(f"CREATE DATABASE `{database}`")
    conn.close()


def drop_database(server: str, database: str | None = None) -> None:
    database = database or BENCH_DB
    conn = admin_connect(server)
    with conn.cursor() as cur:
        cur.execute(f"DROP DATABASE IF EXISTS `{database}`")
    conn.close()


# ---------------------------------------------------------------------- the machine


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def server_version(server: str) -> str:
    try:
        conn = admin_connect(server)
    except Exception as exc:  # the table still prints, with the reason
        return f"unreachable ({type(exc).__name__})"
    with conn.cursor() as cur:
        cur.execute("SELECT VERSION()")
        version = str(cur.fetchone()[0])
    conn.close()
    return version


def machine_lines(server: str | None = None) -> list[str]:
    """What the numbers were measured on: CPU, cores, OS, Python, database server, load."""
    lines = [
        f"machine: {cpu_model()}, {os.cpu_count()} cores, "
        f"{platform.system()} {platform.release()}, Python {platform.python_version()}",
    ]
    if server is not None:
        lines.append(f"database: MariaDB/MySQL {server_version(server)} at {mask_url(server)}")
    try:
        load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
        lines.append(f"load average at start: {load}")
    except OSError:
        pass
    lines.append(f"date: {datetime.now(UTC).strftime('%Y-%m-%d %H:%M:%S')} UTC")
    return lines


def git_revision() -> str:
    try:
        out = subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
        revision = out.stdout.strip() or "unknown"
        dirty = subprocess.run(
            ["git", "-C", str(REPO), "status", "--porcelain", "--", "jobtui"],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return f"{revision} (with uncommitted changes in jobtui/)" if dirty else revision


# ---------------------------------------------------------------------- statistics


def percentile(values: Sequence[float], p: float) -> float:
    """The nearest-rank ``p``-th percentile (p in 0..100); NaN for no values."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


@dataclass(frozen=True)
class Spread:
    """p50/p99/max of a set of values (seconds)."""

    n: int
    p50: float
    p99: float
    max: float

    @classmethod
    def of(cls, values: Sequence[float]) -> Spread:
        return cls(
            n=len(values),
            p50=percentile(values, 50),
            p99=percentile(values, 99),
            max=max(values) if values else math.nan,
        )


def ms(seconds: float) -> str:
    if seconds is None or (isinstance(seconds, float) and math.isnan(seconds)):
        return "-"
    return f"{seconds * 1000:.1f}"


# ---------------------------------------------------------------------- CPU


class Proc:
    """A process whose CPU time we read: psutil when installed, else Linux's /proc."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        try:
            import psutil

            self._ps: Any = psutil.Process(pid)
        except ImportError:
            self._ps = None

    def cpu_seconds(self) -> float:
        """User + system CPU seconds (and those of reaped children); NaN once it is gone."""
        try:
            if self._ps is not None:
                t = self._ps.cpu_times()
                return float(t.user + t.system + t.children_user + t.children_system)
            fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
            ticks = sum(int(x) for x in fields[11:15])  # utime stime cutime cstime
            return ticks / os.sysconf("SC_CLK_TCK")
        except Exception:  # the process ended: its time is gone with it
            return math.nan


def mariadb_process(conn: Any = None) -> Proc | None:
    """The local mariadbd/mysqld process, or None when it is not on this host.

    With ``conn`` (a PyMySQL connection), the server that connection talks to: its
    ``@@pid_file`` names its process, so a benchmark run while other servers run on
    this host (a Galera cluster's nodes, a second instance) meters the right one.
    Without it, or when the pid file is not readable here, the first found."""
    if conn is not None:
        try:
            with conn.cursor() as cur:
                cur.execute("SELECT @@pid_file")
                pid = int(Path(str(cur.fetchone()[0])).read_text().split()[0])
            if (Path("/proc") / str(pid) / "comm").read_text().strip() in ("mariadbd", "mysqld"):
                return Proc(pid)
        except (OSError, ValueError, IndexError, TypeError):
            pass  # not on this host, or not readable: the first found
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            name = (entry / "comm").read_text().strip()
        except OSError:
            continue
        if name in ("mariadbd", "mysqld"):
            return Proc(int(entry.name))
    return None


def thread_cpu(pid: int) -> dict[int, float]:
    """CPU seconds (user + system) of each thread of process ``pid`` now (Linux /proc)."""
    out: dict[int, float] = {}
    tick = os.sysconf("SC_CLK_TCK")
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return out
    for task in tasks:
        try:
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # the thread ended
        out[int(task.name)] = (int(fields[11]) + int(fields[12])) / tick
    return out


class ConnectionCpuMeter:
    """CPU seconds the server spent in the threads of one database's connections.

    MariaDB names the OS thread of each connection (``information_schema.PROCESSLIST.TID``,
    one thread per connection): summing those threads' CPU leaves out what other clients
    of a shared server cost, which the whole process's figure includes. It also leaves
    out the server's background threads (InnoDB's log writes and purge), for every
    system alike. NaN when the server is not local or has no TID column (MySQL).
    """

    def __init__(self, conn: Any, database: str, server: Proc | None) -> None:
        self.conn = conn
        self.database = database
        self.server = server
        self.begin: dict[int, float] = {}
        self.used = math.nan

    def _tids(self) -> set[int] | None:
        try:
            with self.conn.cursor() as cur:
                cur.execute(
                    "SELECT TID FROM information_schema.PROCESSLIST "
                    "WHERE DB = %s AND ID <> CONNECTION_ID()",
                    (self.database,),
                )
                return {int(row[0]) for row in cur.fetchall() if row[0]}
        except Exception:  # MySQL has no TID column
            return None

    def start(self) -> None:
        if self.server is not None:
            self.begin = thread_cpu(self.server.pid)

    def stop(self) -> float:
        tids = self._tids() if self.server is not None else None
        if tids is None or self.server is None:
            return math.nan
        end = thread_cpu(self.server.pid)
        # A thread that did not exist at the start began with none (a new connection).
        self.used = sum(end[t] - self.begin.get(t, 0.0) for t in tids if t in end)
        return self.used


def server_noise_line(seconds: float = 3.0) -> str:
    """mariadbd's CPU use while this benchmark does nothing: the noise floor of its figures."""
    proc = mariadb_process()
    if proc is None:
        return "mariadbd: not on this host (server CPU is not measured)"
    before = proc.cpu_seconds()
    time.sleep(seconds)
    used = proc.cpu_seconds() - before
    return (
        f"mariadbd CPU before the runs, while this benchmark was idle: {used / seconds:.3f} s/s "
        "(other clients' load; included in every server CPU figure)"
    )


def cpu_seconds(proc: Proc | None) -> float:
    return math.nan if proc is None else proc.cpu_seconds()


def rss_mb() -> float:
    """This process's resident memory now (MiB)."""
    try:
        import psutil

        return float(psutil.Process().memory_info().rss) / 2**20
    except ImportError:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return math.nan


class CpuMeter:
    """CPU seconds used by a set of processes between ``start()`` and ``stop()``."""

    def __init__(self, procs: Iterable[Any]) -> None:
        self.procs = [p for p in procs if p is not None]
        self.begin: list[float] = []
        self.used = math.nan

    def start(self) -> None:
        self.begin = [cpu_seconds(p) for p in self.procs]

    def stop(self) -> float:
        end = [cpu_seconds(p) for p in self.procs]
        self.used = sum(e - b for b, e in zip(self.begin, end, strict=True)) if self.procs else 0.0
        return self.used


# ---------------------------------------------------------------------- server status


def global_status(conn: Any, like: str = "%") -> dict[str, int]:
    with conn.cursor() as cur:
        cur.execute("SHOW GLOBAL STATUS LIKE %s", (like,))
        out = {}
        for name, value in cur.fetchall():
            try:
                out[str(name)] = int(value)
            except (TypeError, ValueError):
                continue
    return out


def status_delta(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    return {k: after[k] - before.get(k, 0) for k in after if after[k] - before.get(k, 0)}


# ---------------------------------------------------------------------- the ledger

LEDGER_DDL = (
    "CREATE TABLE IF NOT EXISTS ledger ("
    " id BIGINT AUTO_INCREMENT PRIMARY KEY,"
    " system VARCHAR(16) NOT NULL,"
    " job INT NOT NULL,"
    " slot DATETIME(6) NULL,"
    " fired DATETIME(6) NOT NULL,"
    " KEY ix_ledger_job (system, job, fired)"
    ") ENGINE=InnoDB"
)


def create_ledger(conn: Any) -> None:
    with conn.cursor() as cur:
        cur.execute(LEDGER_DDL)


def _since(since: datetime | None) -> datetime:
    return datetime(1970, 1, 1) if since is None else since.astimezone(UTC).replace(tzinfo=None)


def ledger_rows(
    conn: Any, system: str, since: datetime | None = None
) -> list[tuple[int, datetime]]:
    """(job, fired) of every firing the system recorded (at or after ``since``), naive UTC."""
    with conn.cursor() as cur:
        cur.execute(
            "SELECT job, fired FROM ledger WHERE system = %s AND fired >= %s ORDER BY job, fired",
            (system, _since(since)),
        )
        return [(int(j), f) for j, f in cur.fetchall()]


def ledger_count(conn: Any, system: str, since: datetime | None = None) -> int:
    with conn.cursor() as cur:
        cur.execute(
            "SELECT COUNT(*) FROM ledger WHERE system = %s AND fired >= %s",
            (system, _since(since)),
        )
        return int(cur.fetchone()[0])


def floor_second(value: datetime) -> datetime:
    return value.replace(microsecond=0)


@dataclass
class LedgerReport:
    """What one system did, measured from the ledger alone (the same way for every system).

    Every job fires on the whole-second grid from ``start`` for ``seconds``
    slots. A firing's nominal slot is the start of the whole second it landed
    in; its lateness is ``fired - slot``. A firing that lands in a second
    another firing of the same job already took was at least a second late
    (it ``slipped``); a (job, second) that nobody took was ``missed``.
    """

    expected: int
    done: int
    in_window: int
    slipped: int
    missed: int
    lateness: Spread


def analyse_ledger(
    rows: Sequence[tuple[int, datetime]], jobs: int, start: datetime, seconds: int
) -> LedgerReport:
    start = start.astimezone(UTC).replace(tzinfo=None)
    end = start + timedelta(seconds=seconds)
    seen: set[tuple[int, datetime]] = set()
    late: list[float] = []
    slipped = 0
    in_window = 0
    for job, fired in rows:
        slot = floor_second(fired)
        late.append((fired - slot).total_seconds())
        if (job, slot) in seen:
            slipped += 1
        seen.add((job, slot))
        if start <= slot < end:
            in_window += 1
    covered = sum(1 for _job, slot in seen if start <= slot < end)
    expected = jobs * seconds
    return LedgerReport(
        expected=expected,
        done=len(rows),
        in_window=in_window,
        slipped=slipped,
        missed=expected - covered,
        lateness=Spread.of(late),
    )


# ---------------------------------------------------------------------- output


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A plain-text table, numbers right-aligned (also valid Markdown)."""
    cells = [[str(h) for h in headers]] + [[_cell(v) for v in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]

    def line(row: Sequence[str]) -> str:
        parts = []
        for i, value in enumerate(row):
            numeric = _is_number(value)
            parts.append(value.rjust(widths[i]) if numeric else value.ljust(widths[i]))
        return "| " + " | ".join(parts) + " |"

    out = [line(cells[0]), "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    out += [line(r) for r in cells[1:]]
    return "\n".join(out)


def _is_number(text: str) -> bool:
    try:
        float(text.replace(",", ""))
    except ValueError:
        return False
    return True


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        if math.isnan(value):
            return "-"
        return f"{value:.3g}" if abs(value) < 100 else f"{value:.0f}"
    return str(value)


def log(message: str) -> None:
    """Progress on stderr (the table goes to stdout)."""
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def next_whole_second(after: float) -> datetime:
    """The first whole second at least ``after`` seconds from now (aware UTC)."""
    return datetime.fromtimestamp(math.ceil(time.time() + after), UTC)


def sleep_until(when: datetime) -> None:
    delay = when.timestamp() - time.time()
    if delay > 0:
        time.sleep(delay)
