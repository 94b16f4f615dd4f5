"""End to end: the real ``jobtui`` process in a real terminal (tmux), driven by keys.

Open the console on a SQLite file, pause a job with ``p``, see PAUSED on the
screen and in the database, quit with ``q``. Skipped only when tmux is
missing and CI is unset (in CI a missing tmux fails the test).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from jobtui.core.model import Status, What
from jobtui.core.schedules import make_schedule
from jobtui.core.store import open_store

TMUX = shutil.which("tmux")

pytestmark = pytest.mark.slow


def _jobtui() -> list[str]:
    """The installed console script next to this Python, else ``python -m jobtui``."""
    script = Path(sys.executable).with_name("jobtui")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "jobtui"]


def _capture(session: str) -> str:
    return subprocess.run(
        ["tmux", "capture-pane", "-p", "-t", session],
        capture_output=True,
        text=True,
        check=False,
    ).stdout


def _wait_for_screen(session: str, text: str, timeout: float = 30.0) -> str:
    deadline = time.monotonic() + timeout
    screen = ""
    while time.monotonic() < deadline:
        screen = _capture(session)
        if text in screen:
            return screen
        time.sleep(0.2)
    raise AssertionError(f"{text!r} did not appear on the screen:\n{screen}")


def test_open_pause_see_paused_quit(tmp_path: Path) -> None:
    if TMUX is None:
        if os.environ.get("CI"):
            pytest.fail("CI is set, so the tmux end-to-end test must run: install tmux")
        pytest.skip("tmux is not installed")
    db = tmp_path / "e2e.db"
    url = f"sqlite:///{db}"
    store = open_store(url)
    store.submit("e2e-job", What("sql", "SELECT 1"), make_schedule("every", every=3600))
    store.close()

    session = f"jobtui-e2e-{uuid.uuid4().hex[:8]}"
    command = " ".join(
        [*(_quote(part) for part in _jobtui()), "--db", _quote(url), "console", "--refresh", "0.5"]
    )
    env_prefix = f"cd {_quote(str(tmp_path))} && TERM=xterm-256color "
    subprocess.run(
        ["tmux", "new-session", "-d", "-s", session, "-x", "120", "-y", "35", env_prefix + command],
        check=True,
    )
    try:
        screen = _wait_for_screen(session, "e2e-job")
        assert "ENABLED" in screen
        subprocess.run(["tmux", "send-keys", "-t", session, "p"], check=True)
        screen = _wait_for_screen(session, "PAUSED")
        assert "e2e-job" in screen
        check = open_store(url)
        assert check.get("e2e-job").status is Status.PAUSED
        check.close()
        subprocess.run(["tmux", "send-keys", "-t", session, "q"], check=True)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            alive = subprocess.run(
                ["tmux", "has-session", "-t", session], capture_output=True, check=False
            )
            if alive.returncode != 0:
                break  # the process exited and took the session with it
            time.sleep(0.2)
        else:
            raise AssertionError(f"jobtui did not quit on q:\n{_capture(session)}")
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True, check=False)


def _quote(text: str) -> str:
    import shlex

    return shlex.quote(text)
