"""A 3-node MariaDB Galera cluster on loopback for the tests (issue 25).

The ``galera_cluster`` fixture (session-scoped) starts one cluster with
tests/support/galera-cluster.sh (``JOBTUI_GALERA_SCRIPT`` names another) on free ports,
in a temporary directory, and stops it at the end of the session. Outside CI a
machine without galera-4 (libgalera_smm.so), mariadbd or rsync skips the
``galera`` tests with the reason; with ``CI`` set they fail instead (``.ci/run``
installs what they need), as does a cluster that does not start.

``galera_db``: a fresh database on the cluster (created on node 1, replicated),
dropped afterwards; its ``urls`` name it on each node.
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

IN_CI = bool(os.environ.get("CI"))
SCRIPT_CANDIDATES = [
    os.environ.get("JOBTUI_GALERA_SCRIPT", ""),
    str(Path(__file__).with_name("galera-cluster.sh")),
    "/work/shared/tools/galera-cluster.sh",
]
PROVIDERS = [
    "/usr/lib/galera/libgalera_smm.so",
    "/usr/lib/galera-4/libgalera_smm.so",
    "/usr/lib64/galera-4/libgalera_smm.so",
    "/usr/lib64/galera/libgalera_smm.so",
    "/usr/lib/libgalera_smm.so",
]


def _script() -> str | None:
    for path in SCRIPT_CANDIDATES:
        if path and os.path.isfile(path):
            return path
    return None


def missing() -> str | None:
    """Why a cluster cannot be started here, or None."""
    if _script() is None:
        return "galera-cluster.sh not found (set JOBTUI_GALERA_SCRIPT)"
    if not any(os.path.exists(p) for p in PROVIDERS) and not os.environ.get("GALERA_PROVIDER"):
        return "galera-4 is not installed (no libgalera_smm.so)"
    for tool in ("mariadbd", "mariadb-install-db", "mariadb", "rsync"):
        if shutil.which(tool) is None and not os.path.exists(f"/usr/sbin/{tool}"):
            return f"{tool} is not installed"
    return None


def _free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _free_bases() -> dict[str, str]:
    """Four port bases (SQL, gcomm, IST, SST) whose ports +1..+3 are all free."""
    rng = secrets.SystemRandom()
    for _ in range(200):
        base = rng.randrange(20000, 40000, 40)
        ports = [base + off + n for off in (0, 10, 20, 30) for n in (1, 2, 3)]
        if all(_free(p) for p in ports):
            return {
                "GALERA_SQL_BASE": str(base),
                "GALERA_GCOMM_BASE": str(base + 10),
                "GALERA_IST_BASE": str(base + 20),
                "GALERA_SST_BASE": str(base + 30),
            }
    raise RuntimeError("no free ports for a Galera test cluster")


@dataclass
class Cluster:
    dir: str
    env: dict[str, str]
    urls: list[str]  # one per node, naming the script's database
    script: str

    def _run(self, *args: str, timeout: float = 240) -> str:
        res = subprocess.run(
            ["bash", self.script, *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if res.returncode != 0:
            raise RuntimeError(f"galera-cluster.sh {' '.join(args)} failed: {res.stderr[-2000:]}")
        return res.stdout

    def server(self, n: int) -> str:
        """Node ``n``'s URL without a database (1-based)."""
        return self.urls[n - 1].rsplit("/", 1)[0]

    def port(self, n: int) -> int:
        return int(self.server(n).rsplit(":", 1)[1])

    def kill_node(self, n: int) -> None:
        self._run("node-kill", self.dir, str(n))

    def start_node(self, n: int) -> None:
        self._run("node-start", self.dir, str(n))

    def status(self) -> str:
        return self._run("status", self.dir)

    def stop(self) -> None:
        self._run("stop", self.dir, timeout=200)

    def admin(self, n: int, database: str | None = None):  # type: ignore[no-untyped-def]
        import pymysql

        return pymysql.connect(
            host="127.0.0.1",
            port=self.port(n),
            user="root",
            database=database,
            autocommit=True,
            connect_timeout=5,
        )


def require_galera() -> None:
    reason = missing()
    if reason:
        if IN_CI:
            pytest.fail(f"CI is set, so the Galera tests must run: {reason}")
        pytest.skip(reason)


_started: list[Cluster] = []
_failed: list[str] = []


def start_cluster() -> Cluster:
    script = _script()
    assert script is not None
    # Short (Unix socket paths) and enterable by the mysql user the nodes run as.
    base = tempfile.mkdtemp(prefix="jg", dir="/tmp")
    os.chmod(base, 0o755)
    env = {**os.environ, **_free_bases(), "GALERA_DB": "jobtui"}
    cluster = Cluster(dir=base, env=env, urls=[], script=script)
    try:
        out = cluster._run("start", base)
    except Exception:
        try:
            cluster.stop()
        finally:
            shutil.rmtree(base, ignore_errors=True)
        raise
    cluster.urls = [line for line in out.split() if line.startswith("mysql+pymysql://")]
    assert len(cluster.urls) == 3, out
    return cluster


@pytest.fixture(scope="session")
def galera_cluster() -> Iterator[Cluster]:
    require_galera()
    if _failed:
        pytest.fail(_failed[0]) if IN_CI else pytest.skip(_failed[0])
    try:
        try:
            cluster = start_cluster()
        except Exception:  # once more, on other ports (one taken meanwhile, a slow node)
            cluster = start_cluster()
    except Exception as exc:
        _failed.append(f"the Galera test cluster did not start: {exc}")
        if IN_CI:
            pytest.fail(_failed[0])
        pytest.skip(_failed[0])
    try:
        yield cluster
    finally:
        try:
            cluster.stop()
        finally:
            shutil.rmtree(cluster.dir, ignore_errors=True)


@dataclass
class GaleraDB:
    cluster: Cluster
    name: str

    @property
    def urls(self) -> list[str]:
        return [f"{self.cluster.server(n)}/{self.name}" for n in (1, 2, 3)]


@pytest.fixture
def galera_db(galera_cluster: Cluster) -> Iterator[GaleraDB]:
    """A brand-new database on the cluster (made on node 1), dropped afterwards."""
    name = f"jobtui_t_{secrets.token_hex(6)}"
    conn = galera_cluster.admin(1)
    with conn.cursor() as cur:
        cur.execute(f"CREATE DATABASE `{name}`")
    conn.close()
    try:
        yield GaleraDB(galera_cluster, name)
    finally:
        for n in (1, 2, 3):
            try:
                conn = galera_cluster.admin(n)
            except Exception:
                continue  # a node a test left down: the next one drops it
            with conn.cursor() as cur:
                cur.execute(f"DROP DATABASE IF EXISTS `{name}`")
            conn.close()
            break
