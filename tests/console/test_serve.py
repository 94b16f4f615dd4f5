"""``jobtui serve``: the console in a real browser, and what the server refuses.

The browser tests run the real ``jobtui serve`` process on a free loopback
port against a real database, open its page in Debian's ``chromium``
(headless, driven over its DevTools protocol: tests/support/browser.py), wait for the
job table drawn in the page, press keys there and read the database. They are
skipped only when chromium is missing and CI is unset (in CI a missing
chromium fails them; ``.ci/run`` installs it).

The refusals (a non-loopback address, a bad port or public URL, a port in
use) need no browser: exit 2, one line saying what to do, nothing created.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from support.accounts import Server
from support.browser import Chromium, require_chromium
from support.procs import jobtui_command, wait_for

from jobtui.cli import main
from jobtui.cli.serve import is_loopback
from jobtui.core.model import Status, What
from jobtui.core.schedules import make_schedule
from jobtui.core.store import open_store

READY = "jobtui serve: the console for "


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def proc_cmdline(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:  # gone, or not ours to read
        return []
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


def proc_environ(pid: int) -> dict[str, str]:
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return {}
    pairs = (part.decode(errors="replace").partition("=") for part in raw.split(b"\0") if part)
    return {key: value for key, _, value in pairs}


def descendants(pid: int) -> list[int]:
    """Every live process below ``pid`` (its children, theirs, ...)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            # pid (comm) state ppid ...: comm may hold spaces and parentheses
            parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    found, frontier = [], [pid]
    while frontier:
        parent = frontier.pop()
        children = [child for child, p in parents.items() if p == parent]
        found += children
        frontier += children
    return found


def every_cmdline() -> Iterator[tuple[int, list[str]]]:
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            yield int(entry.name), proc_cmdline(int(entry.name))


