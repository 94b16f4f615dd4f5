"""A private, throw-away MariaDB server for tests that must stop and start one.

The shared test server (conftest.MYSQL_SERVER) is never restarted: other
tests use it. This one gets its own data directory, port and socket, small
InnoDB sizes so that it installs and starts in seconds, and is stopped and
deleted afterwards.
"""

from __future__ import annotations

import getpass
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pymysql

SMALL = ["--innodb-log-file-size=4M", "--innodb-buffer-pool-size=16M"]


def _binary(name: str, *dirs: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    for d in dirs:
        path = Path(d) / name
        if path.exists():
            return str(path)
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ServerUnavailable(Exception):
    """This machine cannot run a private MariaDB server (the reason says why)."""


class PrivateMariaDB:
    """``mariadbd`` on 127.0.0.1:<free port> with its own data directory."""

    def __init__(self) -> None:
        self.install_db = _binary("mariadb-install-db", "/usr/bin", "/usr/local/bin")
        self.mariadbd = _binary("mariadbd", "/usr/sbin", "/usr/local/sbin", "/usr/libexec")
        if not (self.install_db and self.mariadbd):
            raise ServerUnavailable("mariadb-install-db or mariadbd is not installed")
        # A short path: a Unix socket path must stay under about 100 bytes.
        self.base = Path(tempfile.mkdtemp(prefix="jobtui-mdb-"))
        self.datadir = self.base / "data"
        self.port = _free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        user = getpass.getuser()
        self._user = [f"--user={user}"]
        out = subprocess.run(
            [
                self.install_db,
                "--no-defaults",  # not the system's my.cnf (its user, paths and logs)
                f"--datadir={self.datadir}",
                "--auth-root-authentication-method=normal",
                "--skip-test-db",
                *self._user,
                *SMALL,
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        if out.returncode != 0:
            self.remove()
            raise ServerUnavailable(f"mariadb-install-db failed: {out.stdout[-1500:]}{out.stderr}")

    @property
    def server_url(self) -> str:
        return f"mysql+pymysql://root@127.0.0.1:{self.port}"

    def connect(self, database: str | None = None) -> pymysql.connections.Connection:
        """A raw autocommit connection as root."""
        return pymysql.connect(
            host="127.0.0.1",
            port=self.port,
            user="root",
            database=database,
            autocommit=True,
            connect_timeout=3,
        )

    def start(self, timeout: float = 60.0) -> None:
        assert self.mariadbd is not None
        log = self.base / "error.log"
        self.proc = subprocess.Popen(
            [
                self.mariadbd,
                "--no-defaults",
                f"--datadir={self.datadir}",
                f"--port={self.port}",
                "--bind-address=127.0.0.1",
                f"--socket={self.base / 'sock'}",
                f"--pid-file={self.base / 'pid'}",
                f"--log-error={log}",
                "--skip-name-resolve",
                "--skip-log-bin",
                *self._user,
                *SMALL,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise ServerUnavailable(f"mariadbd exited: {self.log()[-2000:]}")
            try:
                self.connect().close()
                return
            except pymysql.err.OperationalError:
                if time.monotonic() > deadline:
                    raise ServerUnavailable(
                        f"mariadbd did not accept connections in {timeout:g} s: {self.log()[-2000:]}"
                    ) from None
                time.sleep(0.1)

    def stop(self, timeout: float = 60.0) -> None:
        """A clean shutdown (SIGTERM): the server closes every client connection."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
            raise AssertionError(
                f"mariadbd did not stop on SIGTERM: {self.log()[-2000:]}"
            ) from None

    def log(self) -> str:
        path = self.base / "error.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def remove(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)
        shutil.rmtree(self.base, ignore_errors=True)
