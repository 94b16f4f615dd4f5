"""Regenerate screenshots/browser.png: the console served by `jobtui serve`, in a browser.

    python screenshots/browser.py [--out screenshots] [--seconds 8]

Makes a fresh demo database in a temporary directory, runs the real
``jobtui serve --runners 3`` on a free loopback port, opens its page in
Debian's headless ``chromium`` (driven over its DevTools protocol by
tests/support/browser.py), lets the jobs cycle, presses a key so the page has the
focus (the footer shows its keys then), and saves what the page shows as a
PNG. Nothing is drawn by hand; run it again after a visual change.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from support.browser import Chromium  # noqa: E402

from jobtui.console.demo import create_demo  # noqa: E402

SIZE = (1280, 760)
SERVE = [sys.executable, "-m", "jobtui"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def shoot(out: Path, seconds: float) -> Path:
    with tempfile.TemporaryDirectory(prefix="jobtui-browser-shot-") as tmp:
        url = create_demo(str(Path(tmp) / "demo.db"))
        port = free_port()
        log = Path(tmp) / "serve.out"
        with log.open("wb") as sink:
            proc = subprocess.Popen(
                [*SERVE, "--db", url, "serve", "--runners", "3", "--port", str(port)],
                stdout=sink,
                stderr=subprocess.STDOUT,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
                start_new_session=True,
            )
        try:
            deadline = time.monotonic() + 60
            while b"jobtui serve: the console for" not in log.read_bytes():
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(f"jobtui serve did not start:\n{log.read_text()}")
                await asyncio.sleep(0.1)
            async with Chromium(width=SIZE[0], height=SIZE[1]) as browser:
                await browser.open(f"http://127.0.0.1:{port}/")
                await browser.wait_for_screen("long-etl")
                await asyncio.sleep(seconds)
                await browser.press("ArrowDown")  # the page has the focus: the footer shows
                await asyncio.sleep(1.5)
                return await browser.screenshot(out / "browser.png")
        finally:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent))
    parser.add_argument("--seconds", type=float, default=8.0)
    args = parser.parse_args()
    print(asyncio.run(shoot(Path(args.out), args.seconds)))


if __name__ == "__main__":
    main()