class Served:
    """A real ``jobtui serve`` process on a free loopback port, its output in files."""

    def __init__(self, tmp_path: Path, args: list[str], env: dict[str, str]) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.out_path = tmp_path / "serve.out"
        self.err_path = tmp_path / "serve.err"
        with self.out_path.open("wb") as out, self.err_path.open("wb") as err:
            self.proc = subprocess.Popen(
                [*jobtui_command(), "serve", "--port", str(self.port), *args],
                stdout=out,
                stderr=err,
                stdin=subprocess.DEVNULL,
                env={**os.environ, "PYTHONUNBUFFERED": "1", "COLUMNS": "200", **env},
                start_new_session=True,
            )
        if not wait_for(lambda: READY in self.out() or self.proc.poll() is not None, 60, 0.1):
            raise AssertionError(f"jobtui serve did not start in 60 s:\n{self.output()}")
        assert self.proc.poll() is None, f"jobtui serve exited:\n{self.output()}"

    def out(self) -> str:
        return self.out_path.read_text(errors="replace")

    def output(self) -> str:
        return self.out() + self.err_path.read_text(errors="replace")

    def consoles(self) -> list[int]:
        """The ``jobtui console`` processes serving the open tabs."""
        return [pid for pid in descendants(self.proc.pid) if "console" in proc_cmdline(pid)[3:5]]

    def stop(self) -> int:
        """Ctrl+C, as an operator stops it; its exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        try:
            return self.proc.wait(30)
        except subprocess.TimeoutExpired:
            return -1

    def cleanup(self) -> None:
        if self.proc.poll() is None or descendants(self.proc.pid):
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)  # the group this test started
            except ProcessLookupError:
                pass
            self.proc.wait(10)


@contextmanager
def served(tmp_path: Path, args: list[str], env: dict[str, str] | None = None) -> Iterator[Served]:
    server = Served(tmp_path, args, env or {})
    try:
        yield server
    finally:
        server.cleanup()


def make_jobs(url: str, *names: str) -> None:
    store = open_store(url)
    try:
        for name in names:
            store.submit(name, What("sql", "SELECT 1"), make_schedule("every", every=3600))
    finally:
        store.close()


# ---------------------------------------------------------------------- in a browser


@pytest.mark.slow
async def test_browser_shows_the_jobs_and_a_key_pauses_one(tmp_path: Path) -> None:
    require_chromium()
    db = tmp_path / "browser.db"
    url = f"sqlite:///{db}"
    make_jobs(url, "alpha-report", "beta-cleanup")
    with served(tmp_path, ["--db", url, "--refresh", "0.5"], {"JOBTUI_DB": ""}) as server:
        async with Chromium(width=1280, height=800) as browser:
            await browser.open(server.url + "/")
            screen = await browser.wait_for_screen("alpha-report", "beta-cleanup")
            assert "ENABLED" in screen
            first, second = sorted(
                ("alpha-report", "beta-cleanup"), key=lambda name: screen.index(name)
            )
            # the cursor starts on the first row: one row down, then p
            await browser.press("ArrowDown")
            await browser.press("p")
            screen = await browser.wait_for_screen("PAUSED", timeout=30)
            row = next(line for line in screen.splitlines() if second in line)
            assert "PAUSED" in row, screen

            check = open_store(url)
            try:
                assert check.get(second).status is Status.PAUSED
                assert check.get(first).status is Status.ENABLED
            finally:
                check.close()

            # The tab's console got the database through its environment only.
            consoles = server.consoles()
            assert len(consoles) == 1, [proc_cmdline(p) for p in descendants(server.proc.pid)]
            cmdline = proc_cmdline(consoles[0])
            assert cmdline[2:] == [
                "jobtui",
                "console",
                "--runners",
                "0",
                "--refresh",
                "0.5",
                *cmdline[8:],
            ], cmdline
            assert not any(str(db) in part for part in cmdline), cmdline
            assert proc_environ(consoles[0]).get("JOBTUI_DB") == url

        # Ctrl+C stops the server and the consoles it started.
        assert server.stop() == 0, server.output()
        assert wait_for(lambda: not any(Path(f"/proc/{p}").exists() for p in consoles), 20)
    assert READY + url in server.out()


@pytest.mark.slow
@pytest.mark.mariadb
async def test_browser_on_mariadb_keeps_the_password_off_every_command_line(
    tmp_path: Path, server: Server
) -> None:
    require_chromium()
    password = server.accounts["alice"]
    url = server.url_for("alice")  # an operator account with a password in its URL
    alice = open_store(url)
    try:
        alice.submit("nightly-rollup", What("sql", "SELECT 1"), make_schedule("every", every=60))
    finally:
        alice.close()
    with served(tmp_path, [], {"JOBTUI_DB": url}) as web:
        async with Chromium(width=1280, height=800) as browser:
            await browser.open(web.url + "/")
            screen = await browser.wait_for_screen("nightly-rollup", "ENABLED")
            consoles = web.consoles()
            assert len(consoles) == 1
            assert proc_environ(consoles[0]).get("JOBTUI_DB") == url
            on_argv = [(pid, argv) for pid, argv in every_cmdline() if password in " ".join(argv)]
            assert on_argv == []
            assert password not in screen
            page = urllib.request.urlopen(web.url + "/", timeout=10).read().decode()
            assert password not in page
        assert web.stop() == 0, web.output()
    output = web.output()
    assert password not in output
    assert f"{server.names['alice']}:***@" in output  # the URL it serves, masked


# ---------------------------------------------------------------------- the server alone


def test_the_page_names_the_public_url_and_not_the_command(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'page.db'}"
    with served(tmp_path, ["--db", url, "--public-url", "http://localhost:1/jobs/"]) as server:
        page = urllib.request.urlopen(server.url + "/", timeout=10).read().decode()
        assert 'data-session-websocket-url="ws://localhost:1/jobs/ws"' in page
        assert "<div>jobtui</div>" in page  # the name shown while it connects
        assert "-m jobtui console" not in page  # not the command it runs
        assert server.stop() == 0
    assert "at http://localhost:1/jobs (listening on 127.0.0.1:" in server.out()


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "", "192.0.2.1", "[::]"])
def test_a_non_loopback_address_is_refused_with_a_way_to_protect_it(
    tmp_path: Path, host: str, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "refused.db"
    assert main(["--db", str(db), "serve", "--host", host]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    err = " ".join(captured.err.split())
    assert err.startswith("jobtui: error: refusing to serve the console on ")
    assert "no login" in err
    assert "SSH tunnel (ssh -L 8000:127.0.0.1:8000 THIS_HOST" in err
    assert "reverse proxy" in err and "asks for a login" in err
    assert "--allow-remote" in err
    assert not db.exists()  # refused before anything was created


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--host", "0.0.0.0", "--allow-remote"], "add --public-url http://NAME:8000"),
        (["--port", "0"], "invalid --port '0': expected a TCP port, a whole number 1-65535"),
        (["--port", "http"], "invalid --port 'http'"),
        (["--public-url", "ftp://x"], "invalid --public-url 'ftp://x'"),
        (["--public-url", "https://u:hunter2@x"], "invalid --public-url 'https://u:***@x'"),
        (["--host", "no-such-host.invalid"], "invalid --host 'no-such-host.invalid'"),
        (["--host", "a b"], "invalid --host 'a b'"),
        (["--read-only", "--runners", "2"], "cannot host runners"),
    ],
)
def test_bad_serve_options_exit_2_and_create_nothing(
    tmp_path: Path, args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "bad.db"
    assert main(["--db", str(db), "serve", *args]) == 2
    err = capsys.readouterr().err
    assert message in err
    assert "hunter2" not in err
    assert not db.exists()


def test_a_port_in_use_exits_2_and_announces_nothing(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [*jobtui_command(), "--db", str(tmp_path / "p.db"), "serve", "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
    assert done.returncode == 2, done
    assert READY not in done.stdout
    assert f"cannot listen on 127.0.0.1:{port}" in done.stderr
    assert "choose another --port" in done.stderr


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.8.9.10", True),
        ("::1", True),
        ("[::1]", True),
        ("localhost", True),
        ("0.0.0.0", False),
        ("::", False),
        ("", False),
        ("192.0.2.1", False),
        ("2001:db8::1", False),
    ],
)
def test_is_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_serve_is_listed_in_the_help() -> None:
    done = subprocess.run(
        [*jobtui_command(), "serve", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "COLUMNS": "400"},
    )
    assert done.returncode == 0
    flat = " ".join(done.stdout.split())
    for option in ("--host", "--port", "--public-url", "--allow-remote", "--read-only"):
        assert option in flat
    assert "Listens on 127.0.0.1 unless --allow-remote" in flat
