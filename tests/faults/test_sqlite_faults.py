"""SQLite faults: a read-only file or directory and a full disk.

The command line must say so in one line (exit 1: the database cannot be used
as asked) and the database must come out intact (``PRAGMA integrity_check``
is ``ok``, every job still there). As root (this sandbox, CI containers) the
faults are real file systems: a small tmpfs for a full disk, remounted
read-only for a read-only database. Without root, chmod makes the file and
directory read-only, and ``PRAGMA max_page_count`` fills the database.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event

from jobtui.core.errors import JobtuiError
from jobtui.core.model import What
from jobtui.core.schedules import make_schedule
from jobtui.core.store import open_store

ROOT = os.geteuid() == 0


def jobtui(url: str, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("JOBTUI_")}
    return subprocess.run(
        [sys.executable, "-m", "jobtui", "--db", url, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        stdin=subprocess.DEVNULL,
    )


def one_line_error(proc: subprocess.CompletedProcess[str], code: int, *phrases: str) -> str:
    assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("jobtui: error: "), proc.stderr
    assert any(p in lines[0] for p in phrases), lines[0]
    return lines[0]


def populate(url: str, jobs: int = 5) -> list[str]:
    store = open_store(url)
    try:
        for i in range(jobs):
            store.submit(f"j{i}", What("sql", "SELECT 1"), make_schedule("every", every=60 + i))
        store.pause("j1")
        return sorted(j.name for j in store.list_jobs())
    finally:
        store.close()


def intact(path: Path, names: list[str]) -> None:
    """integrity_check ok, and every job still readable through jobtui."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert sorted(r[0] for r in conn.execute("SELECT name FROM jobtui_job")) == names
    finally:
        conn.close()


def mount_tmpfs(where: Path, size: str) -> bool:
    where.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
        capture_output=True,
        text=True,
    )
    return proc.returncode == 0


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Path | None]:
    """A 1 MiB tmpfs when we may mount one (root), else None."""
    where = tmp_path / "mnt"
    mounted = ROOT and mount_tmpfs(where, "1m")
    yield where if mounted else None
    if mounted:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


# ---------------------------------------------------------------------- read-only


@contextlib.contextmanager
def read_only(directory: Path, mounted: bool) -> Iterator[None]:
    """The directory (and the files in it) read-only for this process's children."""
    if mounted:
        subprocess.run(["mount", "-o", "remount,ro", str(directory)], check=True)
        try:
            yield
        finally:
            subprocess.run(["mount", "-o", "remount,rw", str(directory)], check=True)
        return
    modes = {p: p.stat().st_mode for p in [directory, *directory.iterdir()]}
    for p in directory.iterdir():
        p.chmod(stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
    directory.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        yield
    finally:
        for p, mode in modes.items():
            p.chmod(mode)


WRITES = [
    ["submit", "new", "--sql", "SELECT 1", "--every", "60"],
    ["pause", "j0"],
    ["change", "j2", "--every", "120"],
    ["remove", "j3"],
    ["init"],
    ["prune"],
]


def test_read_only_database(tmp_path: Path, tmpfs: Path | None) -> None:
    directory = tmpfs or (tmp_path / "ro")
    directory.mkdir(exist_ok=True)
    if tmpfs is None and ROOT:
        pytest.skip("root without mount(8): chmod does not stop root")
    db = directory / "jobs.db"
    url = f"sqlite:///{db}"
    names = populate(url)
    with read_only(directory, tmpfs is not None):
        for args in WRITES:
            proc = jobtui(url, *args)
            line = one_line_error(proc, 1, "read-only", "readonly", "unable to open")
            assert str(directory) in line or "database" in line
        # a worker cannot register: it stops at once with the same kind of error
        proc = jobtui(url, "worker", "--threads", "1", timeout=60)
        one_line_error(proc, 1, "read-only", "readonly", "unable to open")
    intact(db, names)
    # and once writable again, everything works
    assert jobtui(url, "pause", "j0").returncode == 0
    intact(db, names)


# ---------------------------------------------------------------------- full disk


def fill(directory: Path) -> Path:
    """Fill the file system under ``directory`` to the last byte."""
    filler = directory / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for size in (65536, 4096, 1):
            with contextlib.suppress(OSError):
                while os.write(fd, b"\0" * size):
                    pass
    finally:
        os.close(fd)
    return filler


def test_full_disk(tmp_path: Path, tmpfs: Path | None) -> None:
    if tmpfs is None:
        pytest.skip("no tmpfs to fill (not root): test_full_database covers SQLITE_FULL")
    db = tmpfs / "jobs.db"
    url = f"sqlite:///{db}"
    names = populate(url)
    filler = fill(tmpfs)
    big = "x" * 2000
    failures = 0
    for i in range(40):  # until the WAL, then the file, has no room left
        proc = jobtui(
            url, "submit", f"n{i:02d}", "--sql", "SELECT 1", "--every", "60", "--description", big
        )
        if proc.returncode == 0:
            names.append(f"n{i:02d}")
            continue
        one_line_error(proc, 1, "disk is full", "disk I/O", "unable to open")
        failures += 1
        if failures >= 3:
            break
    assert failures >= 3, "the disk never filled up"
    # reading: SQLite may need room for its -shm file even to read a WAL database,
    # so on a disk full to the last byte a read may be refused too (cleanly)
    proc = jobtui(url, "list")
    if proc.returncode == 0:
        assert "j0" in proc.stdout
    else:
        one_line_error(proc, 1, "disk is full", "disk I/O")
    filler.unlink()
    intact(db, sorted(names))
    proc = jobtui(url, "submit", "after", "--sql", "SELECT 1", "--every", "60")
    assert proc.returncode == 0, proc.stderr
    intact(db, sorted([*names, "after"]))


def test_full_database(sqlite_url: str, tmp_path: Path) -> None:
    """SQLITE_FULL through the store API, where SQLite's page limit stands for the disk."""
    names = populate(sqlite_url)
    store = open_store(sqlite_url)

    @event.listens_for(store.engine, "connect")
    def _limit(dbapi_conn: Any, _record: Any) -> None:
        pages = dbapi_conn.execute("PRAGMA page_count").fetchone()[0]
        dbapi_conn.execute(f"PRAGMA max_page_count = {pages + 2}")

    store.engine.dispose()  # new connections get the limit
    try:
        added = 0
        with pytest.raises(JobtuiError) as info:
            for i in range(500):
                store.submit(
                    f"n{i:03d}",
                    What("sql", "SELECT 1"),
                    make_schedule("every", every=60),
                    description="x" * 2000,
                )
                added += 1
        assert info.value.exit_code == 1
        assert "full" in str(info.value) and "\n" not in str(info.value)
        names += [f"n{i:03d}" for i in range(added)]
        assert sorted(j.name for j in store.list_jobs()) == sorted(names)
    finally:
        store.close()
    intact(Path(sqlite_url.removeprefix("sqlite:///")), sorted(names))
